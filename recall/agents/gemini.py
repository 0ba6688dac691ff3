"""Gemini CLI: a BeforeAgent command hook in settings.json, and ``hooksConfig.enabled``."""

from __future__ import annotations

from pathlib import Path

from recall.agents.install import (
    add_hook,
    editing,
    load_settings,
    other_hooks,
    remove_hook,
)
from recall.agents.records import state_note, we_added
from recall.agents.settings_file import write_settings
from recall.agents.shared import (
    beside,
    command_only,
    drop_if_created_and_empty,
    early_start,
    early_start_removed,
    forget_beside,
    gemini_entry,
    gemini_settings,
    note_created,
)
from recall.agents.wire import additional_context, prompt_event_reader

# --- on the wire --------------------------------------------------------------------------------
NAME = "gemini"
EVENT = "BeforeAgent"
# stdout must be JSON only; hookSpecificOutput.additionalContext is appended to that turn's prompt
# (google-gemini/gemini-cli docs/hooks/reference.md); Claude Code's cap is kept
MAX_CHARS = 10_000
FORMS = ("command",)
read_event = prompt_event_reader(EVENT)  # BeforeAgent: {prompt, cwd, session_id, ...}
output, envelope = additional_context(EVENT, MAX_CHARS)  # the line the hook prints; its bytes
FLAG = "hooksConfig.enabled"  # what Gemini CLI runs hooks by (true by default in 0.61's schema)
EARLY_DESCRIPTION = "recall: starts its daemon as the session starts (prints nothing)"


# --- Gemini CLI --------------------------------------------------------------------------------


def install(project: bool, cwd: Path | None = None, form: str | None = None,
            track_reads: bool = False) -> list[str]:
    command_only(NAME, form, track_reads)
    path = gemini_settings(project, cwd)
    settings = load_settings(path)
    theirs = beside(FLAG, settings)
    with editing(path):
        result = add_hook(settings, gemini_entry(), event="BeforeAgent")
        early = early_start(settings, path, gemini_entry(EARLY_DESCRIPTION))
    done = [f"{result}: the recall hook (BeforeAgent, --agent gemini) in {path}"]
    if early:
        done.append(early)
    hooks_config = settings.setdefault("hooksConfig", {})
    if isinstance(hooks_config, dict) and "enabled" not in hooks_config:
        hooks_config["enabled"] = True
        state_note(path, FLAG, True)
        if theirs:  # hooks of yours ran without it: uninstall takes it out while they are the same
            state_note(path, theirs, True)
        done.append(f"set hooksConfig.enabled = true in {path}")
    elif isinstance(hooks_config, dict) and hooks_config.get("enabled") is False:
        done.append(f"warning: hooksConfig.enabled = false in {path}: Gemini CLI runs no hook, recall's "
                    "included; set it to true there for recall to run")
    elif not isinstance(hooks_config, dict):
        done.append(f"warning: hooksConfig is not an object in {path}: Gemini CLI runs hooks only with "
                    '"hooksConfig": {"enabled": true}; write that there for recall to run')
    note_created(path)
    write_settings(path, settings)
    if project:
        done.append("Gemini CLI asks you to trust a project's hooks when it starts there: accept recall's")
    return done


def uninstall(project: bool, cwd: Path | None = None) -> list[str]:
    from recall.agents.writes import exists

    path = gemini_settings(project, cwd)
    if not exists(path):
        return [f"no recall hook in {path}"]
    settings = load_settings(path)
    with editing(path):
        removed = remove_hook(settings, event="BeforeAgent")
        early = early_start_removed(settings, path)
    done = [f"removed the recall hook from {path}" if removed else f"no recall hook in {path}"]
    if early:
        done.append(early)
    switch = _switch_off(path, settings, ours=bool(removed or early))
    done.extend(switch)
    if removed or early or any(line.startswith("removed") for line in switch):
        write_settings(path, settings)
        drop_if_created_and_empty(path)
    return done


def _switch_off(path: Path, settings: dict, ours: bool) -> list[str]:
    """``hooksConfig.enabled`` taken out where recall set it: only while recall's hook is in the
    file (``ours``; without it the note is of an earlier life of the file, an install under
    another RECALL_HOME, and the flag there now is the user's: an outside tester's D2), and kept
    for hooks of the user's added since install (the ones there before ran without it:
    ``records.beside``)."""
    if not we_added(path, FLAG):
        return []
    hooks_config = settings.get("hooksConfig")
    line = ""
    if ours and other_hooks(settings) and not we_added(path, beside(FLAG, settings)):
        line = f"kept hooksConfig.enabled in {path}: it holds hooks added since install, which may need it"
    elif ours and isinstance(hooks_config, dict) and hooks_config.get("enabled") is True:
        del hooks_config["enabled"]
        if not hooks_config:
            del settings["hooksConfig"]
        line = f"removed hooksConfig.enabled (added by recall install) from {path}"
    state_note(path, FLAG, False)
    forget_beside(path, FLAG)
    return [line] if line else []
