"""A damaged store set aside for ``recall index --rebuild``, and what can still be read of it:
the folders it had indexed, so they are indexed again."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from recall.errors import StoreDamaged
from recall.privacy.regular import not_a_file, read_regular
from recall.store.errors import store_error
from recall.store.sqlite import lenient_text

MAX_META_BYTES = 1 << 30  # a generation's meta.json: its notes' records (a few MB for thousands)


def set_aside(path: Path) -> tuple[Path | None, list[tuple[str, str, str | None]]]:
    """When the store file at ``path`` is damaged, move it (and its -wal and -shm) aside,
    0600 as it was; returns where, and the sources (kind, folder, project) still readable
    from it. ``(None, [])`` when there is no file or it is sound."""
    if not path.exists() or check_store(path) is None:
        return None, []
    sources = salvage_sources(path)
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        if Path(str(path) + suffix).exists():
            os.replace(str(path) + suffix, str(aside) + suffix)
    return aside, sources


def salvage_sources(path: Path) -> list[tuple[str, str, str | None]]:
    """The folders a damaged store had indexed (kind, folder, project): from its sources
    table as far as it can still be read, and from the notes of every index generation
    beside it (meta.json names each note's source)."""
    found: dict[tuple[str, str], str | None] = {}
    if not not_a_file(path):  # a pipe where the store was: nothing to read from it
        try:
            con = sqlite3.connect(str(path), timeout=5)
            con.text_factory = lenient_text
            try:
                for k, r, p in con.execute("SELECT kind, root, project FROM sources"):
                    found[(str(k), str(r))] = p
            finally:
                con.close()
        except sqlite3.DatabaseError:
            pass
    for k, r, p in index_sources(path.parent):
        found.setdefault((k, r), p)
    return [(k, r, p) for (k, r), p in found.items()]


def index_sources(home: Path) -> list[tuple[str, str, str | None]]:
    """The folders the newest index under ``home`` holds notes of (kind, folder, project), from its
    live generation's meta.json (else every generation's): what a store emptied or deleted no longer
    knows. Not every model's: an index of a model no longer in use still named a folder dropped
    since, and brought it back (an outside tester's, stop 56)."""
    from recall.store.vectors import read_current

    found: dict[tuple[str, str], str | None] = {}
    live = [(_mtime(marker), marker.parent / f"gen-{generation:06d}" / "meta.json")
            for marker in (home / "index").glob("*/current") if (generation := read_current(marker.parent))]
    metas = [max(live)[1]] if live else sorted((home / "index").glob("*/gen-*/meta.json"))
    for meta in metas:
        try:
            for note in json.loads(read_regular(meta, MAX_META_BYTES)[0])["notes"]:
                found.setdefault((str(note["kind"]), str(note["root"])), note.get("project"))
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
    return [(k, r, p) for (k, r), p in found.items()]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def emptied_store(home: Path, db_name: str, counts: dict, runs: list | tuple) -> list[str]:
    """One line when the store (``counts``, ``runs``: its notes and index runs) records no index
    at all while one is on disk under ``home``: the store was emptied, deleted or replaced, and
    with it the list of indexed folders (``recall index --rebuild`` reads them back from it)."""
    from recall.store.vectors import read_current

    if runs or counts.get("notes"):
        return []
    built = sorted(p.parent.name for p in (home / "index").glob("*/current") if read_current(p.parent) is not None)
    if not built:
        return []
    return [f"{home / db_name}: holds no notes, yet an index is built under {home / 'index' / built[0]}: the "
            "store was emptied or replaced; `recall index --rebuild` indexes again the folders that index names"]


def check_store(path: Path) -> str | None:
    """Why the store file at ``path`` is damaged (SQLite's quick check), or None if sound."""
    if why := not_a_file(path):
        return why
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            rows = [r[0] for r in con.execute("PRAGMA quick_check(3)")]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if isinstance(store_error(path, exc), StoreDamaged):
            return str(exc)
        raise
    return None if rows == ["ok"] else "; ".join(map(str, rows))[:200]
