"""Entries of recall's that an older ``recall install`` wrote into an agent's settings, found so
that ``recall status`` can say to run it again.

An agent keeps the command it was given until ``recall install`` runs again: after an
upgrade, an entry from before the packages by layer named a module that was gone (every
message failed; ``recall.hook`` runs it now), and one from before ``-E`` still let a
repository's ``sitecustomize.py`` run in the hook (stop 47, an outside tester's S01, S06).
Read-only: recall does not rewrite an agent's settings unasked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from recall.agents.install import FORMER_MODULES, SAFE_FLAGS, command_words, settings_path
from recall.agents.shared import claude_state_file, codex_dir, gemini_settings
from recall.privacy.paths import read_text


def stale_entries(cwd: Path) -> list[Path]:
    """The agents' settings files (user and this project's) holding an entry of recall's that
    the current ``recall install`` would write otherwise: a former module name, or a Python
    started without ``-E -P``."""
    return [path for path, data in _settings(cwd) if any(_stale(entry) for entry in _dicts(data))]


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
             gemini_settings(False), gemini_settings(True, cwd)]
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
