"""Re-index notes as they are saved (``recall watch``, or the daemon with
``[watch] enabled = true``).

Long because: the observer's events, the worker's batches and the watched folders share one
lock and one state; split, each part would reach into the others'.

Editors save in bursts: a temp file written and renamed over the note (VS Code, vim
with ``backupcopy=no``, JetBrains), or several writes to the note itself. The watcher
collects the paths it hears about until the folder has been quiet for ``debounce``
seconds (at most ``max_delay`` after the first event, so a file written continuously is
still picked up), then handles the batch in one go:

* each changed or new note file is re-read and replaced in one SQLite transaction
  through the one write path (``recall.indexing.indexer.Indexer.sync_notes``, as ``recall index``;
  unchanged bytes are skipped, so a touch costs nothing);
* each vanished one (deleted, or moved out of the folder) is deleted; a move inside the
  folder is a vanished path plus a new one, both in the same batch;
* a directory deleted, moved or created triggers a full (hash-checked) sync of its source;
* then ONE FAISS rebuild for the whole batch (``Indexer.rebuild``), swapped in atomically.

Searches read FAISS generations only, so they see the index before the batch or after
it: never a note half-updated, missing, or twice (``tests/core/watch/test_watch.py`` hammers this).

Threads: watchdog's observer thread only queues paths; one worker thread owns its own
SQLite connection (sqlite3 connections belong to the thread that opened them) and does
all reading, embedding and writing. Documents, screenshots and recordings are converted
beside it (``recall.notes.documents.ahead``): a file not converted yet is kept as stored and
queued again once its conversion is done, so a note saved meanwhile is never held up.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError
from recall.indexing.indexer import Indexer, SourceSpec, SyncStats, follows_elsewhere, read_questions
from recall.indexing.kinds import drop_doubled, inside_of, note_folders
from recall.indexing.known import link_names, lost_folders, record_link, unnested
from recall.notes.documents import LIBRARY, format_of, read_if_document
from recall.notes.documents.ahead import ConvertAhead
from recall.notes.files import is_note_name, name_problem, read_note, shown_path
from recall.notes.problems import grouped
from recall.notes.questions import QUESTIONS_FILE_NAMES
from recall.notes.walk import walked_into
from recall.privacy.paths import DB_NAME, file_id, leads_outside
from recall.store.records import SourceRef
from recall.store.sqlite import Store

if TYPE_CHECKING:
    from recall.api import Recall

log = logging.getLogger("recall.watch")

# A file rewritten continuously (a log, a script appending) is still indexed once a second.
MAX_DELAY_S = 1.0
RETRY_S = 2.0  # after a failed batch (e.g. SQLite locked past its 30 s timeout), doubled
RETRY_MAX_S = 300.0  # after each failure in a row, up to this
ROOT_CHECK_S = 1.0  # how often a quiet watcher looks whether a watched folder was made again
POLL_S = 5.0  # once inotify's limits are reached: how often the folders are walked instead
# inotify's limits (watchdog's words): ENOSPC, watched folders (fs.inotify.max_user_watches);
# EMFILE, instances (fs.inotify.max_user_instances). Not a full disk.
_INOTIFY_LIMITS = {errno.ENOSPC: "max_user_watches", errno.EMFILE: "max_user_instances"}
WATCHED_KINDS = ("memory", "rule", "dir", "library")  # conversations come from transcripts: `recall index`


class _LimitsSeen(logging.Filter):
    """On watchdog's inotify logger: a folder made inside a watched tree past inotify's limit is
    only a warning there ("Unable to watch ...", one per folder, the folder left unwatched).
    Kept here instead (every watcher of the process reads it: the limit is the user's), for the
    watchers to walk every folder from then on."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0  # folders left unwatched so far, in this process
        self.last: OSError | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, OSError) and arg.errno in _INOTIFY_LIMITS:
                self.count, self.last = self.count + 1, arg
                return False
        return True


_LIMITS_SEEN = _LimitsSeen()  # on watchdog's logger from the first watcher's start
_WATCHDOG_LOG = "watchdog.observers.inotify"


@dataclass(frozen=True)
class Watched:
    ref: SourceRef  # the source as the store knows it (its root as stored)
    root: Path  # resolved: watchdog reports paths under the folder it was given
    name: str = ""  # the folder as named (a DIR given, a link), where it leads looked at again

    @property
    def named(self) -> str:
        return self.name or self.ref.root

    @property
    def kind(self) -> str:
        return self.ref.kind

    @property
    def project(self) -> str | None:
        return self.ref.project


@dataclass
class BatchResult:
    paths: int
    stats: SyncStats
    rebuilt: bool
    seconds: float

    def summary(self) -> str:
        s = self.stats
        return (f"{self.paths} path(s): added {s.added}, changed {s.changed}, removed {s.removed}, "
                f"unchanged {s.unchanged}{'; index rebuilt' if self.rebuilt else ''} "
                f"in {self.seconds * 1000:.0f} ms")


def _known_failure(exc: Exception, home: Path) -> str | None:
    """What a failed batch met, in words, when it is a state of the machine or of the index the
    user can act on (a full disk, a limit, the index locked or damaged), not a bug."""
    import sqlite3

    from recall.errors import RecallError
    from recall.store.errors import state_line

    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return "the index is busy (a `recall index` running?)"
    if isinstance(exc, RecallError):
        return str(exc)
    return state_line(exc, home, home / DB_NAME)


def is_note_path(root: Path, path: Path) -> bool:
    """Whether ``path`` is a file ``recall.notes.files.read_folder(root)`` would read."""
    if not is_note_name(path.name) or not walked_into(root, path):
        return False
    if leads_outside(path, root):
        return False  # as read_folder: a link out of the folder must not expose other files
    return path.is_file()


class Watcher:
    """Watches the folders of indexed sources and keeps the index in step.

    ``sources``: the folders to watch (registered in the store if new); default, every
    memory/rule/dir source already indexed under the app's ``RECALL_HOME``.
    ``catch_up``: first sync each folder, for edits made while nobody was watching.
    Where inotify's limits are reached (a large tree, many editors watching), the folders are
    walked every ``poll_s`` seconds instead (``polling``), with one warning naming the limit.
    """

    def __init__(self, app: Recall, sources: Sequence[SourceSpec] | None = None, *,
                 debounce: float | None = None, max_delay: float = MAX_DELAY_S, catch_up: bool = True,
                 on_batch: Callable[[BatchResult], None] | None = None, poll_s: float = POLL_S) -> None:
        self.app = app
        self.specs = list(sources) if sources is not None else None
        self.debounce = app.config.watch.debounce_ms / 1000 if debounce is None else debounce
        self.max_delay = max(max_delay, self.debounce)
        self.catch_up = catch_up
        self.on_batch = on_batch
        self.watched: list[Watched] = []
        self.batches = 0
        self.rebuilds = 0
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._dirs: set[str] = set()
        self._first = self._last = 0.0
        self._busy = False
        self._stopping = False
        self._failures = 0  # batches failed in a row: the wait before the next try doubles
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.moved_to: str | None = None  # the model config.toml names now, when the watcher stopped for it
        self._observer: Any = None
        self._event_handler: Any = None
        self._roots: dict[Path, tuple[tuple[int, int] | None, Any]] = {}  # root -> (its identity, its watch)
        self._left: set[Path] = set()  # roots a sync found gone, their notes taken out (``_check_roots``)
        self.poll_s = poll_s
        self.polling: str | None = None  # the inotify limit reached, once the folders are polled
        self._limits_before = 0  # ``_LIMITS_SEEN.count`` when this watcher started
        self._ahead: ConvertAhead | None = None  # documents converted beside the worker
        self._store: Store | None = None  # the worker's connection (the worker's thread only)
        self._data_version: int | None = None  # the store's, when the sources were last read
        self._inner: list[int] = []  # known folders inside a DIR given: its own once it is synced
        self._dropped: list[SourceRef] = []  # folders no name leads to any more (``_follow_links``)

    # --- lifecycle -----------------------------------------------------------
    def start(self, timeout: float = 30.0) -> Watcher:
        """Start watching; returns once the folders are watched (events after this count)."""
        self._thread = threading.Thread(target=self._run, name="recall-watch", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the watcher did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._ahead is not None:
            self._ahead.stop()  # a conversion under way ends now, not after it
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block until no event is pending and no batch is running (tests, scripts)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._paths or self._dirs or self._busy or not (self._ahead is None or self._ahead.idle()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))  # the converter's thread tells its own condition
        return True

    # --- events (observer thread) --------------------------------------------
    def _queue(self, paths: Sequence[str] = (), dirs: Sequence[str] = ()) -> None:
        if not paths and not dirs:
            return
        now = time.monotonic()
        with self._cond:
            if not (self._paths or self._dirs):
                self._first = now
            self._last = now
            self._paths.update(paths)
            self._dirs.update(dirs)
            self._cond.notify_all()

    def _handler(self):
        from watchdog.events import FileSystemEventHandler

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                kind = event.event_type
                if kind in ("opened", "closed_no_write", "attrib"):
                    return
                found = [os.fsdecode(event.src_path)]
                if kind == "events_lost":  # the kernel's queue overflowed (a checkout, an rsync): any
                    # note may have changed unseen; an outside tester's 12,000 rewritten notes left
                    # 6,539 stale. The folder is read again whole (hash-checked: only changes embedded).
                    log.warning("file events were lost (the system's queue overflowed): reading %s again whole",
                                found[0])
                    watcher._queue(dirs=found)
                    return
                if kind == "moved":
                    found.append(os.fsdecode(event.dest_path))
                if event.is_directory:
                    # A folder that vanished, moved or appeared: resync its source.
                    if kind in ("deleted", "moved", "created"):
                        watcher._queue(dirs=found)
                    return
                # A questions file changed: resync its folder (hash-checked, so only
                # the notes whose questions changed are re-embedded).
                questions_files = [os.path.dirname(p) for p in found if os.path.basename(p) in QUESTIONS_FILE_NAMES]
                docs = watcher.app.config.documents  # documents, images, recordings: by extension
                watcher._queue(paths=[p for p in found if is_note_name(os.path.basename(p))
                                      or format_of(Path(p), docs, LIBRARY)],
                               dirs=questions_files)

        return Handler()

    # --- the worker ------------------------------------------------------------
    def _run(self) -> None:
        store: Store | None = None
        try:
            store = self._store = Store(self.app.home / DB_NAME)
            indexer = self.app.indexer(store)
            # Documents are converted beside this thread: a note saved meanwhile never waits.
            indexer.ahead = self._ahead = ConvertAhead(indexer.documents, done=self._queue).start()
            self._data_version = _data_version(store)
            self.watched = self._resolve_sources(store)
            self._event_handler = self._handler()
            logging.getLogger(_WATCHDOG_LOG).addFilter(_LIMITS_SEEN)  # once: a filter is added once
            self._limits_before = _LIMITS_SEEN.count
            self._observe()
            with self._cond:
                self._busy = self.catch_up  # wait_idle() also waits for the catch-up
        except BaseException as exc:  # reported by start(), in the caller's thread
            self._error = exc
            self._ready.set()
            if self._ahead is not None:
                self._ahead.stop()
            if store is not None:
                store.close()
            return
        self._ready.set()
        try:
            if self.catch_up or self._inner:
                self._guarded(indexer, set(), {str(w.root) for w in self.watched})
            self._absorb_inner(indexer)
            while True:
                batch = self._next_batch()
                if batch is None or self._model_moved():
                    break
                self._guarded(indexer, *batch)
        finally:
            self._ahead.stop()
            self._observer.stop()
            self._observer.join(5)
            store.close()

    def _model_moved(self) -> bool:
        """Whether config.toml names another model than this watcher embeds with: its saves would
        go to the old model's index (an outside tester's edits never reached the new one's), so
        the watcher stops, said once (``moved_to``; `recall watch` ends and says so)."""
        from recall.config.load import load_config
        from recall.embedding.models import model_id_of

        try:
            config = load_config()
            now = model_id_of(config.model, config.gemini.dimensions)
        except Exception:  # noqa: BLE001 - a config being edited: its error is said where it is used
            return False
        if now == model_id_of(self.app.config.model, self.app.config.gemini.dimensions):
            return False
        self.moved_to = now
        log.error("the model in config.toml is now %s: stopped watching (saves would be embedded for the old "
                  "model's index); `recall watch` again watches with it", now)
        with self._cond:
            self._busy = False
            self._cond.notify_all()
        return True

    def _observe(self, limit: OSError | None = None) -> None:
        """Watch every folder there: with inotify, or, once its limits are reached (``limit``,
        or met here), by walking the folders every ``poll_s`` s."""
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        if limit is not None:
            self._poll_for(limit)
        while True:
            observer = PollingObserver(timeout=self.poll_s) if self.polling else Observer()
            roots: dict[Path, tuple[tuple[int, int] | None, Any]] = {w.root: (file_id(w.root), None)
                                                                     for w in self.watched}
            try:
                for root, (seen, _) in roots.items():
                    if seen is not None:
                        roots[root] = (seen, observer.schedule(self._event_handler, str(root), recursive=True))
                observer.start()
            except OSError as exc:
                observer.unschedule_all()
                if self.polling or exc.errno not in _INOTIFY_LIMITS:
                    raise
                self._poll_for(exc)
                continue
            self._observer, self._roots = observer, roots
            return

    def _poll_for(self, exc: OSError) -> None:
        """From now on the folders are walked, because of inotify's limit ``exc``: said once."""
        self.polling = _INOTIFY_LIMITS[exc.errno or 0]
        log.warning("inotify's limit reached (fs.inotify.%s): walking the folders every %.0f s instead; "
                    "for saves seen at once raise it (sudo sysctl fs.inotify.%s=524288)",
                    self.polling, self.poll_s, self.polling)

    def _guarded(self, indexer: Indexer, paths: set[str], dirs: set[str]) -> None:
        result = None
        try:
            result = self._process(indexer, paths, dirs)
            self._failures = 0
        except Exception as exc:
            # One bad batch must not stop the watcher. Typical cause: the database stayed
            # locked by a long `recall index`. Queue the batch again and retry later, waiting
            # twice as long after each failure in a row; the stack is logged once per streak.
            wait = min(RETRY_S * 2 ** self._failures, RETRY_MAX_S)
            known = _known_failure(exc, self.app.home)
            if known is not None:  # said in words, no stack (an outside tester's full disk printed 17 lines)
                log.error("re-indexing failed: %s; retrying in %.0f s", known, wait)
            else:
                log.error("re-indexing failed (%s); retrying in %.0f s", type(exc).__name__, wait,
                          exc_info=self._failures == 0)
            self._failures += 1
            with self._cond:
                self._cond.wait_for(lambda: self._stopping, wait)
            self._queue(list(paths), list(dirs))
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        if result is not None and self.on_batch is not None:
            self.on_batch(result)

    def _next_batch(self) -> tuple[set[str], set[str]] | None:
        """Wait for events, then for ``debounce`` s of quiet; take everything queued."""
        with self._cond:
            self._follow_sources()
            self._check_roots()  # a busy watcher looks too, once a batch
            while not (self._paths or self._dirs or self._dropped or self._stopping):  # a folder left
                self._cond.wait(ROOT_CHECK_S)  # is a batch of its own (``_follow_links``)
                self._follow_sources()
                self._check_roots()
            while not self._stopping:
                now = time.monotonic()
                wait = min(self._last + self.debounce, self._first + self.max_delay) - now
                if wait <= 0:
                    break
                self._cond.wait(wait)
            if self._stopping:
                return None
            batch = (self._paths, self._dirs)
            self._paths, self._dirs = set(), set()
            self._busy = True
            return batch

    def _check_roots(self) -> None:
        """A watched folder deleted and made again (a checkout, an rsync, a re-clone) is a new
        folder the old watch never hears from: watch it again, and sync it. Its identity may be
        the old one's (ext4 hands a folder made at once the inode just freed), so a watch that
        died with its folder tells too. A folder inotify could not watch (its limits) makes the
        watcher walk every folder from then on."""
        if _LIMITS_SEEN.count > self._limits_before and _LIMITS_SEEN.last is not None and not self.polling:
            self._switch_to_polling(_LIMITS_SEEN.last)
            return
        if not self._follow_links():
            return  # every folder is walked from now on
        with self._cond:
            left, self._left = self._left, set()
        for root, (seen, watch) in list(self._roots.items()):
            if root in left:  # a sync found it gone: gone until a look sees it back, under
                # any identity (`mv` away and back kept its own, and its notes stayed out for good)
                seen = None
                self._roots[root] = (None, watch)
            now = file_id(root) if root.is_dir() else None  # a file in its place is no folder made again
            if now == seen and (now is None or self._alive(watch)):
                continue
            if now is None and seen is not None:
                # moved away or renamed (`mv`): no event names its files, so their notes stayed,
                # handed over under paths that no longer exist (AJ03); read again, it is gone
                log.warning("%s is gone: its notes leave the index until it is back", root)
                self._queue(dirs=[str(root)])
            if now is not None and self._observer is not None:
                try:
                    self._observer.unschedule(watch)
                except Exception:  # noqa: BLE001 - the old watch died with its folder
                    pass
                polling = self.polling
                watch = self._schedule(root)
                if watch is None:
                    if self.polling != polling:
                        return  # every folder is walked from now on
                    continue
                log.warning("%s was made again: watching it again", root)
                self._queue(dirs=[str(root)])
            self._roots[root] = (now, watch)

    def _follow_links(self) -> bool:
        """A watched folder whose name now leads elsewhere (`recall watch current`, then `current ->
        v2` where it led to v1; or the folder replaced by a link to its new place) is watched and
        synced where it leads, and the folder it led to leaves the index with its notes, as `recall
        index` does (``recall.indexing.known``): the old watch heard nothing of the new folder, said
        "watching it again" and indexed nothing more (an outside tester's, stop 56). False once
        every folder is walked instead (inotify's limits)."""
        for w in list(self.watched):
            now = Path(os.path.realpath(w.named))
            if now == w.root or not now.is_dir() or w not in self.watched:
                continue
            others = [x for x in self.watched if x != w]
            held = any(now.is_relative_to(x.root) for x in others)  # watched already, with the folder holding it
            inner = [x for x in others if x.root != now and x.root.is_relative_to(now)]  # its own from now on
            moved = Watched(SourceRef(w.kind, str(now), w.project), now, w.named)
            self.watched = [x for x in others if x not in inner] + ([] if held else [moved])
            for gone in [w, *inner]:
                if not any(x.root == gone.root for x in self.watched):  # no other name leads there
                    self._dropped.append(gone.ref)
                    _seen, watch = self._roots.pop(gone.root, (None, None))
                    with contextlib.suppress(Exception):  # its folder may be gone with its watch
                        self._observer.unschedule(watch)
            log.warning("%s now leads to %s: watching it there; the notes of %s leave the index", w.named, now,
                        w.root)
            if w.name and self._store is not None:  # a name given: where it leads, for a later `recall index NAME`
                record_link(self._store, w.name, str(now))
            if held:
                continue
            if now not in self._roots:
                seen, polling = file_id(now), self.polling
                watch = self._schedule(now)
                if self.polling != polling:
                    return False
                self._roots[now] = (seen, watch)
            self._queue(dirs=[str(now)])
        return True

    def _drop_left(self, stats: SyncStats) -> None:
        """The folders a name no longer leads to (``_follow_links``): out of the store, notes and all."""
        assert self._store is not None
        for ref in self._dropped:
            source_id = self._store.source_id(ref.kind, ref.root, ref.project)
            stats.removed += len(self._store.note_hashes(source_id))
            self._store.delete_source(source_id)
        self._dropped = []

    def _schedule(self, root: Path) -> Any:
        """A watch on ``root``, or None where there is none to be had now: past inotify's limits
        every folder is walked from then on (``_switch_to_polling``); anything else is said and
        tried again at the next look."""
        try:
            return self._observer.schedule(self._event_handler, str(root), recursive=True)
        except OSError as exc:
            if exc.errno in _INOTIFY_LIMITS and not self.polling:
                self._switch_to_polling(exc)
            else:
                log.warning("%s cannot be watched (%s); trying again", root, exc)
            return None

    def _follow_sources(self) -> None:
        """Watching every indexed folder: the folders indexed or dropped since it started (by
        `recall index`, a session's start, a folder taken out of config.toml) are watched or
        left. The list was fixed at the start: a folder indexed later was never followed, and
        one dropped came back with its next save (AJ02, AJ04). Read again only when another
        connection wrote the store (SQLite's ``data_version``)."""
        if self.specs is not None or self._store is None or self._observer is None:
            return
        version = _data_version(self._store)
        if version is None or version == self._data_version:
            return
        self._data_version = version
        # a folder gone for now stays: watched again once it is back (``_check_roots``)
        before = {w.ref for w in self.watched}
        self.watched = _named(self._store, [Watched(ref, Path(ref.root).resolve()) for ref in _indexed(self._store)])
        roots = {w.root for w in self.watched}
        for root in [r for r in self._roots if r not in roots]:
            _seen, watch = self._roots.pop(root)
            try:
                self._observer.unschedule(watch)
            except Exception:  # noqa: BLE001 - its folder may be gone with its watch
                pass
            log.info("%s is no longer indexed: not watching it", root)
        for w in self.watched:
            if w.root not in self._roots:
                seen, polling = file_id(w.root), self.polling
                watch = self._schedule(w.root) if seen is not None else None
                if self.polling != polling:
                    return  # every folder (this one too) is walked and read from now on
                self._roots[w.root] = (seen, watch)
            if w.ref not in before:
                log.info("watching %s (%s), indexed since", w.root, w.kind)
                self._queue(dirs=[str(w.root)])

    def _switch_to_polling(self, exc: OSError) -> None:
        """inotify's limits reached while running (a folder made again, one added inside): every
        folder is walked from now on, and synced once, for what the dead watches missed."""
        self._observer.unschedule_all()
        self._observer.stop()
        self._observe(exc)
        self._queue(dirs=[str(root) for root in self._roots])

    def _alive(self, watch: Any) -> bool:
        """Whether the observer still listens on ``watch`` (its emitter stops when the watched
        folder itself is deleted)."""
        return self._observer is None or any(e.watch == watch and e.is_alive() for e in self._observer.emitters)

    def _resolve_sources(self, store: Store) -> list[Watched]:
        if lost_folders(store, self.app.home):  # `watch DIR` wrote DIR alone, and the others were lost for good
            raise RecallError(LOST_FOLDERS)
        if self.specs is None:  # a home holding a folder under two kinds: one, synced by the catch-up
            drop_doubled(store, SyncStats())
            return _named(store, self._watchable(_indexed(store)))
        # as `recall index DIR`: a DIR inside a known folder is that folder, and known folders
        # inside it are part of it (a subfolder watched on its own held its notes twice, and a
        # note deleted came back through the other copy: AJ05)
        specs, self._inner, said = unnested(store, self.specs)
        for problem in said:
            log.warning("%s", problem)
        found = [spec.ref() for spec in specs]
        for ref in found:
            store.source_id(ref.kind, ref.root, ref.project)  # known from now on, even if empty
        names = {spec.ref(): os.path.abspath(spec.root) for spec in specs}
        return [replace(w, name=names.get(w.ref, "")) for w in self._watchable(found)]

    def _absorb_inner(self, indexer: Indexer) -> None:
        """The known folders inside a DIR given leave the store once DIR is synced: their notes
        are DIR's (as `recall index DIR` leaves them)."""
        if not self._inner or self._failures or self._store is None:
            return
        for source_id in self._inner:
            self._store.delete_source(source_id)
        self._inner = []
        indexer.rebuild()

    @staticmethod
    def _watchable(found: Iterable[SourceRef]) -> list[Watched]:
        watched = []
        for ref in found:
            if Path(ref.root).is_dir():
                watched.append(Watched(ref, Path(ref.root).resolve()))
            else:
                log.warning("not watching %s (%s): no such folder", ref.root, ref.kind)
        return watched

    def _source_of(self, path: Path) -> Watched | None:
        # The deepest root containing the path (sources may nest: rules inside a notes dir).
        best: Watched | None = None
        for w in self.watched:
            if path.is_relative_to(w.root) and (best is None or len(w.root.parts) > len(best.root.parts)):
                best = w
        return best

    def _process(self, indexer: Indexer, paths: set[str], dirs: set[str]) -> BatchResult:
        t0 = time.perf_counter()
        stats = SyncStats()
        self._drop_left(stats)
        rescan = {w for w in self.watched for d in map(Path, dirs)
                  if w.root.is_relative_to(d) or d.is_relative_to(w.root)}
        for w in rescan:
            self._sync_whole(indexer, w, stats)
        by_source: dict[Watched, set[Path]] = {}
        for p in map(Path, paths):
            owner = self._source_of(p)
            if owner is not None and owner not in rescan:
                by_source.setdefault(owner, set()).add(p)
        for w, changed in by_source.items():
            self._sync_paths(indexer, w, changed, stats)
        rebuilt = bool(stats.added or stats.changed or stats.removed)
        if rebuilt:
            # One new generation for the whole batch: readers switch from before to after.
            indexer.rebuild()
            self.rebuilds += 1
        self.batches += 1
        result = BatchResult(len(paths) + len(dirs), stats, rebuilt, time.perf_counter() - t0)
        for problem in grouped(stats.problems):
            log.warning("%s", problem)
        log.info("%s", result.summary())
        return result

    def _sync_whole(self, indexer: Indexer, w: Watched, stats: SyncStats) -> None:
        if os.path.realpath(w.root) != str(w.root):  # made a link meanwhile: read where it leads, as
            return  # its own folder, at the next look at the roots (``_follow_links``), not twice now
        gone = not w.root.is_dir()
        if gone:  # the folder itself is gone: so are its notes
            indexer.sync_notes(w.ref, [], stats, remove_missing=True)
        else:  # hash-checked: unchanged files are read and hashed, not parsed or embedded; another kind's
            others = [*note_folders(self._store), *((x.kind, x.root) for x in self.watched)] if self._store else []
            inside = inside_of(w.kind, w.root, others)  # folder inside it keeps its files (recall.indexing.kinds)
            stats.merge(indexer.sync_source(SourceSpec(w.kind, w.root, w.project, inside=inside)))
        if gone or not w.root.is_dir():  # or it went while it was read: its notes are out until a
            with self._cond:  # look at the roots sees it back, whatever its identity (``_check_roots``)
                self._left.add(w.root)
            if not gone:  # the notes read before it went are still in: read it again, gone
                self._queue(dirs=[str(w.root)])

    def _sync_paths(self, indexer: Indexer, w: Watched, paths: set[Path], stats: SyncStats) -> None:
        existing = indexer.store.note_hashes(w.ref)
        # The store may spell a path differently (a symlinked or relative root): match on
        # the real path, and keep the stored spelling so a note is never added twice.
        reals = [os.path.realpath(p) for p in existing]  # once a batch: both tests below read them
        stored_as = dict(zip(reals, existing, strict=True))
        if _named_alike(w, paths, existing, stored_as) or _reached_twice(paths, Counter(reals)):
            self._sync_whole(indexer, w, stats)  # hash-checked: only what changed is embedded
            return
        notes, gone = [], []
        for path in paths:
            if (problem := name_problem(path, w.root)) is not None:  # as `recall index` says it: one line
                stats.problems.append(problem)
                continue
            stored = stored_as.get(shown_path(os.path.realpath(path)))  # stored paths are masked
            note, problems = (read_note(path, root=os.path.realpath(w.root))
                              if is_note_path(w.root, path) and w.kind != LIBRARY
                              else read_if_document(path, w.root, indexer.documents, w.kind, indexer.ahead))
            stats.problems.extend(problems)
            if note is not None:
                note.path = stored or str(path)
                notes.append(note)
                continue
            if stored is not None:
                gone.append(stored)
        saved = {note.path for note in notes}
        if notes and follows_elsewhere(SourceSpec(w.kind, w.root, w.project), notes,
                                       [fp for p, fp in existing.items() if p not in saved]):
            self._sync_whole(indexer, w, stats)  # a note renamed, or its name reused: its questions follow it
            return
        if notes:
            questions = read_questions(SourceSpec(w.kind, w.root, w.project))
            stats.problems.extend(questions.problems)
            indexer.sync_notes(w.ref, notes, stats, remove_missing=False,
                               file_questions=questions.file_questions, restatements=questions.restatements)
        if gone:
            indexer.delete_notes(w.ref, gone, stats)


def _indexed(store: Store) -> list[SourceRef]:
    """The store's sources a watcher follows."""
    return [SourceRef(kind, root, project) for _sid, kind, root, project in store.sources() if kind in WATCHED_KINDS]


def _named(store: Store, watched: list[Watched]) -> list[Watched]:
    """``watched``, each folder indexed through a link by that link's name (``link_names``): the
    daemon's watcher follows a link pointed elsewhere as `recall watch LINK` does (it kept the
    old target: an outside tester's)."""
    names = link_names(store)
    return [w if w.name else replace(w, name=names.get(w.ref.root, "")) for w in watched]


def _data_version(store: Store) -> int | None:
    """SQLite's count of commits by other connections (None where it cannot be read now)."""
    try:
        return int(store.db.execute("PRAGMA data_version").fetchone()[0])
    except Exception:  # noqa: BLE001 - a locked or damaged store: read at the next look
        return None


def _reached_twice(paths: set[Path], real: Counter[str]) -> bool:
    """Whether a file among ``paths`` is also a note under another name (a symlink beside it, a
    hard link): its event names one path, and the other note kept the old text, handed over
    beside the new (AJ01). Then the folder is read again whole. ``real``: the stored notes'
    real paths, counted."""
    for path in paths:
        try:
            if real[os.path.realpath(path)] > 1 or os.stat(path).st_nlink > 1:
                return True
        except OSError:
            continue  # gone: its note leaves by its own path
    return False


def _named_alike(w: Watched, paths: set[Path], existing: Iterable[str], stored_as: dict[str, str]) -> bool:
    """Whether a note among ``paths`` shares its file name with another note of ``w`` (each
    project's README.md): then every such note is known by its path in the folder, which only
    the whole folder's files decide (``recall.notes.files.note_keys``)."""
    names = Counter(Path(p).stem for p in existing)
    names.update(p.stem for p in paths if shown_path(os.path.realpath(p)) not in stored_as)
    return any(names[p.stem] > 1 for p in paths if w.kind != LIBRARY and is_note_path(w.root, p))


# A store that lost its folders (recall.db emptied, deleted or replaced) while the index on disk
# names them (an outside tester's, stop 56): `recall index` reads them back, a watcher does not.
LOST_FOLDERS = ("the store holds no folder while the index on disk names some (recall.db was emptied, deleted or "
                "replaced): `recall index` reads them back; then watch")


def maybe_start_watcher(app: Recall) -> Watcher | None:
    """For the daemon: a running watcher when ``[watch] enabled = true``, else None."""
    if not app.config.watch.enabled:
        return None
    from recall.authoring.trigger import after_watch_batch  # saved notes get their questions too, once allowed

    def on_batch(result: BatchResult) -> None:
        after_watch_batch(app, result.stats)
    try:
        return Watcher(app, on_batch=on_batch).start()
    except RecallError as exc:  # a store that lost its folders (``LOST_FOLDERS``): said, searching goes on
        log.warning("not watching: %s", exc)
        return None


def run_watch(app: Recall, sources: Sequence[SourceSpec] | None = None, *, debounce: float | None = None,
              echo: Callable[[str], None] | None = None) -> None:
    """Watch until Ctrl-C or SIGTERM (``recall watch``)."""
    stop = threading.Event()
    report = echo or (lambda line: None)

    def on_batch(result: BatchResult) -> None:  # its problems: each said once, by the watcher's log
        if result.rebuilt or result.stats.problems:
            report(result.summary())

    in_main = threading.current_thread() is threading.main_thread()  # signals: main thread only
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set()) if in_main else None
    try:
        while True:
            watcher = Watcher(app, sources, debounce=debounce, on_batch=on_batch).start()
            try:
                for w in watcher.watched:
                    report(f"watching {w.root} ({w.kind})")
                if not watcher.watched:
                    report("nothing to watch: index a folder first (recall index DIR)")
                    return
                while not stop.wait(0.5) and watcher.moved_to is None:
                    pass
            finally:
                watcher.stop()
            if watcher.moved_to is None:
                return
            report(f"the model in config.toml is now {watcher.moved_to}: watching with it from now on")
            app = _with_new_model(app, report)
    except KeyboardInterrupt:
        pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def _with_new_model(app: Recall, report: Callable[[str], None]) -> Recall:
    """A ``Recall`` with config.toml's model now, its index brought up to date first when the
    notes were indexed with another model (as the daemon does after a switch)."""
    from recall.api import Recall

    app.close()
    fresh = Recall(home=app.home)
    if fresh.switched_from() is not None:
        report(f"reading and embedding the notes with {fresh.embedder.model_id} first")
        fresh.index([])
    return fresh
