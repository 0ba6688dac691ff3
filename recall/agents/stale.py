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
    files = [settings_path(False), settings_path(True, cwd), settings_path(True, cwd).with_name("settings.local.json"),
             claude_state_file(), codex_dir(False) / "hooks.json", codex_dir(True, cwd) / "hooks.json",
             gemini_settings(False), gemini_settings(True, cwd)]
    found = []
    for path in dict.fromkeys(files):
        try:
            data = json.loads(read_text(path))
        except (OSError, ValueError, RecursionError):
            continue
        if any(_stale(entry) for entry in _dicts(data)):
            found.append(path)
    return found


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
