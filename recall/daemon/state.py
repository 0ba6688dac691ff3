"""The daemon's state, shared by its parts: files (``files``), commands (``handlers``), loop (``server``)."""

from __future__ import annotations

import os
import queue
import selectors
import socket
import threading
import time
from typing import Any


class Conn:
    """A connection whose request is still being read."""

    __slots__ = ("sock", "buf", "deadline")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.deadline = deadline


class DaemonState:
    """Everything the daemon knows, set once here; ``server.Daemon`` is this plus its parts."""

    def __init__(self, model_id: str, *, transport: str = "unix", idle_exit_s: float = 6 * 3600,
                 request_timeout_s: float = 1.0, max_connections: int = 128, max_queued: int = 64,
                 workers: int = 32, lock_fd: int | None = None) -> None:
        self.app: Any = None  # set by set_ready() once the model and the index are loaded
        self.watcher: Any = None  # [watch] enabled: started by the loader once ready
        self.model_switch: dict | None = None  # a switch of model in progress (lifecycle.switch_model)
        self.config_stamp: tuple[int, int] | None = None  # config.toml when loaded (handlers._model_changed)
        self.ready = threading.Event()
        self.failed = False
        self.transport = transport
        self.idle_exit_s = idle_exit_s
        self.request_timeout_s = request_timeout_s
        self.max_connections = max(1, max_connections)
        self.n_workers = max(1, workers)
        self.lock_fd = lock_fd
        self.model_id = model_id
        self.device = ""
        self.started = time.time()
        self.load_s: float | None = None
        self.last_question = time.monotonic()
        self.queries = 0
        self.busy = 0  # requests answered "busy" (full queue, too many connections)
        self.timed_out = 0  # connections that did not send a whole request in time
        self.secret: str | None = None
        self.listener: socket.socket | None = None
        self.address = ""
        self.port = 0
        self._socket_id: tuple[int, int] | None = None
        self._status_id: tuple[int, int] | None = None
        self._jobs: queue.Queue = queue.Queue(maxsize=max(1, max_queued))
        self._conns: dict[socket.socket, Conn] = {}  # insertion order = oldest first
        self._sel: selectors.BaseSelector | None = None
        self._listening = False
        self._fd_short_until = 0.0  # listener resting after EMFILE until this (monotonic)
        self._fd_refused = 0
        self._spare_fd: int | None = self._open_spare()
        self._last_busy_log = 0.0
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def request_stop(self) -> None:
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    @staticmethod
    def _open_spare() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return None

