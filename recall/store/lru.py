"""A bounded cache: what the daemon keeps per request input (a message's folder, its project's
scope) has a size, however many folders its sessions come from.

An outside tester's 8,000 sessions in distinct folders grew the daemon by 49 MiB: each new
project's scope left its masks and FAISS selector in the index's cache for good. Not
``functools.lru_cache``: the values here are computed in several steps by their callers, and
the daemon's workers read and fill the cache at once (hence the lock).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class Lru:
    """At most ``size`` entries; a ``get`` or ``put`` makes its entry the newest, and a ``put``
    past the size drops the oldest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key``; returns ``value``."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value
