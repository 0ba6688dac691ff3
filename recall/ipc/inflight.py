"""The exchange with the daemon in flight: its socket, and its reply read without waiting.

A hook held past its budget before it read the daemon's answer (its process stalled, or the
syscall did) ends with nothing printed (``recall.agents.deadline``); the daemon, which answered in
time, logged that answer as handed over. The hook's last word reads the reply waiting unread on
the socket here, for its ``ref``, and tells the daemon it never reached the agent (``unsent``), so
that ``recall log --stats`` and the page count it as none.

Standard library only: the hook imports this on every message (``recall.ipc.client`` opens its
sockets here)."""

from __future__ import annotations

import json
import os
import socket

_current: socket.socket | None = None  # the last socket opened to the daemon (the hook asks one question at a time)


def opened(family: int) -> socket.socket:
    """A new stream socket of ``family`` for one exchange, remembered as the one in flight."""
    global _current
    sock = socket.socket(family, socket.SOCK_STREAM)
    _current = sock
    return sock


def unread_reply_ref(limit: int = 1 << 20) -> str:
    """The ``ref`` of a reply that waits unread on the exchange in flight, or "" (none in flight, no
    reply yet, not an answer). Reads without waiting, with ``read`` on a copy of the descriptor (not
    ``recv``, the call the stalled reader is held in); what it reads is not the daemon's proof of
    anything, only the reference it gave its answer."""
    sock = _current
    if sock is None:
        return ""
    try:
        fd = os.dup(sock.fileno())  # closed: fileno() is -1 and dup refuses it
    except (OSError, ValueError):
        return ""
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, limit)
    except OSError:  # nothing there yet (EAGAIN), or not a socket any more
        return ""
    finally:
        os.close(fd)
    try:
        reply = json.loads(data.split(b"\n", 1)[0])
    except (ValueError, RecursionError):
        return ""
    ref = reply.get("ref") if isinstance(reply, dict) and reply.get("ok") is True else None
    return ref if isinstance(ref, str) else ""
