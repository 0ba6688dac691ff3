"""What recall hands over or shows exists on disk as shown.

With the watcher off (``[watch] enabled = false``, the default) a note deleted after ``recall
index`` was handed over by the hook, with its path, and listed by ``recall search``, ``recall
query`` and the MCP tools until the next index; an edited one with its old headline (an outside
tester's). ``on_disk`` looks at the files of the notes an answer ranks, at answer time: a stat per
note, all of them in one call of a bounded pool (``recall.privacy.bounded``: a note on a hung
mount holds no worker past ``WAIT_S``, and then the answer is handed over as indexed). A note
whose file is gone leaves the ranking; one whose file changed after the index was built is
handed over as indexed (a changed time is also a save of the same text, a checkout, a sync: held
back, the note would go silent for nothing) and named, with a gone one, in ``Behind``, which
the daemon hands to ``recall.daemon.repair`` to bring the folder's index up to date. A note
with no file of its own here is not looked at: a past conversation's title (kept after its
transcript is gone, ``[sources] keep_gone_titles``), a path kept masked (a secret in its name).

``since_index`` is ``recall status``'s look at the indexed folders: notes gone, changed or new
since the last index, with the command that indexes each folder again.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from recall.privacy.bounded import Bounded
from recall.ranking.selector import Ranking

if TYPE_CHECKING:
    from recall.store.sqlite import Store

WAIT_S = 0.05  # the stats of one answer on a healthy disk: tens of microseconds
STATUS_WAIT_S = 2.0  # `recall status`'s look at every indexed folder
MAX_STUCK = 4  # looks under way at once; past it, answers are handed over as indexed
MAX_FILES = 20_000  # `recall status` looks at no more files than this
NOT_LOOKED_AT = frozenset({"conversation"})
MASKED = "[REDACTED"  # a path recall keeps masked names no file

_DISK = Bounded(MAX_STUCK, WAIT_S, "recall-ondisk")


class Behind(NamedTuple):
    """A note an answer ranked whose file is gone (``seen`` None) or changed (its mtime)."""

    path: str
    kind: str
    root: str
    project: str | None
    seen: float | None


def _file_of(note: dict) -> str | None:
    path = note.get("path")
    if note.get("kind") in NOT_LOOKED_AT or not isinstance(path, str) or not os.path.isabs(path) or MASKED in path:
        return None
    return path


def _look(paths: Sequence[str], built_at: float) -> dict[str, float | None]:
    """Each path's mtime when it changed after ``built_at``, None when it is gone; same ones left out."""
    found: dict[str, float | None] = {}
    for path in paths:
        try:
            mtime = os.stat(path).st_mtime
        except (FileNotFoundError, NotADirectoryError):
            found[path] = None
            continue
        except OSError:  # unreadable now (permissions): handed over as indexed
            continue
        if built_at and mtime > built_at:
            found[path] = mtime
    return found


def on_disk(hits: Ranking, built_at: float) -> tuple[Ranking, list[Behind]]:
    """``hits`` less the notes whose file is gone, and the notes found gone or changed since
    ``built_at`` (the generation's); ``hits`` as they are when the disk did not answer in time."""
    paths = [_file_of(h.note) for h in hits]
    asked = [p for p in paths if p is not None]
    if not asked:
        return hits, []
    found = _DISK.run(lambda: _look(asked, built_at), None)
    if not found:
        return hits, []
    behind = [Behind(p, str(h.note.get("kind")), str(h.note.get("root")), h.note.get("project"), found[p])
              for h, p in zip(hits, paths, strict=True) if p is not None and p in found]
    if all(b.seen is not None for b in behind):
        return hits, behind
    kept = [h for h, p in zip(hits, paths, strict=True) if p is None or p not in found or found[p] is not None]
    return Ranking(kept, hits.negative), behind


class Since(NamedTuple):
    """``recall status``'s count of what changed on disk since the last index, per folder."""

    gone: int
    changed: int
    new: int
    folders: list[tuple[str, str]]  # (kind, root) of each folder behind

    def line(self) -> str:
        parts = [f"{n} {what}" for n, what in ((self.gone, "deleted"), (self.changed, "changed"),
                                               (self.new, "new")) if n]
        commands = "; ".join(f"`recall index {'' if kind == 'dir' else f'--kind {kind} '}{shlex.quote(root)}`"
                             for kind, root in self.folders[:3])
        more = f" (and {len(self.folders) - 3} more folders)" if len(self.folders) > 3 else ""
        return (f"{', '.join(parts)} note file(s) since the last index: answers leave out deleted notes, and "
                f"the daemon indexes a folder again when an answer meets one; {commands}{more} does it now")


def since_index(store: Store, built_at: float) -> Since | None:
    """What changed in the indexed folders after ``built_at`` (the last index of this model), or
    None: nothing did, or a folder did not answer within ``STATUS_WAIT_S`` (a hung mount)."""
    notes = {(kind, root): list(store.note_hashes(sid)) for sid, kind, root, _p in store.sources()
             if kind not in NOT_LOOKED_AT}
    found = _DISK.run(lambda: _since(notes, built_at), None, wait_s=STATUS_WAIT_S)
    return found if found is not None and found.folders else None


def _since(notes: dict[tuple[str, str], list[str]], built_at: float) -> Since:
    gone = changed = new = looked = 0
    folders = []
    deadline = time.monotonic() + STATUS_WAIT_S
    for (kind, root), paths in notes.items():
        paths = [p for p in paths if MASKED not in p][: max(0, MAX_FILES - looked)]
        looked += len(paths)
        states = _look(paths, built_at)
        g = sum(1 for s in states.values() if s is None)
        n = 0 if kind == "library" else _new_files(root, set(paths), built_at)  # documents: by the index only
        if states or n:
            folders.append((kind, root))
            gone, changed, new = gone + g, changed + len(states) - g, new + n
        if looked >= MAX_FILES or time.monotonic() > deadline:
            break
    return Since(gone, changed, new, folders)


def _new_files(root: str, known: set[str], built_at: float) -> int:
    """Note files in ``root`` and the folders of its notes, changed since ``built_at``, that are not indexed."""
    from recall.notes.files import is_note_name, shown_path  # YAML with it: not on the answer's path

    count = 0
    for folder in {root, *(os.path.dirname(p) for p in known)}:
        try:
            if os.stat(folder).st_mtime <= built_at:
                continue
            with os.scandir(folder) as entries:
                count += sum(1 for e in entries if is_note_name(e.name) and e.is_file()
                             and shown_path(Path(folder) / e.name) not in known)
        except OSError:
            continue
    return count
