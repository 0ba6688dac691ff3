"""`recall install --agent claude|codex|gemini`: each agent's prompt hook in its own format.

One daemon serves every agent; only the hook entry differs. What each route writes:

claude, form ``mcp_tool`` (no process per message; Claude Code >= 2.1.118 and the ``mcp``
package importable here)
    settings.json   hooks.UserPromptSubmit += {"type": "mcp_tool", "server": "recall",
                    "tool": "recall_context", "input": {"prompt": "${prompt}", "cwd": "${cwd}"},
                    "timeout": 5}
    the server      --project: <git root>/.mcp.json mcpServers.recall, and "recall" in
                    .claude/settings.json enabledMcpjsonServers (project servers need approval);
                    --user: mcpServers.recall in ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json),
                    where `claude mcp add --scope user` writes it
claude, form ``command`` (the fallback): the exec-form command hook of ``recall.install``
codex   hooks.json (~/.codex or $CODEX_HOME; --project: <root>/.codex/hooks.json)
        hooks.UserPromptSubmit += {"type": "command", "command": "<python> -P -m recall.hook
        --agent codex", "timeout": 5}, and ``[features] hooks = true`` in config.toml when no
        value is set (older releases need it). Codex runs a new user hook only after the user
        trusts it (``/hooks`` in the TUI; ``codex exec --dangerously-bypass-hook-trust``).
gemini  .gemini/settings.json (--user: ~/.gemini/settings.json)
        hooks.BeforeAgent += {"type": "command", "name": "recall", "command": "<python> -P -m
        recall.hook --agent gemini", "timeout": 5000}  (milliseconds), and
        ``hooksConfig.enabled = true`` when unset (the stable channel needs it)
--track-reads (claude): hooks.PostToolUse += {"matcher": "Read", "hooks": [<python> -P -m recall.track]}

``uninstall --agent X`` removes exactly these: our hook entries (recognised by what they run),
and the MCP server entry, approvals, flags and files install added, which it notes in
``RECALL_HOME/installed.json`` (so a server you registered or a flag you set yourself stays).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from .install import (
    CONTEXT_TOOL,
    HOOK_MODULE,
    HOOK_TIMEOUT_S,
    InstallError,
    add_hook,
    hook_entry,
    load_settings,
    remove_hook,
    write_settings,
)
from .paths import claude_config_dir, ensure_private_dir, git_toplevel, private_open, project_root, recall_home

AGENTS = ("claude", "codex", "gemini")
FORMS = ("mcp_tool", "command")
SERVER_NAME = "recall"
MCP_MODULE = "recall.mcp"
TRACK_MODULE = "recall.track"
# Claude Code added the mcp_tool hook type in v2.1.118 (its changelog, 2026-04-23).
MCP_TOOL_SINCE = (2, 1, 118)
GEMINI_TIMEOUT_MS = 5000
STATE_NAME = "installed.json"


def python() -> str:
    return os.path.abspath(sys.executable)  # not resolved: a venv's python is a symlink


def root_of(cwd: Path | None) -> Path:
    here = Path(cwd or Path.cwd())
    return git_toplevel(here) or project_root(here)


# --- the entries ----------------------------------------------------------------------------


def mcp_tool_entry(server: str = SERVER_NAME) -> dict[str, Any]:
    """Claude Code's no-spawn hook: a tool call on the already connected recall server."""
    return {"type": "mcp_tool", "server": server, "tool": CONTEXT_TOOL,
            "input": {"prompt": "${prompt}", "cwd": "${cwd}"}, "timeout": HOOK_TIMEOUT_S}


def mcp_server_entry() -> dict[str, Any]:
    return {"type": "stdio", "command": python(), "args": ["-P", "-m", MCP_MODULE]}


def hook_command(agent: str) -> str:
    """The shell command line Codex and Gemini run (they take a string, not an argv)."""
    return shlex.join([python(), "-P", "-m", HOOK_MODULE, "--agent", agent])


def codex_entry() -> dict[str, Any]:
    return {"type": "command", "command": hook_command("codex"), "timeout": HOOK_TIMEOUT_S}


def gemini_entry() -> dict[str, Any]:
    return {"type": "command", "name": "recall", "command": hook_command("gemini"),
            "timeout": GEMINI_TIMEOUT_MS,
            "description": "recall: past notes related to this message (or nothing)"}


def track_entry() -> dict[str, Any]:
    return {"type": "command", "command": python(), "args": ["-P", "-m", TRACK_MODULE],
            "timeout": HOOK_TIMEOUT_S}


# --- where each agent keeps them ---------------------------------------------------------------


def claude_settings(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".claude" / "settings.json" if project else claude_config_dir() / "settings.json"


def claude_state_file() -> Path:
    """Where `claude mcp add --scope user` keeps user MCP servers."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() / ".claude.json" if env else Path.home() / ".claude.json"


def codex_home() -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def codex_dir(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".codex" if project else codex_home()


def gemini_settings(project: bool, cwd: Path | None = None) -> Path:
    return root_of(cwd) / ".gemini" / "settings.json" if project else Path.home() / ".gemini" / "settings.json"


# --- what install added (flags it set that the user had not) -----------------------------------


def _state_path() -> Path:
    return recall_home() / STATE_NAME


def _state() -> dict[str, list[str]]:
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _state_note(path: Path, key: str, added: bool) -> None:
    state = _state()
    keys = set(state.get(str(path), []))
    keys = keys | {key} if added else keys - {key}
    if keys:
        state[str(path)] = sorted(keys)
    else:
        state.pop(str(path), None)
    ensure_private_dir(_state_path().parent)
    with private_open(_state_path()) as fh:
        json.dump(state, fh, indent=2)


def _we_added(path: Path, key: str) -> bool:
    return key in _state().get(str(path), [])


def _note_created(path: Path) -> None:
    """Remember that install created ``path`` (uninstall deletes it when it is left empty)."""
    if not path.exists():
        _state_note(path, "file", True)


def _drop_if_created_and_empty(path: Path) -> bool:
    if not _we_added(path, "file"):
        return False
    _state_note(path, "file", False)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return False
    if text in ("", "{}"):
        path.unlink()
        return True
    return False


# --- Claude Code -------------------------------------------------------------------------------


def claude_version() -> tuple[int, ...] | None:
    """``claude --version`` as numbers, or None when the CLI is not on PATH or says nothing usable."""
    try:
        out = subprocess.run(["claude", "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", out.stdout)
    return tuple(int(x) for x in m.groups()) if m else None


def mcp_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def pick_claude_form(requested: str | None) -> tuple[str, str]:
    """(form, why): mcp_tool where this machine supports it, else the command hook."""
    if requested:
        return requested, "as asked (--form)"
    if not mcp_importable():
        return "command", "the MCP SDK is not installed here (pip install 'recall-memory[mcp]')"
    version = claude_version()
    if version is not None and version < MCP_TOOL_SINCE:
        return "command", (f"Claude Code {'.'.join(map(str, version))} predates mcp_tool hooks "
                           f"({'.'.join(map(str, MCP_TOOL_SINCE))})")
    return "mcp_tool", "no process per message"


def _is_our_server(entry: object) -> bool:
    args = entry.get("args") if isinstance(entry, dict) else None
    return isinstance(args, list) and args[-2:] == ["-m", MCP_MODULE]


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
    servers[SERVER_NAME] = entry
    _note_created(path)
    if current is None:  # a registration you made yourself (`claude mcp add`) stays on uninstall
        _state_note(path, "mcpServers.recall", True)
    write_settings(path, data)
    return "updated" if current else "added"


def _drop_server(path: Path) -> bool:
    if not path.exists():
        return False
    data = load_settings(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not _is_our_server(servers.get(SERVER_NAME)):
        return False
    if not _we_added(path, "mcpServers.recall"):
        return False
    _state_note(path, "mcpServers.recall", False)
    del servers[SERVER_NAME]
    if not servers:
        del data["mcpServers"]
    write_settings(path, data)
    _drop_if_created_and_empty(path)
    return True


def install_claude(project: bool, cwd: Path | None = None, form: str | None = None,
                   track_reads: bool = False) -> list[str]:
    form, why = pick_claude_form(form)
    path = claude_settings(project, cwd)
    done = []
    if form == "mcp_tool":
        server_file = root_of(cwd) / ".mcp.json" if project else claude_state_file()
        done.append(f"{_set_server(server_file)}: the recall MCP server in {server_file}")
    settings = load_settings(path)
    if form == "mcp_tool":
        if project:
            approved = settings.setdefault("enabledMcpjsonServers", [])
            if isinstance(approved, list) and SERVER_NAME not in approved:
                approved.append(SERVER_NAME)
                _state_note(path, "enabledMcpjsonServers.recall", True)
        result = add_hook(settings, mcp_tool_entry())
    else:
        result = add_hook(settings, hook_entry())
    done.append(f"{result}: the recall hook ({form} form: {why}) in {path}")
    if track_reads:
        tracked = add_hook(settings, track_entry(), event="PostToolUse", module=TRACK_MODULE, matcher="Read")
        done.append(f"{tracked}: the read tracker (PostToolUse on Read) in {path}")
    _note_created(path)
    write_settings(path, settings)
    return done


def uninstall_claude(project: bool, cwd: Path | None = None) -> list[str]:
    path = claude_settings(project, cwd)
    done = []
    if path.exists():
        settings = load_settings(path)
        removed = remove_hook(settings)
        tracked = remove_hook(settings, event="PostToolUse", module=TRACK_MODULE)
        approved = settings.get("enabledMcpjsonServers")
        unapproved = (project and isinstance(approved, list) and SERVER_NAME in approved
                      and _we_added(path, "enabledMcpjsonServers.recall"))
        if unapproved and isinstance(approved, list):
            _state_note(path, "enabledMcpjsonServers.recall", False)
            approved.remove(SERVER_NAME)
            if not approved:
                del settings["enabledMcpjsonServers"]
        if removed or tracked or unapproved:
            write_settings(path, settings)
            _drop_if_created_and_empty(path)
        done.append(f"removed the recall hook from {path}" if removed else f"no recall hook in {path}")
        if tracked:
            done.append(f"removed the read tracker from {path}")
    else:
        done.append(f"no recall hook in {path}")
    server_file = root_of(cwd) / ".mcp.json" if project else claude_state_file()
    if _drop_server(server_file):
        done.append(f"removed the recall MCP server from {server_file}")
    return done


# --- Codex CLI ---------------------------------------------------------------------------------


def install_codex(project: bool, cwd: Path | None = None) -> list[str]:
    folder = codex_dir(project, cwd)
    path = folder / "hooks.json"
    settings = load_settings(path)
    result = add_hook(settings, codex_entry())
    _note_created(path)
    write_settings(path, settings)
    done = [f"{result}: the recall hook (UserPromptSubmit, --agent codex) in {path}"]
    config = folder / "config.toml"
    if _codex_feature(config, enable=True):
        done.append(f"set [features] hooks = true in {config}")
    done.append("Codex runs a new hook once you trust it: open `codex`, review it under /hooks "
                "(or run `codex exec --dangerously-bypass-hook-trust` in scripts)")
    return done


def _codex_feature(config: Path, enable: bool) -> bool:
    """Add ``[features] hooks = true`` when no value is set (enable), or remove it when we added
    it (not enable). Returns whether the file changed. Edited with tomlkit: comments stay."""
    import tomlkit

    if not enable and not _we_added(config, "features.hooks"):
        return False
    try:
        doc = tomlkit.parse(config.read_text(encoding="utf-8")) if config.exists() else tomlkit.document()
    except (OSError, ValueError) as exc:
        raise InstallError(f"{config}: cannot read it as TOML ({exc}); fix or move it first") from exc
    features = doc.get("features")
    if enable:
        if features is not None and ("hooks" in features or "codex_hooks" in features):
            return False  # the user's choice, either way
        if features is None:
            doc["features"] = tomlkit.table()
            _state_note(config, "features", True)
        _note_created(config)
        doc["features"]["hooks"] = True
        _state_note(config, "features.hooks", True)
    else:
        if features is not None and "hooks" in features:
            del features["hooks"]
            if _we_added(config, "features") and not features:
                del doc["features"]
        _state_note(config, "features.hooks", False)
        _state_note(config, "features", False)
    config.parent.mkdir(parents=True, exist_ok=True)
    text = tomlkit.dumps(doc)
    if not enable:  # tomlkit keeps the blank line it put before our table; the file ended in one newline
        text = text.rstrip("\n") + "\n" if text.strip() else ""
    _write_text(config, text)
    if not enable:
        _drop_if_created_and_empty(config)
    return True


def _write_text(path: Path, text: str) -> None:
    import tempfile

    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".recall.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def uninstall_codex(project: bool, cwd: Path | None = None) -> list[str]:
    folder = codex_dir(project, cwd)
    path = folder / "hooks.json"
    done = []
    removed = 0
    if path.exists():
        settings = load_settings(path)
        removed = remove_hook(settings)
        if removed:
            write_settings(path, settings)
            _drop_if_created_and_empty(path)
    done.append(f"removed the recall hook from {path}" if removed else f"no recall hook in {path}")
    if _codex_feature(folder / "config.toml", enable=False):
        done.append(f"removed [features] hooks = true (added by recall install) from {folder / 'config.toml'}")
    return done


# --- Gemini CLI --------------------------------------------------------------------------------


def install_gemini(project: bool, cwd: Path | None = None) -> list[str]:
    path = gemini_settings(project, cwd)
    settings = load_settings(path)
    result = add_hook(settings, gemini_entry(), event="BeforeAgent")
    done = [f"{result}: the recall hook (BeforeAgent, --agent gemini) in {path}"]
    hooks_config = settings.setdefault("hooksConfig", {})
    if isinstance(hooks_config, dict) and "enabled" not in hooks_config:
        hooks_config["enabled"] = True
        _state_note(path, "hooksConfig.enabled", True)
        done.append(f"set hooksConfig.enabled = true in {path}")
    _note_created(path)
    write_settings(path, settings)
    if project:
        done.append("Gemini CLI asks you to trust a project's hooks when it starts there: accept recall's")
    return done


def uninstall_gemini(project: bool, cwd: Path | None = None) -> list[str]:
    path = gemini_settings(project, cwd)
    if not path.exists():
        return [f"no recall hook in {path}"]
    settings = load_settings(path)
    removed = remove_hook(settings, event="BeforeAgent")
    done = [f"removed the recall hook from {path}" if removed else f"no recall hook in {path}"]
    hooks_config = settings.get("hooksConfig")
    if _we_added(path, "hooksConfig.enabled") and isinstance(hooks_config, dict) and "enabled" in hooks_config:
        del hooks_config["enabled"]
        if not hooks_config:
            del settings["hooksConfig"]
        _state_note(path, "hooksConfig.enabled", False)
        done.append(f"removed hooksConfig.enabled (added by recall install) from {path}")
        removed += 1
    if removed:
        write_settings(path, settings)
        _drop_if_created_and_empty(path)
    return done


# --- one entry point ---------------------------------------------------------------------------


def install_agent(agent: str, project: bool, cwd: Path | None = None, form: str | None = None,
                  track_reads: bool = False) -> list[str]:
    if agent == "claude":
        return install_claude(project, cwd, form, track_reads)
    if form == "mcp_tool":
        raise InstallError(f"{agent}: only the command form is available (--form command)")
    if track_reads:
        raise InstallError(f"{agent}: --track-reads is for Claude Code's Read tool only")
    return install_codex(project, cwd) if agent == "codex" else install_gemini(project, cwd)


def uninstall_agent(agent: str, project: bool, cwd: Path | None = None) -> list[str]:
    if agent == "claude":
        return uninstall_claude(project, cwd)
    return uninstall_codex(project, cwd) if agent == "codex" else uninstall_gemini(project, cwd)
