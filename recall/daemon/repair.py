"""A folder indexed again by the daemon itself when an answer met one of its notes gone or changed
on disk (``recall.indexing.ondisk``): with the watcher off (the default), a deleted note stayed in
the index, and an edited one kept its old headline, until the next ``recall index``.

The answer itself leaves a deleted note out; this brings the index up to date behind it, so the
next message is right: ``Recall.index`` of the folders those notes are in (hash-checked: only what
changed is read and embedded again), in a thread of its own, at most once a minute
(``REPAIR_EVERY_S``), never beside a switch of model, another index or the watcher (which keeps
the index in step itself). A file seen once in a state (gone, or its time) asks for it once: a
file only touched, whose index does not change, does not ask again every minute.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from recall.daemon.logs import log_event, log_exception
from recall.store.lru import Lru

if TYPE_CHECKING:
    from recall.api import Recall
    from recall.daemon.state import DaemonState
    from recall.indexing.ondisk import Behind

REPAIR_EVERY_S = 60.0
SEEN_KEPT = 4096  # files remembered in the state they asked for an index in


class Repair:
    def __init__(self, state: DaemonState, app: Recall) -> None:
        self.state = state
        self.app = app
        self._lock = threading.Lock()
        self._last = float("-inf")
        self._running = False
        self._seen = Lru(SEEN_KEPT)

    def __call__(self, behind: list[Behind]) -> None:
        """What an answer found behind the disk: its folders indexed again, unless one was a minute ago."""
        fresh = [b for b in behind if self._seen.get((b.path, b.seen)) is None]
        if not fresh:
            return
        with self._lock:
            if self._running or time.monotonic() - self._last < REPAIR_EVERY_S or self._busy():
                return
            self._running, self._last = True, time.monotonic()
        for b in fresh:
            self._seen.put((b.path, b.seen), True)
        folders = sorted({(b.kind, b.root, b.project) for b in fresh}, key=str)
        threading.Thread(target=self._index, args=(folders, fresh), name="recall-repair", daemon=True).start()

    def _busy(self) -> bool:
        """A switch of model or another index under way, or the watcher on."""
        from recall.indexing.progress import read_progress

        if self.state.switching or self.state.watcher is not None:
            return True
        progress = read_progress(self.app.home)
        return bool(progress and progress.get("running"))

    def _index(self, folders: list[tuple[str, str, str | None]], fresh: list[Behind]) -> None:
        from recall.api import Recall
        from recall.indexing.indexer import SourceSpec

        gone = sum(1 for b in fresh if b.seen is None)
        log_event("index again", folders=len(folders), gone=gone, changed=len(fresh) - gone)
        worker = Recall(home=self.app.home, config=self.app.config, embedder=self.app.embedder)
        try:
            stats = worker.index([SourceSpec(kind, Path(root), project) for kind, root, project in folders])
            log_event("indexed again", added=stats.added, changed=stats.changed, removed=stats.removed,
                      seconds=round(stats.seconds, 2))
        except Exception as exc:  # noqa: BLE001 - the daemon keeps answering; the next index does it
            log_exception("indexing a folder again", exc)
        finally:
            worker.store.close()
            with self._lock:
                self._running = False
