"""One note file, one copy in the index, whatever kinds its folders were indexed under.

A folder indexed as `dir` and as `rule` (`recall index DIR` and `recall index --kind rule DIR`,
or the folder in `[sources] rules`), or a parent as `dir` and a subfolder as `rule`, held each
note twice; the watcher kept one copy up to date, and the other handed over a deleted note and
the old text of an edited one, and `recall status` counted every note twice (an outside
tester's). The rules:

* **A folder has one kind.** A folder given again without ``--kind`` (``SourceSpec.kind_given``
  false: `recall index DIR`, `recall watch DIR`) is read again as the kind it has, said in one
  line; one given with ``--kind`` (or listed in ``[sources]``) under another kind takes that
  kind, its old registration leaving once it is synced (``recall.indexing.known.unnested``).
* **A file in folders of two kinds is the deepest folder's** (a rules folder inside a notes
  folder: its notes are rules), as the watcher already routes a saved file: the outer folder's
  read leaves the inner one out (``SourceSpec.inside``, ``carved``).
* **A home that holds a file twice is repaired** by the next index run or watcher start
  (``drop_doubled``): the same folder under several kinds keeps one (not `dir` where another
  kind is there: `dir` is only the default; else the latest registered), and a run that finds
  an outer folder holding an inner one's files syncs every folder (each read then carved).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from recall.notes.problems import Problem

if TYPE_CHECKING:
    from recall.indexing.indexer import SourceSpec, SyncStats
    from recall.store.sqlite import Store

DEFAULT_KIND = "dir"  # what a folder given without --kind is indexed as


def inside_of(kind: str, root: Path, others: Iterable[tuple[str, Path]]) -> tuple[Path, ...]:
    """The folders of another kind strictly inside ``root`` (``others``: (kind, resolved root)):
    their files are theirs, not ``root``'s."""
    return tuple(sorted({r for k, r in others if k != kind and r != root and r.is_relative_to(root)}))


def note_folders(store: Store) -> list[tuple[str, Path]]:
    """(kind, root) of every note folder the store knows (not conversations)."""
    return [(kind, Path(root)) for _sid, kind, root, _p in store.sources() if kind != "conversation"]


def carved(store: Store, specs: Sequence[SourceSpec]) -> list[SourceSpec]:
    """``specs``, each with the folders of another kind inside it (known, or among ``specs``)
    left out of its read."""
    others = [*note_folders(store), *((s.kind, s.root.resolve()) for s in specs)]
    return [replace(s, inside=inside_of(s.kind, s.root.resolve(), others)) for s in specs]


def drop_doubled(store: Store, stats: SyncStats) -> bool:
    """Repair a home that holds a folder under several kinds (kept: not `dir` where another kind
    is there, else the latest registered; the others leave with their notes, one line each).
    True when a folder left, or an outer folder holds notes of a folder of another kind inside
    it: the run then syncs every folder, each read carved."""
    by_root: dict[str, list[tuple[int, str]]] = {}
    for sid, kind, root, _p in store.sources():
        if kind != "conversation":
            by_root.setdefault(root, []).append((sid, kind))
    again = False
    for root, regs in by_root.items():
        if len({k for _sid, k in regs}) < 2:
            continue
        keep = max(regs, key=lambda r: (r[1] != DEFAULT_KIND, r[0]))[1]
        for sid, kind in regs:
            if kind != keep:
                n = len(store.note_hashes(sid))
                store.delete_source(sid)
                stats.removed += n
                again = True
                stats.problems.append(Problem(root, f"was indexed as {kind} and as {keep}: its {n} note(s) as "
                                                    f"{kind} were dropped, each note is held once, as {keep}"))
    return again or _held_inside(store)


def _held_inside(store: Store) -> bool:
    """Whether a known folder holds a note inside a known folder of another kind."""
    folders = [(sid, kind, root) for sid, kind, root, _p in store.sources() if kind != "conversation"]
    for sid, kind, root in folders:
        inner = [r + os.sep for _s, k, r in folders if k != kind and r != root and r.startswith(root + os.sep)]
        if inner and any(p.startswith(tuple(inner)) for p in store.note_hashes(sid)):
            return True
    return False
