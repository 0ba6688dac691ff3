"""Documents converted beside the writer, so that a saved note never waits for one.

The watcher has one writer thread (``recall.watch``): it reads what changed, embeds it and
writes it. A document's conversion can take minutes (OCR of a recording's frames, a long
PDF); done by the writer, every note saved meanwhile waited for it (an outside tester's
stalled converter held a saved note for good). With ``ConvertAhead`` the writer never
converts: ``recall.notes.documents.read_document`` asks ``take`` for the file's conversion by
its content key, and a file not converted yet is ``want``ed and kept as the store has it (an
unchanged note). This thread converts the wanted files one at a time in one child
(``isolated.Converter``, with its limits) and hands the paths back (``done``; together while
more wait, at least every ``HAND_BACK_S``: a folder of new PDFs is a few rebuilds, not one a
file), for the writer to read again and find their conversions here::

    ahead = ConvertAhead(opts, done=lambda paths: watcher.queue(paths)).start()
    indexer.ahead = ahead
    ...
    ahead.stop()  # ends a conversion under way at once

A conversion that failed is kept as its exception, for the writer to say in one line as
``read_document`` always did. What is kept is bounded (``KEEP``): a file converted and
changed again before the writer read it is converted again when wanted.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from recall.notes.documents import checked_copy, content_key, file_digest, format_of
from recall.notes.documents.convert import Extracted, Unreadable
from recall.notes.documents.isolated import Converter

if TYPE_CHECKING:
    from recall.config.settings import DocumentsSettings

KEEP = 64  # conversions kept for the writer at most (the oldest go first)
HAND_BACK_S = 5.0  # converted files are handed back together, at least this often, while more wait


class ConvertAhead:
    """One thread and one converter child; see the module doc."""

    def __init__(self, opts: DocumentsSettings, done: Callable[[list[str]], None]) -> None:
        self.opts = opts
        self._done = done
        self._cond = threading.Condition()
        self._wanted: dict[str, tuple[Path, Path, str]] = {}  # path -> (path, root, source kind)
        self._results: OrderedDict[str, Extracted | Exception] = OrderedDict()  # content key -> conversion
        self._busy = False
        self._stopping = False
        self._converter: Converter | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ConvertAhead:
        self._thread = threading.Thread(target=self._run, name="recall-convert", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop, ending a conversion under way (its child is killed): nothing waits for it."""
        with self._cond:
            self._stopping = True
            converter = self._converter
            self._cond.notify_all()
        if converter is not None:
            converter.interrupt()
        if self._thread is not None:
            self._thread.join(timeout)

    def idle(self) -> bool:
        """Whether nothing is wanted or being converted."""
        with self._cond:
            return not (self._wanted or self._busy)

    # --- the writer's side (``read_document``) ------------------------------
    def take(self, key: str) -> Extracted | Exception | None:
        with self._cond:
            return self._results.pop(key, None)

    def want(self, path: Path, root: Path, source_kind: str) -> None:
        with self._cond:
            self._wanted[str(path)] = (path, root, source_kind)
            self._cond.notify_all()

    # --- the converter's thread ---------------------------------------------
    def _run(self) -> None:
        finished: list[str] = []
        last = time.monotonic()
        with Converter(self.opts.convert_max_mb, self.opts.convert_timeout_s) as converter:
            with self._cond:
                self._converter = converter
            while (item := self._next()) is not None:
                try:
                    self._convert(converter, *item)
                    finished.append(str(item[0]))
                    # Handed back in groups (one index rebuild each), at least every HAND_BACK_S, and
                    # before idle: a waiter sees one or the other.
                    if not self._stopping and (not self._wanted or time.monotonic() - last >= HAND_BACK_S):
                        self._done(finished)
                        finished, last = [], time.monotonic()
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()

    def _next(self) -> tuple[Path, Path, str] | None:
        with self._cond:
            while not (self._wanted or self._stopping):
                self._cond.wait()
            if self._stopping:
                return None
            self._busy = True
            return self._wanted.pop(next(iter(self._wanted)))

    def _convert(self, converter: Converter, path: Path, root: Path, source_kind: str) -> None:
        kind_fmt = format_of(path, self.opts, source_kind)
        if kind_fmt is None:
            return
        note_type, fmt = kind_fmt
        try:  # what read_document checks before it converts (its size cap, a folder) it says itself
            if not path.is_file() or path.stat().st_size > self.opts.max_file_mb * 1_000_000:
                return
            key = content_key(file_digest(path, root), fmt, self.opts)
        except OSError:
            return
        result: Extracted | Exception
        try:
            with checked_copy(path, root) as copy:  # what is converted is inside the folder
                result = converter(copy, note_type, fmt, self.opts.frame_every_s)
        except (Unreadable, ImportError, OSError) as exc:
            result = exc
        if self._stopping:
            return
        with self._cond:
            self._results[key] = result
            while len(self._results) > KEEP:
                self._results.popitem(last=False)
