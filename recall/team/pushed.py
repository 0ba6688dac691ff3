"""The folders this home pushed to a team store, so that a folder gone here goes there too.

``recall team push`` deletes what was deleted inside a folder it pushes; a folder deleted or
moved as a whole was pushed by nobody again, and its notes stayed on the server, in every
teammate's search (stop 48, an outside tester's V05). The server cannot tell which machine
pushed a folder (one role may push from several), so this home keeps its own list, one per
store (``PgIndex.identity``: role, server, database, schema): one list for every store let a
push to another schema take a gone folder off it there, where it was never pushed, and its
notes stayed on the first store for good (stop 56). ``RECALL_HOME/team-pushed.json``, 0600,
``{store: [[kind, folder], ...]}``; the list of a release before stores were told apart
(``[[kind, folder], ...]``) is taken as the first store's it meets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from recall.privacy.paths import folder_gone, read_text, recall_home, replace_private

PUSHED_FILE = "team-pushed.json"
Folders = list[tuple[str, str]]


def _path(home: Path | None) -> Path:
    return (home or recall_home()) / PUSHED_FILE


def _folders(data: object) -> Folders:
    return [(k, r) for k, r in (x for x in data if isinstance(x, list) and len(x) == 2)
            if isinstance(k, str) and isinstance(r, str)] if isinstance(data, list) else []


def _read(home: Path | None, store: str) -> dict[str, Folders]:
    """Every store's list; a list of the release before, as ``store``'s."""
    try:
        data = json.loads(read_text(_path(home)))
    except (OSError, ValueError, RecursionError):
        return {}
    if isinstance(data, list):
        return {store: _folders(data)}
    return {key: _folders(value) for key, value in data.items()} if isinstance(data, dict) else {}


def pushed(store: str, home: Path | None = None) -> Folders:
    """The folders pushed from this home to ``store``, as (kind, absolute folder)."""
    return _read(home, store).get(store, [])


def gone(store: str, home: Path | None = None) -> Folders:
    """The folders pushed to ``store`` that are no folder here any more (a permission error is not gone)."""
    return [(k, r) for k, r in pushed(store, home) if folder_gone(r)]


def remember(store: str, added: Iterable[tuple[str, str]], dropped: Iterable[tuple[str, str]] = (),
             home: Path | None = None) -> None:
    """Add ``added`` to ``store``'s list and take ``dropped`` out of it."""
    every = _read(home, store)
    out = [e for e in every.get(store, []) if e not in set(dropped)]
    out += [e for e in dict.fromkeys(added) if e not in out]
    every[store] = out
    replace_private(_path(home), json.dumps({k: v for k, v in every.items() if v}, ensure_ascii=False))


def clear(store: str, home: Path | None = None) -> None:
    """Nothing of this home is on ``store`` (``recall team forget``)."""
    every = _read(home, store)
    every.pop(store, None)
    replace_private(_path(home), json.dumps(every, ensure_ascii=False))
