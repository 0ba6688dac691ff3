"""Calls on the disk that may never return, run in a small pool and waited for a bounded time.

On a stale network mount (sshfs, NFS) a ``stat`` never returns: a worker of the daemon that
made one itself stayed stuck in the kernel, and after 40 messages no session got an answer
(stop 46). ``Bounded.run`` makes the call in a pool of its own and waits at most ``wait_s``;
past it, or while ``workers`` calls are still under way (stuck), the caller gets ``fallback``
and nothing is started. Its users: each message's project (``recall.daemon.roots``), the
files of the notes an answer hands over (``recall.indexing.ondisk``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late
from typing import TypeVar

T = TypeVar("T")


class Bounded:
    def __init__(self, workers: int, wait_s: float, name: str) -> None:
        self.workers = workers
        self.wait_s = wait_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._under_way = 0

    def run(self, call: Callable[[], T], fallback: T, wait_s: float | None = None) -> T:
        """``call()`` within ``wait_s`` (default the pool's), else ``fallback``; ``call`` must not
        raise (what it returns is the answer, whenever it ends: a late one is dropped)."""
        with self._lock:
            if self._under_way >= self.workers:
                return fallback
            self._under_way += 1
        try:
            return self._pool.submit(self._counted, call).result(timeout=self.wait_s if wait_s is None else wait_s)
        except Late:
            return fallback

    def _counted(self, call: Callable[[], T]) -> T:
        try:
            return call()
        finally:
            with self._lock:
                self._under_way -= 1
