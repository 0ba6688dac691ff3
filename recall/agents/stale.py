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
from collections.abc import Iterator
from pathlib import Path

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
    from recall.agents.codex import _read_toml, ours_in_toml
    from recall.errors import RecallError

    found = []
    for config in dict.fromkeys([codex_dir(False) / "config.toml", codex_dir(True, cwd) / "config.toml"]):
        try:
            servers = _read_toml(config).get("mcp_servers") if config.exists() else None
            table = servers.get(SERVER_NAME) if servers is not None else None
        except (RecallError, AttributeError):
            continue
        if table is not None and ours_in_toml(config, table) and _stale(dict(table)):
            found.append(config)
    return found


def _stale_plugins(cwd: Path) -> list[Path]:
    """OpenCode plugin files of recall's whose text this release's install would write otherwise."""
    import re

    from recall.agents.install import HOOK_MODULE
    from recall.agents.opencode import MARK, PLUGIN_NAME, opencode_plugins, plugin_text

    found = []
    for folder in dict.fromkeys([opencode_plugins(False), opencode_plugins(True, cwd)]):
        path = folder / PLUGIN_NAME
        try:
            text = read_text(path)
            command = json.loads(re.search(r"^const COMMAND = (.*);$", text, re.M).group(1))  # type: ignore[union-attr]
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if MARK in text[:400] and isinstance(command, list) and command and isinstance(command[0], str) \
                and text != plugin_text([command[0], *SAFE_FLAGS, "-m", HOOK_MODULE, "--agent", "opencode"]):
            found.append(path)
    return found


def broken_entries(cwd: Path) -> list[tuple[Path, str]]:
    """(settings file, python) for each file holding an entry of recall's whose python is gone or
    no longer has recall (a venv deleted or rebuilt, a checkout moved, `pip uninstall`): the agent
    then shows a hook error on every message, and `recall status` said nothing (an outside
    tester's AF06). Each python is tried once (``python -E -c "import recall"``)."""
    import subprocess
    import sys

    runs: dict[str, bool] = {sys.executable: True}
    found = []
    for path, data in _settings(cwd):
        for python in dict.fromkeys(p for p in map(_python_of, _dicts(data)) if p is not None):
            if python not in runs:
                try:
                    runs[python] = subprocess.run([python, "-E", "-c", "import recall"], capture_output=True,
                                                  timeout=10, stdin=subprocess.DEVNULL).returncode == 0
                except (OSError, subprocess.SubprocessError):
                    runs[python] = False
            if not runs[python]:
                found.append((path, python))
                break
    return found


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
    """A command entry running ``-m recall.X`` with a former module name or without the flags."""
    words = command_words(entry)
    for i in range(len(words) - 1):
        if words[i] == "-m" and words[i + 1].startswith("recall."):
            return words[i + 1] in FORMER_MODULES.values() or not set(SAFE_FLAGS) <= set(words[:i])
    return False
