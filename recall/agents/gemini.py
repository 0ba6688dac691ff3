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
    command_only,
    drop_if_created_and_empty,
    early_start,
    early_start_removed,
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
EARLY_DESCRIPTION = "recall: starts its daemon as the session starts (prints nothing)"


# --- Gemini CLI --------------------------------------------------------------------------------


def install(project: bool, cwd: Path | None = None, form: str | None = None,
            track_reads: bool = False) -> list[str]:
    command_only(NAME, form, track_reads)
    path = gemini_settings(project, cwd)
    settings = load_settings(path)
    with editing(path):
        result = add_hook(settings, gemini_entry(), event="BeforeAgent")
        early = early_start(settings, path, gemini_entry(EARLY_DESCRIPTION))
    done = [f"{result}: the recall hook (BeforeAgent, --agent gemini) in {path}"]
    if early:
        done.append(early)
    hooks_config = settings.setdefault("hooksConfig", {})
    if isinstance(hooks_config, dict) and "enabled" not in hooks_config:
        hooks_config["enabled"] = True
        state_note(path, "hooksConfig.enabled", True)
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
    path = gemini_settings(project, cwd)
    if not path.exists():
        return [f"no recall hook in {path}"]
    settings = load_settings(path)
    with editing(path):
        removed = remove_hook(settings, event="BeforeAgent")
        early = early_start_removed(settings, path)
    done = [f"removed the recall hook from {path}" if removed else f"no recall hook in {path}"]
    if early:
        done.append(early)
        removed += 1
    hooks_config = settings.get("hooksConfig")
    if we_added(path, "hooksConfig.enabled") and other_hooks(settings):
        state_note(path, "hooksConfig.enabled", False)  # the user's hooks' switch now
        done.append(f"kept hooksConfig.enabled in {path}: it holds other hooks, which need it")
    elif we_added(path, "hooksConfig.enabled") and isinstance(hooks_config, dict) and "enabled" in hooks_config:
        del hooks_config["enabled"]
        if not hooks_config:
            del settings["hooksConfig"]
        state_note(path, "hooksConfig.enabled", False)
        done.append(f"removed hooksConfig.enabled (added by recall install) from {path}")
        removed += 1
    if removed:
        write_settings(path, settings)
        drop_if_created_and_empty(path)
    return done
