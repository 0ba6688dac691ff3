"""Claude Code: the mcp_tool hook (no process per message) or the command hook, and the MCP server entry."""

from __future__ import annotations

import os
import re
from pathlib import Path

from recall.agents.install import (
    InstallError,
    add_hook,
    editing,
    hook_entry,
    load_settings,
    remove_hook,
    runs_module,
)
from recall.agents.records import state_note, we_added
from recall.agents.settings_file import write_settings
from recall.agents.shared import (
    FORMS as ALL_FORMS,
)
from recall.agents.shared import (
    MCP_MODULE,
    MCP_TOOL_SINCE,
    SERVER_NAME,
    TRACK_MODULE,
    claude_plugin_enabled,
    claude_settings,
    claude_state_file,
    drop_if_created_and_empty,
    early_start,
    early_start_removed,
    mcp_server_entry,
    mcp_tool_entry,
    note_created,
    root_of,
    track_entry,
)
from recall.agents.wire import Message, additional_context, read_prompt_event

# --- on the wire --------------------------------------------------------------------------------
NAME = "claude"
EVENT = "UserPromptSubmit"
# additionalContext over 10,000 characters becomes a file preview
MAX_CHARS = 10_000
FORMS = ALL_FORMS
def read_event(event: object) -> Message | None:
    """``{prompt, cwd, session_id, ...}``, searched in the session's project: the folder
    Claude Code gives its hooks as ``CLAUDE_PROJECT_DIR`` (its memory is that project's wherever
    the shell has gone; the MCP server reads the same). After `cd src/lib` in a project outside
    git, the shell's folder named no project and its notes were never handed over (stop 49, an
    outside tester's AA09)."""
    message = read_prompt_event(event, EVENT)
    project = os.environ.get("CLAUDE_PROJECT_DIR", "")
    if message is None or not os.path.isabs(project):
        return message
    return message._replace(cwd=project)
output, envelope = additional_context(EVENT, MAX_CHARS)  # the line the hook prints; its bytes


# --- Claude Code -------------------------------------------------------------------------------


def claude_version() -> tuple[int, ...] | None:
    """``claude --version`` as numbers, or None when the CLI is not on PATH or says nothing usable."""
    import subprocess

    try:
        out = subprocess.run(["claude", "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", out.stdout)
    return tuple(int(x) for x in m.groups()) if m else None


def mcp_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def pick_claude_form(requested: str | None) -> tuple[str, str, str]:
    """(form, why, unchecked): mcp_tool where this machine supports it, else the command hook;
    ``unchecked``: why Claude Code's version could not be checked for that choice (else "")."""
    if requested:
        return requested, "as asked (--form)", ""
    if not mcp_importable():
        return "command", "the MCP SDK is not installed here (pip install 'recall-memory[mcp]')", ""
    version = claude_version()
    since = ".".join(map(str, MCP_TOOL_SINCE))
    if version is not None and version < MCP_TOOL_SINCE:
        return "command", f"Claude Code {'.'.join(map(str, version))} predates mcp_tool hooks ({since})", ""
    if version is None:
        import shutil

        unread = "`claude` is not on PATH" if shutil.which("claude") is None else "`claude --version` named none"
        return "mcp_tool", "no process per message", unread
    return "mcp_tool", "no process per message", ""


def _is_our_server(entry: object) -> bool:
    """A server that runs recall's MCP module (``claude mcp add ... -m recall.mcp`` too)."""
    args = entry.get("args") if isinstance(entry, dict) else None
    return isinstance(args, list) and any(args[i:i + 2] == ["-m", MCP_MODULE] for i in range(len(args)))


def _as_installed(entry: object) -> bool:
    """Shaped as a ``recall install`` writes it (``mcp_server_entry``, whichever python, with the
    flags of this release or an older one: ``runs_module``). Only such an entry that install
    recorded as its own is replaced or removed: one of yours (``claude mcp add``: an ``env``
    block; or one install did not record) stays as it is (AF01)."""
    return (isinstance(entry, dict) and set(entry) == {"type", "command", "args"} and entry["type"] == "stdio"
            and isinstance(entry["command"], str) and runs_module(entry["args"], MCP_MODULE))


def ours_as_installed(path: Path, entry: object) -> bool:
    """An MCP server entry in ``path`` that a ``recall install`` wrote and recorded (this release's
    or an older one's): install updates it, uninstall removes it."""
    return _as_installed(entry) and we_added(path, "mcpServers.recall")


def _set_server(path: Path) -> str:
    data = load_settings(path)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: 'mcpServers' is not an object; fix or move it first")
    current = servers.get(SERVER_NAME)
    if current is not None and not _is_our_server(current):
        raise InstallError(f"{path}: an MCP server named {SERVER_NAME!r} exists and is not recall's; "
                           f"rename it or use --form command")
    entry = mcp_server_entry()
    if current == entry:
        return "unchanged"
    if current is not None and not ours_as_installed(path, current):
        return "kept (yours, as it is)"  # its interpreter, its env: the hook calls it, uninstall leaves it
    servers[SERVER_NAME] = entry
    note_created(path)
    write_settings(path, data)
    state_note(path, "mcpServers.recall", True)  # once written: a write that failed added nothing (AF07)
    return "updated" if current else "added"


def _drop_server(path: Path) -> bool:
    from recall.agents.writes import exists

    if not exists(path):
        return False
    data = load_settings(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not ours_as_installed(path, servers.get(SERVER_NAME)):
        return False  # one you changed or registered yourself stays
    state_note(path, "mcpServers.recall", False)
    del servers[SERVER_NAME]
    if not servers:
        del data["mcpServers"]
    write_settings(path, data)
    drop_if_created_and_empty(path)
    return True


def install(project: bool, cwd: Path | None = None, form: str | None = None,
            track_reads: bool = False) -> list[str]:
    form, why, unchecked = pick_claude_form(form)
    path = claude_settings(project, cwd)
    done = []
    # The settings are read and edited first: a file recall cannot edit is refused before any
    # other file (the MCP server's) is written, so a failed install leaves nothing behind.
    settings = load_settings(path)
    if (plugin := claude_plugin_enabled(cwd)) is not None:  # its hook and server are there: not twice
        if not track_reads:
            return [f"skipped: the recall plugin, enabled in {plugin}, has its own hook and MCP server "
                    "(a second hook would hand every headline over twice)"]
        with editing(path):
            tracked = add_hook(settings, track_entry(), event="PostToolUse", module=TRACK_MODULE, matcher="Read")
        note_created(path)
        write_settings(path, settings)
        return [f"{tracked}: the read tracker (PostToolUse on Read) in {path}",
                f"skipped: the prompt hook and MCP server (the recall plugin, enabled in {plugin}, has its own)"]
    with editing(path):
        approve = form == "mcp_tool" and project
        if approve:
            approved = settings.setdefault("enabledMcpjsonServers", [])
            approve = isinstance(approved, list) and SERVER_NAME not in approved
            if approve:
                approved.append(SERVER_NAME)
        result = add_hook(settings, mcp_tool_entry() if form == "mcp_tool" else hook_entry())
        early = early_start(settings, path, hook_entry() if form == "command" else None)
        tracked = add_hook(settings, track_entry(), event="PostToolUse", module=TRACK_MODULE,
                           matcher="Read") if track_reads else ""
    if form == "mcp_tool":
        server_file = root_of(cwd) / ".mcp.json" if project else claude_state_file()
        done.append(f"{_set_server(server_file)}: the recall MCP server in {server_file}")
    if approve:
        state_note(path, "enabledMcpjsonServers.recall", True)
    done.append(f"{result}: the recall hook ({form} form: {why}) in {path}")
    if early:
        done.append(early)
    if unchecked:  # one line: the choice made blind, and the other one
        since = ".".join(map(str, MCP_TOOL_SINCE))
        done.insert(0, f"note: Claude Code's version could not be checked ({unchecked}): the mcp_tool hook was chosen, "
                    f"which Claude Code older than {since} ignores; there, run `recall install"
                    f"{' --project' if project else ''} --form command`")
    if track_reads:
        done.append(f"{tracked}: the read tracker (PostToolUse on Read) in {path}")
    note_created(path)
    write_settings(path, settings)
    return done


def uninstall(project: bool, cwd: Path | None = None) -> list[str]:
    from recall.agents.writes import exists

    path = claude_settings(project, cwd)
    done = []
    server_file = root_of(cwd) / ".mcp.json" if project else claude_state_file()
    settings = load_settings(path) if exists(path) else None  # a file recall cannot edit: refused first
    dropped = _drop_server(server_file)
    if settings is not None:
        with editing(path):
            removed = remove_hook(settings)
            early = early_start_removed(settings, path)
            tracked = remove_hook(settings, event="PostToolUse", module=TRACK_MODULE)
        approved = settings.get("enabledMcpjsonServers")
        # recall's approval, or one left naming no server now: it would approve the next `recall` unasked
        # recall's: noted, and its hook or server in the files now (a note of another RECALL_HOME's
        # install is not: the approval there now is the user's, of their own server)
        ours = we_added(path, "enabledMcpjsonServers.recall") and bool(removed or dropped)
        unapproved = (project and isinstance(approved, list) and SERVER_NAME in approved
                      and (ours or not _has_server(server_file)))
        if not ours and not unapproved:
            state_note(path, "enabledMcpjsonServers.recall", False)
        if unapproved and isinstance(approved, list):
            state_note(path, "enabledMcpjsonServers.recall", False)
            approved.remove(SERVER_NAME)
            if not approved:
                del settings["enabledMcpjsonServers"]
        if removed or early or tracked or unapproved:
            write_settings(path, settings)
            drop_if_created_and_empty(path)
        done.append(f"removed the recall hook from {path}" if removed else f"no recall hook in {path}")
        if early:
            done.append(early)
        if tracked:
            done.append(f"removed the read tracker from {path}")
    else:
        done.append(f"no recall hook in {path}")
    if dropped:
        done.append(f"removed the recall MCP server from {server_file}")
    return done


def _has_server(path: Path) -> bool:
    """Whether ``path`` registers an MCP server named recall (one it cannot read: as if it did)."""
    from recall.agents.writes import exists

    try:
        servers = load_settings(path).get("mcpServers") if exists(path) else None
    except InstallError:
        return True
    return isinstance(servers, dict) and SERVER_NAME in servers
