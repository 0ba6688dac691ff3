"""Questions that arrive together are embedded together: one model, one embedding thread.

The daemon answers each connection in its own worker thread, and every worker's
``Recall.query`` calls ``embed_queries([text])``. ``QueryBatcher`` wraps the model with
the same interface: each call is queued, and one thread embeds whatever is queued in a
single model call, then hands each caller its own row. Questions that arrive while an
embedding runs wait for it to end and go in the next call together, so a burst of ten
costs two model calls instead of ten calls in a row, and the search that follows runs
in the callers' threads, side by side.

A caller may say when its asker gives up (``give_up_at``, epoch seconds, per thread): a
question still queued past that moment is dropped before it costs any model time
(``Expired``), so a burst cannot snowball behind a slow call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from recall.embedding.models import Embedder, fit_query

if TYPE_CHECKING:
    import numpy as np


class Expired(Exception):
    """The asker gave up before its question reached the model."""


class _Ask:
    __slots__ = ("texts", "give_up_at", "done", "rows", "error")

    def __init__(self, texts: list[str], give_up_at: float | None) -> None:
        self.texts = texts
        self.give_up_at = give_up_at
        self.done = threading.Event()
        self.rows: Any = None
        self.error: BaseException | None = None


class QueryBatcher:
    """An ``Embedder`` whose ``embed_queries`` calls, from any threads, are batched."""

    def __init__(self, embedder: Embedder, *, max_batch: int, delay_s: float) -> None:
        """``max_batch``: ``[daemon] batch_max``; ``delay_s``: ``[daemon] debug_delay_ms`` / 1000."""
        self.inner = embedder
        self.dimension = embedder.dimension
        self.device = embedder.device
        self.symmetric = getattr(embedder, "symmetric", False)  # recall.ranking.calibration reuses stored vectors
        self.max_batch = max(1, max_batch)
        self.delay_s = delay_s  # test-only: every model call takes this much longer
        self.batches = 0  # model calls made
        self.in_flight = 0  # questions in the model call running now
        self._cond = threading.Condition()
        self._queue: list[_Ask] = []
        self._closed = False
        self._local = threading.local()
        self._thread = threading.Thread(target=self._run, name="recall-embed", daemon=True)
        self._thread.start()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @contextmanager
    def give_up_at(self, when: float | None) -> Iterator[None]:
        """Questions this thread asks inside the block are dropped once ``when`` passes."""
        self._local.give_up_at = when
        try:
            yield
        finally:
            self._local.give_up_at = None

    def fit_query(self, text: str) -> str:
        return fit_query(self.inner, text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        ask = _Ask(list(texts), getattr(self._local, "give_up_at", None))
        with self._cond:
            if self._closed:
                raise RuntimeError("the batcher is closed")
            self._queue.append(ask)
            self._cond.notify()
        ask.done.wait()
        if ask.error is not None:
            raise ask.error
        return ask.rows

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)  # indexing (the watcher): the model's own lock

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _take(self) -> list[_Ask] | None:
        """The next batch: every question queued now (up to max_batch); None once closed."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if not self._queue:
                return None
            batch: list[_Ask] = []
            count = 0
            while self._queue and (not batch or count + len(self._queue[0].texts) <= self.max_batch):
                ask = self._queue.pop(0)
                batch.append(ask)
                count += len(ask.texts)
            return batch

    def _run(self) -> None:
        while (batch := self._take()) is not None:
            now = time.time()
            live = []
            for ask in batch:
                if ask.give_up_at is not None and now > ask.give_up_at:
                    ask.error = Expired()
                    ask.done.set()
                else:
                    live.append(ask)
            if not live:
                continue
            self.in_flight = len(live)
            try:
                if self.delay_s:
                    time.sleep(self.delay_s)
                rows = self.inner.embed_queries([t for ask in live for t in ask.texts])
                self.batches += 1
                start = 0
                for ask in live:
                    ask.rows = rows[start:start + len(ask.texts)]
                    start += len(ask.texts)
            except BaseException as exc:  # noqa: BLE001 - every caller gets the error, the thread lives on
                for ask in live:
                    ask.error = exc
            finally:
                self.in_flight = 0
                for ask in live:
                    ask.done.set()
