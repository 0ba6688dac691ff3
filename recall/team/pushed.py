"""The folders this home pushed to a team store, so that a folder gone here goes there too.

``recall team push`` deletes what was deleted inside a folder it pushes; a folder deleted or
moved as a whole was pushed by nobody again, and its notes stayed on the server, in every
teammate's search (stop 48, an outside tester's V05). The server cannot tell which machine
pushed a folder (one role may push from several), so this home keeps its own list:
``RECALL_HOME/team-pushed.json``, 0600, ``[[kind, folder], ...]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from recall.privacy.paths import folder_gone, read_text, recall_home, replace_private

PUSHED_FILE = "team-pushed.json"


def _path(home: Path | None) -> Path:
    return (home or recall_home()) / PUSHED_FILE


def pushed(home: Path | None = None) -> list[tuple[str, str]]:
    """The folders pushed from this home, as (kind, absolute folder)."""
    try:
        data = json.loads(read_text(_path(home)))
    except (OSError, ValueError, RecursionError):
        return []
    return [(k, r) for k, r in (x for x in data if isinstance(x, list) and len(x) == 2)
            if isinstance(k, str) and isinstance(r, str)] if isinstance(data, list) else []


def gone(home: Path | None = None) -> list[tuple[str, str]]:
    """The pushed folders that are no folder here any more (a permission error is not gone)."""
    return [(k, r) for k, r in pushed(home) if folder_gone(r)]


def remember(added: Iterable[tuple[str, str]], dropped: Iterable[tuple[str, str]] = (),
             home: Path | None = None) -> None:
    """Add ``added`` to the list and take ``dropped`` out of it."""
    out = [e for e in pushed(home) if e not in set(dropped)]
    out += [e for e in dict.fromkeys(added) if e not in out]
    replace_private(_path(home), json.dumps(out, ensure_ascii=False))


def clear(home: Path | None = None) -> None:
    """Nothing of this home is on the server (``recall team forget``)."""
    _path(home).unlink(missing_ok=True)
