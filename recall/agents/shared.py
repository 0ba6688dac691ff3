"""What every agent's install shares: the entries it writes (the hook command, the MCP server,
the read tracker), where each agent keeps its settings, and the files and folders install made,
noted through ``recall.agents.records`` (which keeps ``installed.json``: what install added, so
uninstall removes exactly that)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from recall.agents.install import (
    CONTEXT_TOOL,
    HOOK_MODULE,
    HOOK_TIMEOUT_S,
    SAFE_FLAGS,
    SERVER_NAME,
    InstallError,
    add_hook,
    guarded,
    other_hooks,
    pinned_home,
    program,
    remove_hook,
)
from recall.agents.records import noted, state_note, we_added
from recall.agents.wire import SESSION_START
from recall.privacy.paths import (
    claude_config_dir,
    expand_user,
    git_toplevel,
    home_folder,
    project_root,
    read_text,
)

FORMS = ("mcp_tool", "command")
MCP_MODULE = "recall.mcp"
TRACK_MODULE = "recall.agents.track"
# Claude Code added the mcp_tool hook type in v2.1.118 (its changelog, 2026-04-23).
MCP_TOOL_SINCE = (2, 1, 118)
GEMINI_TIMEOUT_MS = HOOK_TIMEOUT_S * 1000  # Gemini CLI counts its hook timeout in milliseconds


def command_only(agent: str, form: str | None, track_reads: bool) -> None:
    """An agent whose only route is the command hook: ``--form mcp_tool`` and ``--track-reads`` are refused."""
    if form == "mcp_tool":
        raise InstallError(f"{agent}: only the command form is available (--form command)")
    if track_reads:
        raise InstallError(f"{agent}: --track-reads is for Claude Code's Read tool only")


def python() -> str:
    return os.path.abspath(sys.executable)  # not resolved: a venv's python is a symlink


def root_of(cwd: Path | None) -> Path:
    here = Path(cwd or Path.cwd())
    return git_toplevel(here) or project_root(here)


# --- the entries ----------------------------------------------------------------------------


def mcp_tool_entry(server: str = SERVER_NAME) -> dict[str, Any]:
    """Claude Code's no-spawn hook: a tool call on the already connected recall server."""
    return {"type": "mcp_tool", "server": server, "tool": CONTEXT_TOOL,
            "input": {"prompt": "${prompt}", "cwd": "${cwd}", "session_id": "${session_id}"},
            "timeout": HOOK_TIMEOUT_S}


def mcp_server_args() -> list[str]:
    """The MCP server's arguments after its python: the flags, the module, the pinned home."""
    return [*SAFE_FLAGS, "-m", MCP_MODULE, *pinned_home()]


def mcp_server_entry() -> dict[str, Any]:
    return {"type": "stdio", "command": python(), "args": mcp_server_args()}


def hook_command(agent: str) -> str:
    """The shell command line Codex and Gemini run (they take a string, not an argv), guarded."""
    return guarded(program(HOOK_MODULE, agent))


def codex_entry() -> dict[str, Any]:
    return {"type": "command", "command": hook_command("codex"), "timeout": HOOK_TIMEOUT_S}


def gemini_entry(description: str = "recall: past notes related to this message (or nothing)") -> dict[str, Any]:
    return {"type": "command", "name": "recall", "command": hook_command("gemini"),
            "timeout": GEMINI_TIMEOUT_MS, "description": description}


# --- the daemon's early start (recall.agents.early) ---------------------------------------------

EARLY_START = f"the daemon's early start ({SESSION_START})"


def early_start(settings: dict[str, Any], path: Path, entry: dict[str, Any] | None) -> str | None:
    """The hook registered under the session's start too (``wire.SESSION_START``), where the route
    is a command hook: it starts a missing daemon then, so the first message is answered warm
    (``recall.agents.hook.session_started``). ``entry`` None (the mcp_tool form, whose MCP server
    starts the daemon as the session starts it): the one an earlier install added taken out. The
    line install says, or None."""
    if entry is not None:
        return f"{add_hook(settings, entry, event=SESSION_START)}: {EARLY_START} in {path}"
    if remove_hook(settings, event=SESSION_START):
        return f"removed {EARLY_START} from {path}: the MCP server starts it as the session starts"
    return None


def early_start_removed(settings: dict[str, Any], path: Path) -> str | None:
    """Uninstall's part: our session-start entry taken out (the user's own stay), and its line."""
    return f"removed {EARLY_START} from {path}" if remove_hook(settings, event=SESSION_START) else None


def track_entry() -> dict[str, Any]:
    return {"type": "command", "command": guarded(program(TRACK_MODULE)), "timeout": HOOK_TIMEOUT_S}


# --- where each agent keeps them ---------------------------------------------------------------


def claude_settings(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".claude" / "settings.json" if project else claude_config_dir() / "settings.json"


def claude_plugin_enabled(cwd: Path | None = None) -> Path | None:
    """The Claude Code settings file that enables the recall plugin (``enabledPlugins``
    ``"recall@<marketplace>": true``), None when none does: the plugin has its own hook and
    server, and a second install handed every headline over twice (an outside tester's AF04)."""
    root = root_of(cwd)
    for path in (claude_config_dir() / "settings.json", root / ".claude" / "settings.json",
                 root / ".claude" / "settings.local.json"):
        try:
            enabled = json.loads(read_text(path)).get("enabledPlugins")
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if isinstance(enabled, dict) and any(str(k).split("@")[0] == "recall" and v is True
                                             for k, v in enabled.items()):
            return path
    return None


def claude_state_file() -> Path:
    """Where `claude mcp add --scope user` keeps user MCP servers."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return expand_user(env, "CLAUDE_CONFIG_DIR") / ".claude.json" if env else home_folder() / ".claude.json"


def codex_home() -> Path:
    env = os.environ.get("CODEX_HOME")
    return expand_user(env, "CODEX_HOME") if env else home_folder() / ".codex"


def codex_dir(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".codex" if project else codex_home()


def gemini_settings(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".gemini" / "settings.json" if project else home_folder() / ".gemini" / "settings.json"


# --- what install added (flags it set that the user had not) -----------------------------------


def note_created(path: Path) -> None:
    """Remember that install created ``path`` and the folders it goes in (uninstall deletes
    them when they are left empty)."""
    from recall.agents.writes import exists

    if not exists(path):
        state_note(path, "file", True)
        note_created_dirs(path.parent)


def note_created_dirs(folder: Path) -> None:
    """Remember the highest of ``folder`` and its parents that install is about to create
    (``drop_created_dirs``' limit): uninstall left ``~/.codex`` and a project's ``.claude/``
    behind, empty (stop 48, an outside tester's W06)."""
    if folder.exists():
        return
    top = folder
    while not top.parent.exists():
        top = top.parent
    state_note(top, "dir", True)


def drop_created_dirs(folder: Path) -> None:
    """Remove ``folder`` and its parents up to the highest that install created, while empty
    (once the edit's files are written: ``writes.later``)."""
    from recall.agents.writes import later

    later(lambda: _drop_dirs(folder))


def _drop_dirs(folder: Path) -> None:
    chain = [folder, *folder.parents]
    top = next((d for d in chain if we_added(d, "dir")), None)
    if top is None:
        return
    for d in chain[: chain.index(top) + 1]:
        try:
            d.rmdir()
        except OSError:
            return  # something else is in it now: it stays, and so does the note
    state_note(top, "dir", False)


def drop_if_created_and_empty(path: Path) -> bool:
    if not we_added(path, "file"):
        return False
    from recall.agents.writes import current_text, stage

    state_note(path, "file", False)
    try:
        text = (current_text(path) or "").strip()
    except (OSError, ValueError):
        return False
    if text in ("", "{}"):
        stage(path, None)
        drop_created_dirs(path.parent)
        return True
    return False


def write_text(path: Path, text: str) -> None:
    """Write an agent's config file as ``settings_file.replace_file`` does (with the edit's other
    files, all or none: ``recall.agents.writes``)."""
    from recall.agents.settings_file import replace_file

    replace_file(path, text.encode("utf-8"))


# --- a flag recall set beside the user's own hooks -----------------------------------------------


def beside(flag: str, settings: dict[str, Any]) -> str:
    """The note that ``flag`` was set while ``settings`` held hooks of the user's own, as they
    were then (a fingerprint): they ran without it, so uninstall takes it out again while they
    are the same (Codex 0.171.0 and Gemini CLI 0.61 run hooks by default); "" when none."""
    import copy
    import hashlib

    theirs = copy.deepcopy(settings)
    hooks = theirs.get("hooks")
    for event in list(hooks) if isinstance(hooks, dict) else []:
        remove_hook(theirs, event=event)
    if not other_hooks(theirs):
        return ""
    kept = {k: v for k, v in theirs["hooks"].items() if v}
    return f"{flag} beside {hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]}"


def forget_beside(path: Path, flag: str) -> None:
    for key in noted(path, f"{flag} beside "):
        state_note(path, key, False)
