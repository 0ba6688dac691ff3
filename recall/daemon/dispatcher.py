"""The daemon's dispatcher: a request's ``cmd`` -> its handler, and the workers that run them.

Quick commands (``inline``: ping, status, stop) and unknown ones are answered at once by the
reading thread; the others (questions) go to ``workers`` threads through a queue of
``max_queued``. When the queue is full the request is answered "busy" at once (the hook then
prints nothing, in time). A handler that raises answers ``{"ok": false, "error": <type>}``,
logged with its stack, never its message.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from recall.daemon.listener import Exchange
from recall.daemon.logs import log_event, log_exception
from recall.daemon.state import DaemonState

Request = dict[str, Any]  # a JSON object with "cmd" (recall.ipc.client.request sends it)
Reply = dict[str, Any]  # a JSON object with "ok"
Handler = Callable[[Request], Reply]


class Dispatcher:
    """Routes whole requests (``submit``, from the listener) to ``handlers`` by name."""

    def __init__(self, state: DaemonState, handlers: Mapping[str, Handler], inline: frozenset[str], *,
                 workers: int, max_queued: int) -> None:
        """``workers``: ``[daemon] batch_max``; ``max_queued``: ``[daemon] max_queued``."""
        self.state = state
        self.handlers = dict(handlers)
        self.inline = inline
        self.n_workers = max(1, workers)
        self._jobs: queue.Queue[Exchange | None] = queue.Queue(maxsize=max(1, max_queued))
        self._threads: list[threading.Thread] = []

    def dispatch(self, req: Request) -> Reply:
        cmd = req.get("cmd")
        handler = self.handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is None:
            return {"ok": False, "error": "unknown command"}
        try:
            return handler(req)
        except Exception as exc:  # noqa: BLE001
            log_exception(f"cmd_{cmd}", exc)
            return {"ok": False, "error": type(exc).__name__}

    def submit(self, exchange: Exchange) -> None:
        """From the reading thread: answer now (quick or unknown commands) or queue."""
        cmd = exchange.body.get("cmd")
        if not isinstance(cmd, str) or cmd in self.inline or cmd not in self.handlers:
            exchange.reply_nowait(self.dispatch(exchange.body))
            return
        try:
            self._jobs.put_nowait(exchange)
        except queue.Full:
            self.state.count_busy("queue full")
            exchange.reply_nowait({"ok": False, "error": "busy"})

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._work, name=f"recall-{i}", daemon=True)
                         for i in range(self.n_workers)]
        for thread in self._threads:
            thread.start()

    def stop(self, wait_s: float) -> None:
        """Tell the workers to end once the queue is empty, and wait up to ``wait_s`` for them:
        the questions already taken are answered before the process ends (the workers are
        daemon threads, which an exiting process would cut mid-reply). A question still
        queued whose asker has given up costs nothing (``Expired``)."""
        end = time.monotonic() + wait_s
        for _ in self._threads:
            try:
                self._jobs.put(None, timeout=max(0.0, end - time.monotonic()))
            except queue.Full:
                break
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))

    def _work(self) -> None:
        while (exchange := self._jobs.get()) is not None:
            try:
                with exchange:
                    exchange.reply(self.dispatch(exchange.body))
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                log_event("client gone")  # the hook's budget ran out first: normal under load
            except Exception as exc:  # noqa: BLE001 - one bad connection must not stop the daemon
                log_exception("connection", exc)
