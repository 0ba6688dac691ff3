"""The MCP server's replies, written by a thread of their own to a private duplicate of fd 1.

The event loop hands each reply over (a queue put, no thread hop awaited) and never waits on the
client: a client that stops reading used to hold the loop in a blocking ``os.write``, so the end
of stdin and ``DRAIN_S`` were never seen (alive 120 s after its input closed). The writer waits
for a descriptor that refuses to block (stdin and stdout one socket or terminal: asyncio's
reader made their shared file description non-blocking, and ``EAGAIN`` ended the server), and a
client that closed its end, or left ``MAX_UNREAD_BYTES`` unread, ends the server with one line
(``ClientGone``; it was a 40-line traceback). An outside tester's D4 and D5.
"""

from __future__ import annotations

import os
import queue
import select
import threading
from typing import Any

from recall.errors import RecallError
from recall.mcp.ids import answered_id

# What a client that reads nothing while it keeps asking is let leave unread before it is gone.
MAX_UNREAD_BYTES = 64 << 20
# How long a server that is done waits for its last replies to be taken (after ``DRAIN_S``).
CLOSE_S = 2.0


class ClientGone(RecallError):
    """The client closed its end of stdout, or left too much unread: the server ends (rc 1)."""


class Stdout:
    """The SDK's writer. It also knows which requests are still owed an answer (``asked``,
    ``dropped``, an answer written), so that input ending after a request does not end the server
    before its answer (``drained``): the SDK cancels what is in flight when its input ends."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.owed: set[Any] = set()
        self.gone: str | None = None
        self._settled: Any = None  # an anyio.Event while ``drained`` waits
        self._gone_event: Any = None
        self._queue: queue.SimpleQueue[tuple[bytes, Any] | None] = queue.SimpleQueue()
        self._unread = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._call: Any = None

    def start(self) -> None:
        """Start the writer; on the event loop, which the writer reports back to."""
        import asyncio

        import anyio

        self._call = asyncio.get_running_loop().call_soon_threadsafe
        self._gone_event = anyio.Event()
        self._thread = threading.Thread(target=self._writer, name="recall-mcp-stdout", daemon=True)
        self._thread.start()

    async def write(self, text: str) -> None:
        if self.gone is not None:
            return
        data = text.encode("utf-8")
        with self._lock:
            self._unread += len(data)
            unread = self._unread
        if unread > MAX_UNREAD_BYTES:
            self._went(f"the client left {unread >> 20} MiB of answers unread")
            return
        self._queue.put((data, answered_id(text) if self.owed else None))

    async def flush(self) -> None:
        return None

    async def wait_gone(self) -> None:
        await self._gone_event.wait()

    def close(self, timeout_s: float = CLOSE_S) -> bool:
        """Let the writer finish what it holds, for at most ``timeout_s``: True once it has (the
        descriptor is then ours to close), False while it still waits on the client."""
        if self._thread is None:
            return True
        self._queue.put(None)
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _writer(self) -> None:
        while (item := self._queue.get()) is not None:
            data, msg_id = item
            try:
                _write_all(self.fd, data)
            except OSError as exc:  # EPIPE: the client closed its end
                self._report(self._went, f"the client closed its end of stdout ({exc.strerror or exc})")
                return
            with self._lock:
                self._unread -= len(data)
            if msg_id is not None:
                self._report(self.dropped, msg_id)

    def _report(self, fn: Any, arg: Any) -> None:
        try:
            self._call(fn, arg)
        except RuntimeError:  # the loop is closed: the server has ended
            pass

    def _went(self, reason: str) -> None:
        if self.gone is None:
            self.gone = reason
            self._gone_event.set()

    def asked(self, msg_id: Any) -> None:
        self.owed.add(msg_id)

    def dropped(self, msg_id: Any) -> None:
        """``msg_id`` is owed nothing more (answered, or cancelled by the client). What a client
        names that no request can have (a list, an object: a cancellation's ``requestId`` is
        anything a client writes) is nothing owed: ``set.discard`` of a list ended the server
        (an outside tester's, stop 55)."""
        if isinstance(msg_id, bool) or not isinstance(msg_id, str | int):
            return
        self.owed.discard(msg_id)
        if not self.owed and self._settled is not None:
            self._settled.set()

    async def drained(self, timeout_s: float) -> None:
        """Once every request read has its answer written, or after ``timeout_s``."""
        import anyio

        with anyio.move_on_after(timeout_s):
            while self.owed:
                self._settled = anyio.Event()
                await self._settled.wait()


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``, waiting while a non-blocking descriptor is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            poller.poll(1000)  # then write again: EPIPE if the client has gone
