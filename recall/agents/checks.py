"""What keeps recall's installed entries from working as meant, said by ``recall install`` and
``recall status``: the agent's own switches that turn recall's hook off (Claude Code's
``disableAllHooks``, a project's ``disabledMcpjsonServers`` naming recall, Gemini CLI's
``hooksConfig.disabled`` naming it), the same hook installed for the user and for this project
(the agent then runs both: each message is answered twice), and the one line for an agent's file
or folder that install cannot use (recall's own words for its files spoke of RECALL_HOME, which
has nothing to do with an agent's; an outside tester's D12, D13). Read-only."""

from __future__ import annotations

import errno
import json
import os
import shlex
from pathlib import Path

from recall.agents.install import EVENT, is_ours
from recall.agents.shared import (
    SERVER_NAME,
    claude_settings,
    codex_dir,
    gemini_settings,
)
from recall.privacy.paths import home_folder, os_error_line, read_text


def _read(path: Path) -> dict:
    try:
        data = json.loads(read_text(path))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _has_hook(data: dict, event: str) -> bool:
    hooks = data.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return isinstance(groups, list) and any(
        is_ours(h) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]
    )


def switched_off(agent: str, cwd: Path) -> list[str]:
    """A warning for each setting of the agent's own that keeps recall's hook (installed here) from running."""
    out: list[str] = []
    if not _installed(agent, cwd):
        return out
    if agent == "claude":
        project = claude_settings(True, cwd)
        for path in dict.fromkeys([claude_settings(False), project, project.with_name("settings.local.json")]):
            data = _read(path)
            if data.get("disableAllHooks") is True:
                out.append(
                    f'warning: {path} sets "disableAllHooks": true: Claude Code runs no hook, recall\'s '
                    "included; remove it there for recall to run"
                )
            if path != claude_settings(False) and _names_recall(data.get("disabledMcpjsonServers")):
                out.append(
                    f'warning: {path} lists {SERVER_NAME!r} in "disabledMcpjsonServers": Claude Code does '
                    "not start this project's recall MCP server, so its mcp_tool hook fails on every "
                    "message; take it out there"
                )
    elif agent == "gemini":
        for path in dict.fromkeys([gemini_settings(False), gemini_settings(True, cwd)]):
            config = _read(path).get("hooksConfig")
            if isinstance(config, dict) and _names_recall(config.get("disabled")):
                out.append(
                    f"warning: {path} lists {SERVER_NAME!r} in hooksConfig.disabled: Gemini CLI skips "
                    "recall's hook; take it out there for recall to run"
                )
    return out


def _installed(agent: str, cwd: Path) -> bool:
    """Whether recall's prompt hook is in Claude Code's or Gemini CLI's settings (user or this project)."""
    if agent == "claude":
        return any(_has_hook(_read(p), EVENT) for p in (claude_settings(False), claude_settings(True, cwd)))
    return agent == "gemini" and any(
        _has_hook(_read(p), "BeforeAgent") for p in (gemini_settings(False), gemini_settings(True, cwd))
    )


def _names_recall(value: object) -> bool:
    return isinstance(value, list) and SERVER_NAME in value


def both_scopes(agent: str, cwd: Path) -> str | None:
    """A warning when recall's prompt hook is installed for the user and for this project: the agent
    runs both, and each message can get the same notes twice. None otherwise."""
    if agent == "claude":
        files = [claude_settings(False), claude_settings(True, cwd)]
        found = [p for p in files if _has_hook(_read(p), EVENT)]
    elif agent == "codex":
        found = [
            p
            for p in (codex_dir(False) / "hooks.json", codex_dir(True, cwd) / "hooks.json")
            if _has_hook(_read(p), EVENT)
        ]
    elif agent == "gemini":
        found = [p for p in (gemini_settings(False), gemini_settings(True, cwd)) if _has_hook(_read(p), "BeforeAgent")]
    else:
        from recall.agents.opencode import PLUGIN_NAME, opencode_plugins

        found = [
            d / PLUGIN_NAME
            for d in (opencode_plugins(False), opencode_plugins(True, cwd))
            if (d / PLUGIN_NAME).exists()
        ]
    found = list(dict.fromkeys(found))
    if len(found) < 2:
        return None
    return (
        f"warning: recall's hook for {agent} is installed for you ({found[0]}) and for this project "
        f"({found[1]}): the agent runs both, and a message can get the same notes twice; keep one "
        f"(`recall uninstall --agent {agent} --project`, or `--user`)"
    )


def agent_file_line(exc: OSError) -> str:
    """One line for an agent's file or folder that install or uninstall cannot use: which, what is
    wrong, and the repair in the agent's terms (its folder's variable), not RECALL_HOME's."""
    if not exc.filename:
        return os_error_line(exc)
    path = Path(exc.filename)
    quoted = shlex.quote(str(path))
    if exc.errno in (errno.EACCES, errno.EPERM) and path.exists():
        if os.access(path, os.R_OK) and path.is_file():
            return (
                f"{path}: recall cannot write it ({exc.strerror}); make it writable (`chmod u+w {quoted}`) "
                "and run the command again, or leave it and add recall's entry there yourself"
            )
        return (
            f"{path}: recall cannot read it ({exc.strerror}); `ls -l {quoted}`, then `chown` or `chmod u+rw` "
            "it, and run the command again"
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        blocker = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            q = shlex.quote(str(blocker))
            return (
                f"{blocker} is a file where the agent keeps a folder{_moved_by(blocker)}: move it aside "
                f"(`mv {q} {q}.old`) and run the command again"
            )
    return os_error_line(exc)


def _moved_by(blocker: Path) -> str:
    """Which variable put the agent's folder at ``blocker`` (or under it), as words; "" for HOME."""
    home = home_folder()
    for var, default in (
        ("XDG_CONFIG_HOME", home / ".config"),
        ("CLAUDE_CONFIG_DIR", home / ".claude"),
        ("CODEX_HOME", home / ".codex"),
    ):
        where = Path(os.environ[var]) if os.path.isabs(os.environ.get(var, "")) else default
        if where == blocker or where.is_relative_to(blocker) or blocker.is_relative_to(where):
            said = f"{var}={os.environ[var]}" if var in os.environ else f"{var} unset: {default}"
            return f" ({said}; point {var} at a folder to use another)"
    return ""
