"""The daemon's listener: binds the socket, accepts, checks the peer, reads whole requests.

One thread (the loop's) reads every connection through a selector. A request is one line of
JSON that must arrive whole within ``request_timeout_s`` of the connect; at most
``max_connections`` are read at once (the oldest unfinished one is answered "busy" to make
room). A whole request becomes an ``Exchange`` (the JSON object and the way back to its
asker), handed to ``on_request`` (the dispatcher). Running out of file descriptors refuses the
waiting connection through a spare one, rests the listener briefly and keeps serving.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

from recall.daemon.files import keep_private_mode, remove_files
from recall.daemon.logs import log_event, log_exception
from recall.daemon.peer import check_peer, peer_uid, tcp_peer_allowed
from recall.daemon.state import DaemonState
from recall.ipc import client
from recall.privacy.paths import FILE_MODE, ensure_private_dir, file_id, private_open

# A request is a prompt as JSON with \\u escapes; the hook cuts prompts to a few thousand
# characters, so 1 MiB is far above any real one. A bigger one is answered "too long".
MAX_REQUEST_BYTES = 1 << 20
# A reply is a few KB and goes into an empty socket buffer; a peer that does not read it
# within this loses it, and the worker moves on.
REPLY_TIMEOUT_S = 1.0
# After running out of file descriptors, the listener rests this long before accepting again.
FD_BACKOFF_S = 0.2
# Connections the kernel holds for us between two accepts (a burst of hooks at once).
LISTEN_BACKLOG = 512
_FD_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"


def send_nowait(sock: socket.socket, reply: dict[str, Any]) -> None:
    """Best effort, never blocking the loop: a small reply into a fresh socket's buffer."""
    try:
        sock.setblocking(False)
        sock.send(_encode(reply))
    except OSError:
        pass
    finally:
        sock.close()


class Exchange:
    """One whole request (``body``, a JSON object) and the way back to its asker; with TCP the
    reply is signed with the asker's nonce. ``with exchange:`` closes the connection."""

    __slots__ = ("body", "sock", "nonce", "secret")

    def __init__(self, body: dict[str, Any], sock: socket.socket, nonce: str | None, secret: str | None) -> None:
        self.body = body
        self.sock = sock
        self.nonce = nonce
        self.secret = secret

    def _signed(self, reply: dict[str, Any]) -> dict[str, Any]:
        if self.nonce is not None and self.secret:
            reply["hmac"] = client.reply_hmac(self.secret, self.nonce)
        return reply

    def reply_nowait(self, reply: dict[str, Any]) -> None:
        """From the reading thread: never blocks; closes the connection."""
        send_nowait(self.sock, self._signed(reply))

    def reply(self, reply: dict[str, Any]) -> None:
        """From a worker: waits up to REPLY_TIMEOUT_S for the asker to take it."""
        self.sock.setblocking(True)
        self.sock.settimeout(REPLY_TIMEOUT_S)
        self.sock.sendall(_encode(self._signed(reply)))

    def __enter__(self) -> Exchange:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


class _Conn:
    """A connection whose request is still being read."""

    __slots__ = ("sock", "buf", "deadline")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.deadline = deadline


class Listener:
    """The socket and the connections being read: bind, accept, peer check, framing."""

    def __init__(self, state: DaemonState, on_request: Callable[[Exchange], None], *,
                 request_timeout_s: float, max_connections: int) -> None:
        """``on_request``: where whole requests go (``Dispatcher.submit``); ``request_timeout_s``
        and ``max_connections``: ``[daemon] request_timeout_ms`` / 1000 and ``max_connections``."""
        self.state = state
        self.on_request = on_request
        self.transport = state.transport
        self.request_timeout_s = request_timeout_s
        self.max_connections = max(1, max_connections)
        self.sock: socket.socket | None = None
        self.secret: str | None = None
        self._socket_id: tuple[int, int] | None = None
        self._conns: dict[socket.socket, _Conn] = {}  # insertion order = oldest first
        self._sel: selectors.BaseSelector | None = None
        self._listening = False
        self._fd_short_until = 0.0  # resting after EMFILE until this (monotonic)
        self._fd_refused = 0
        self._spare_fd: int | None = self._open_spare()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    # the socket
    def bind(self) -> None:
        if self.transport == "tcp":
            import secrets

            self.secret = secrets.token_hex(32)
            with private_open(client.secret_path()) as fh:
                fh.write(self.secret)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))  # loopback only, any free port
            self.state.port = sock.getsockname()[1]
            self.state.address = f"127.0.0.1:{self.state.port}"
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
            self.sock = sock
        else:
            self.sock = self._bind_unix()

    def _bind_unix(self) -> socket.socket:
        path = client.socket_path()
        ensure_private_dir(path.parent)
        remove_files(path)  # we hold the lock: an existing socket is a dead daemon's, or a stray file
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if len(os.fsencode(str(path))) < client.SUN_PATH_MAX:
                sock.bind(str(path))
            else:  # too long for sun_path: bind by name from inside the folder (our cwd)
                os.chdir(path.parent)
                sock.bind(path.name)
            os.chmod(path, FILE_MODE)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        st = os.stat(path)
        self._socket_id = (st.st_dev, st.st_ino)
        self.state.address = str(path)
        return sock

    def rebind_if_lost(self) -> bool:
        """A deleted or replaced socket file is bound anew; True when it was. Our own socket
        (or its folder) whose mode was changed (``chmod 000`` shuts every hook out, ``chmod
        777`` opens it to all) gets 0600 (0700) back."""
        if self.transport != "unix":
            return False
        path = client.socket_path()
        if file_id(path) == self._socket_id:
            keep_private_mode(path)
            return False
        try:
            new = self._bind_unix()
        except OSError as exc:
            log_exception("binding the socket again", exc)
            return False
        old, self.sock = self.sock, new
        if self._listening:
            assert self._sel is not None and old is not None
            self._sel.unregister(old)
            self._sel.register(new, selectors.EVENT_READ, "listen")
        if old is not None:
            old.close()
        log_event("socket lost", action="bound again")
        return True

    def close(self) -> None:
        """The socket and its file (or the TCP secret). The status file goes first (the loop's)."""
        if self.sock is not None:
            self.sock.close()
        if self.transport == "unix":
            remove_files(client.socket_path())
        else:
            remove_files(client.secret_path())

    # the selector: one round at a time, driven by the loop
    def open(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._listen(True)

    def wake(self) -> None:
        """Make a waiting ``poll`` return (a stop asked from another thread)."""
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def poll(self, timeout: float) -> None:
        """Wait up to ``timeout`` (less when a request's deadline or a backoff ends sooner),
        then accept, read and expire what is ready."""
        assert self._sel is not None
        now = time.monotonic()
        if not self._listening and now >= self._fd_short_until:
            try:
                self._listen(True)
            except (OSError, ValueError, KeyError) as exc:
                log_exception("listening again", exc)
                self._fd_short_until = now + FD_BACKOFF_S
        wake = [timeout]
        if self._conns:
            wake.append(next(iter(self._conns.values())).deadline - now)
        if not self._listening:
            wake.append(self._fd_short_until - now)
        for key, _ in self._sel.select(timeout=max(0.0, min(wake))):
            self._event(key.data)
        self._expire(time.monotonic())

    def shut(self) -> None:
        """End of the loop: drop the connections still being read, close the selector."""
        for conn in list(self._conns.values()):
            self._drop(conn)
        if self._sel is not None:
            self._sel.close()

    def _event(self, what: Any) -> None:
        """One ready descriptor: the wake-up pipe, the listener, or a connection being read."""
        try:
            if what == "wake":
                self._drain_wake()
            elif what == "listen":
                self._accept()
            else:
                self._read(what)
        except Exception as exc:  # noqa: BLE001 - one bad event must not stop the daemon
            log_exception("event loop", exc)

    def _drain_wake(self) -> None:
        try:
            self._wake_r.recv(64)
        except OSError:
            pass

    def _listen(self, on: bool) -> None:
        assert self._sel is not None and self.sock is not None
        if on and not self._listening:
            self._sel.register(self.sock, selectors.EVENT_READ, "listen")
        elif not on and self._listening:
            self._sel.unregister(self.sock)
        self._listening = on

    # accepting
    def _accept(self) -> None:
        assert self.sock is not None
        for _ in range(64):  # a bounded burst per wake-up, then the others get a turn
            try:
                sock, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _FD_ERRNOS:
                    self._out_of_fds(exc)
                    return
                raise
            if self._fd_refused and time.monotonic() - self._fd_short_until > 1.0:  # the episode is over
                log_event("file descriptors available again", refused=self._fd_refused)
                self._fd_refused = 0
            self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        if not (check_peer(peer_uid(sock)) if self.transport == "unix" else tcp_peer_allowed(sock)):
            self.state.count_refused("peer uid")
            sock.close()  # no reply, nothing read: tell a stranger nothing (TCP too: H3)
            return
        sock.setblocking(False)
        if len(self._conns) >= self.max_connections:
            # The oldest unfinished request has had the longest to arrive: it makes way.
            self._busy(next(iter(self._conns.values())), "too many connections")
        assert self._sel is not None
        conn = _Conn(sock, time.monotonic() + self.request_timeout_s)
        self._conns[sock] = conn
        self._sel.register(sock, selectors.EVENT_READ, conn)

    @staticmethod
    def _open_spare() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return None

    def _out_of_fds(self, exc: OSError) -> None:
        """EMFILE and friends: the waiting connection cannot be accepted. Refuse it through a
        spare descriptor (so its client hears at once instead of waiting), log one line per
        episode, rest the listener briefly, keep serving what is open."""
        if not self._fd_refused:
            log_event("out of file descriptors", errno=errno.errorcode.get(exc.errno or 0, "?"),
                      open_connections=len(self._conns), backoff_ms=FD_BACKOFF_S * 1000)
        self._fd_refused += 1
        if self._spare_fd is not None:
            os.close(self._spare_fd)
            self._spare_fd = None
            try:
                sock, _ = self.sock.accept()  # type: ignore[union-attr]
                sock.close()
            except OSError:
                pass
            self._spare_fd = self._open_spare()
        if self._conns:  # the oldest unfinished request frees its descriptor for the next one
            self._busy(next(iter(self._conns.values())), "no descriptor left")
        self._listen(False)
        self._fd_short_until = time.monotonic() + FD_BACKOFF_S

    # framing: whole requests, in time
    def _read(self, conn: _Conn) -> None:
        try:
            part = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        conn.buf += part
        if len(conn.buf) > MAX_REQUEST_BYTES:
            self._reply_now(conn, {"ok": False, "error": "request too long"})
            return
        if b"\n" in part or (not part and conn.buf):  # the buffer before held no newline
            self._unwatch(conn)
            self._request(conn.sock, bytes(conn.buf.split(b"\n", 1)[0]))
        elif not part:
            self._drop(conn)  # closed without a request

    def _expire(self, now: float) -> None:
        """Connections whose whole request did not arrive within request_timeout_s."""
        while self._conns:
            conn = next(iter(self._conns.values()))
            if conn.deadline > now:
                return
            self.state.timed_out += 1
            self._reply_now(conn, {"ok": False, "error": "request timed out"})

    def _unwatch(self, conn: _Conn) -> None:
        self._conns.pop(conn.sock, None)
        try:
            assert self._sel is not None
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _drop(self, conn: _Conn) -> None:
        self._unwatch(conn)
        conn.sock.close()

    def _reply_now(self, conn: _Conn, reply: dict[str, Any]) -> None:
        self._unwatch(conn)
        send_nowait(conn.sock, reply)

    def _busy(self, conn: _Conn, why: str) -> None:
        self.state.count_busy(why)
        self._reply_now(conn, {"ok": False, "error": "busy"})

    def _request(self, sock: socket.socket, raw: bytes) -> None:
        """A whole request line: a JSON object (with TCP: carrying the secret) for the dispatcher."""
        try:
            req = json.loads(raw)
        except (ValueError, RecursionError):  # nested past the parser's depth: not a request either
            send_nowait(sock, {"ok": False, "error": "request is not JSON"})
            return
        if not isinstance(req, dict):
            send_nowait(sock, {"ok": False, "error": "request is not an object"})
            return
        nonce = None
        if self.transport == "tcp":
            import hmac

            given = req.get("secret")
            if not (isinstance(given, str) and self.secret and hmac.compare_digest(given, self.secret)):
                self.state.count_refused("secret")
                sock.close()
                return
            nonce = str(req.get("nonce", ""))
        self.on_request(Exchange(req, sock, nonce, self.secret))
