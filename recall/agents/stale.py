"""Entries of recall's that an older ``recall install`` wrote into an agent's settings, found so
that ``recall status`` can say to run it again.

An agent keeps the command it was given until ``recall install`` runs again: after an
upgrade, an entry from before the packages by layer named a module that was gone (every
message failed; ``recall.hook`` runs it now), and one from before ``-E`` still let a
repository's ``sitecustomize.py`` run in the hook (stop 47, an outside tester's S01, S06).
Every file ``recall install`` writes is looked at (Claude Code's and Gemini's settings, Codex's
hooks.json and config.toml, the MCP server's ``~/.claude.json`` and a project's ``.mcp.json``, the
OpenCode plugin), and only what install would rewrite counts: an MCP server recall recorded as its
own, not one the user registered, so the repair named always works (an outside tester's upgrade:
an entry from before ``-E`` was named, and kept as the user's by every install).
Read-only: recall does not rewrite an agent's settings unasked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recall.agents.install import FORMER_MODULES, SAFE_FLAGS, command_words, settings_path
from recall.agents.shared import MCP_MODULE, SERVER_NAME, claude_state_file, codex_dir, gemini_settings, root_of
from recall.privacy.paths import read_text


def stale_entries(cwd: Path) -> list[Path]:
    """The agents' files (user and this project's) holding an entry of recall's that the current
    ``recall install`` would write otherwise: a former module name, or a Python started without
    ``-E -P`` (a hook entry, recall's recorded MCP server, the OpenCode plugin's command)."""
    from recall.agents.claude import ours_as_installed

    found = []
    for path, data in _settings(cwd):
        server = data.get("mcpServers", {}).get(SERVER_NAME) if isinstance(data, dict) \
            and isinstance(data.get("mcpServers"), dict) else None
        if any(_stale(entry) for entry in _dicts(data) if not _runs_server(entry)) \
                or (isinstance(server, dict) and ours_as_installed(path, server) and _stale(server)):
            found.append(path)
    return found + _stale_codex_servers(cwd) + _stale_plugins(cwd)


def _runs_server(entry: dict) -> bool:
    words = command_words(entry)
    return any(words[i] == "-m" and words[i + 1] == MCP_MODULE for i in range(len(words) - 1))


def _stale_codex_servers(cwd: Path) -> list[Path]:
    """Codex's config.toml files whose ``[mcp_servers.recall]`` an older install wrote."""
    from recall.agents.codex import ours_in_toml

    return [config for config, table in _codex_servers(cwd) if ours_in_toml(config, table) and _stale(dict(table))]


def _codex_servers(cwd: Path) -> Iterator[tuple[Path, Any]]:
    """(config.toml, its ``[mcp_servers.recall]``) for Codex's user and this project's files."""
    from recall.agents.codex import _read_toml
    from recall.errors import RecallError

    for config in dict.fromkeys([codex_dir(False) / "config.toml", codex_dir(True, cwd) / "config.toml"]):
        try:
            servers = _read_toml(config).get("mcp_servers") if config.exists() else None
            table = servers.get(SERVER_NAME) if servers is not None else None
        except (RecallError, AttributeError):
            continue
        if hasattr(table, "get"):
            yield config, table


def _stale_plugins(cwd: Path) -> list[Path]:
    """OpenCode plugin files of recall's whose text this release's install would write otherwise."""
    from recall.agents.install import HOOK_MODULE
    from recall.agents.opencode import plugin_text

    found = []
    for path, command in _plugins(cwd):
        tail = command[command.index("--home"):command.index("--home") + 2] if "--home" in command else []
        if read_text(path) != plugin_text([command[0], *SAFE_FLAGS, "-m", HOOK_MODULE, "--agent", "opencode", *tail]):
            found.append(path)
    return found


def _plugins(cwd: Path) -> Iterator[tuple[Path, list[str]]]:
    """(recall's OpenCode plugin file, the hook command it runs), user and this project's."""
    import re

    from recall.agents.opencode import MARK, PLUGIN_NAME, opencode_plugins

    for folder in dict.fromkeys([opencode_plugins(False), opencode_plugins(True, cwd)]):
        path = folder / PLUGIN_NAME
        try:
            text = read_text(path)
            command = json.loads(re.search(r"^const COMMAND = (.*);$", text, re.M).group(1))  # type: ignore[union-attr]
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if MARK in text[:400] and isinstance(command, list) and command and all(isinstance(w, str) for w in command):
            yield path, command


def broken_entries(cwd: Path) -> list[tuple[Path, str, str]]:
    """(file, python, what happens) for each file holding an entry of recall's whose python cannot
    run recall (a venv deleted or rebuilt, with an older Python that does not know ``-P``; a checkout
    moved, `pip uninstall`): every file install writes, the MCP servers in Codex's config.toml and
    OpenCode's plugin included (an outside tester's AF06, D5). Each python is tried once, as the
    agents start it (``-E -P``: a folder here holding a ``recall`` package hides nothing)."""
    tried: dict[str, tuple[int, str]] = {}
    found: list[tuple[Path, str, str]] = []
    for path, python, kind in _installed_pythons(cwd):
        if python not in tried:
            tried[python] = _try(python)
        code, why = tried[python]
        if code and not any(f == path for f, _p, _w in found):
            blocks = kind == "unguarded hook" and code == 2
            found.append((path, python, f"{why}: " + (
                "its hook exits 2, which the agent reads as 'block this prompt': every message you send is "
                "erased" if blocks else EFFECTS[kind])))
    return found


EFFECTS = {"hook": "every message shows the agent a hook error (the message still goes through)",
           "unguarded hook": "every message shows the agent a hook error (the message still goes through)",
           "server": "the agent cannot start recall's MCP server, and its recall hook fails on every message",
           "plugin": "OpenCode's recall plugin hands nothing over"}


def _try(python: str) -> tuple[int, str]:
    """(exit status, why) of ``python -E -P -c "import recall.agents.hook"``: 0 where it runs recall."""
    import subprocess

    from recall.agents.install import HOOK_MODULE
    from recall.privacy.trust import startable

    if not startable(python):  # named by a file someone else may have written: never started (H1)
        gone = os.path.isabs(python) and not os.path.lexists(python)
        return (127, "it is gone") if gone else (0, "")
    try:
        proc = subprocess.run([python, *SAFE_FLAGS, "-c", f"import {HOOK_MODULE}"], capture_output=True,
                              timeout=10, stdin=subprocess.DEVNULL)
    except (FileNotFoundError, NotADirectoryError):
        return 127, "it is gone"
    except (OSError, subprocess.SubprocessError) as exc:
        return 1, f"it cannot be started ({type(exc).__name__})"
    # its last line (a traceback's error), not the usage lines after an unknown option's
    last = [line for line in proc.stderr.decode("utf-8", "replace").strip().splitlines()
            if line.strip() and not line.startswith(("usage:", "Try "))][-1:]
    return proc.returncode, ("it cannot run recall" + (f" ({last[0][:160]})" if last else ""))


def _installed_pythons(cwd: Path) -> Iterator[tuple[Path, str, str]]:
    """(file, python, kind) for each entry running recall: hooks (``unguarded``: an older install's,
    whose exit status is the interpreter's), MCP servers, OpenCode's plugin."""
    from recall.agents.install import is_guarded

    for path, data in _settings(cwd):
        for entry in _dicts(data):
            if (python := _python_of(entry)) is not None:
                kind = "server" if _runs_server(entry) else "hook" if is_guarded(entry) else "unguarded hook"
                yield path, python, kind
    for config, table in _codex_servers(cwd):
        if isinstance(table.get("command"), str) and _runs_server(dict(table)):
            yield config, table["command"], "server"
    for plugin, command in _plugins(cwd):
        yield plugin, command[0], "plugin"


def _settings(cwd: Path) -> Iterator[tuple[Path, object]]:
    """Each agent settings file recall may have written to (user and this project's), read."""
    files = [settings_path(False), settings_path(True, cwd), settings_path(True, cwd).with_name("settings.local.json"),
             claude_state_file(), codex_dir(False) / "hooks.json", codex_dir(True, cwd) / "hooks.json",
             gemini_settings(False), gemini_settings(True, cwd), root_of(cwd) / ".mcp.json"]
    for path in dict.fromkeys(files):
        try:
            yield path, json.loads(read_text(path))
        except (OSError, ValueError, RecursionError):
            continue


def _python_of(entry: dict) -> str | None:
    """The interpreter of a command entry that runs ``-m recall.X``, else None."""
    words = command_words(entry)
    if not any(words[i] == "-m" and words[i + 1].startswith("recall.") for i in range(len(words) - 1)):
        return None
    command = entry.get("command")
    python = command if isinstance(entry.get("args"), list) else (words[0] if words else None)
    return python if isinstance(python, str) and python else None


def _dicts(node: object, depth: int = 0) -> Iterator[dict]:
    if depth > 12:
        return
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _dicts(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _dicts(value, depth + 1)


def _stale(entry: dict) -> bool:
    """A command entry running ``-m recall.X`` with a former module name or without the flags, or a
    hook without ``GUARD`` (its exit status the interpreter's: 2, "block", where it rejects ``-P``)."""
    from recall.agents.install import is_guarded

    words = command_words(entry)
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1].startswith("recall."):
            return (words[i + 1] in FORMER_MODULES.values() or not set(SAFE_FLAGS) <= set(words[:i])
                    or (entry.get("type") == "command" and not is_guarded(entry)))  # may exit 2 (D6)
    return False
