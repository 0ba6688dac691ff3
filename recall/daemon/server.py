"""The daemon's loop: one thread reads every connection, workers answer whole requests."""

from __future__ import annotations

import errno
import json
import os
import queue
import selectors
import socket
import threading
import time
from typing import Any

from recall.daemon.files import DaemonFiles
from recall.daemon.handlers import COMMANDS, INLINE, Handlers
from recall.daemon.logs import log_event, log_exception
from recall.daemon.peer import check_peer, peer_uid
from recall.daemon.state import Conn
from recall.ipc import client

# A request is a prompt as JSON with \\u escapes; the hook cuts prompts to a few thousand
# characters, so 1 MiB is far above any real one. A bigger one is answered "too long".
MAX_REQUEST_BYTES = 1 << 20
# A reply is a few KB and goes into an empty socket buffer; a peer that does not read it
# within this loses it, and the worker moves on.
REPLY_TIMEOUT_S = 1.0
# How often the loop wakes to check the idle timer and its files (socket, status, lock):
# a deleted socket is bound anew within this.
POLL_S = 0.5
# After running out of file descriptors, the listener rests this long before accepting again.
FD_BACKOFF_S = 0.2
_FD_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _encode(reply: dict) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"


class Daemon(DaemonFiles, Handlers):
    """The resident daemon: its state (``state.DaemonState``), its files (``files``), its
    commands (``handlers``) and, here, the loop that reads connections and the workers."""

    def set_ready(self, app: Any, load_s: float) -> None:
        self.app = app
        self.device = str(getattr(app.embedder, "device", ""))
        self.load_s = load_s
        self.ready.set()
        try:
            self.write_status()
        except OSError as exc:
            log_exception("writing the status file", exc)

    # the loop: accept, read whole requests, hand them to the workers
    def serve_forever(self) -> str:
        """Accept until stopped, idle or unsafe to go on; returns why it stopped."""
        assert self.listener is not None
        sel = self._sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._listen(True)
        workers = [threading.Thread(target=self._work, name=f"recall-{i}", daemon=True)
                   for i in range(self.n_workers)]
        for w in workers:
            w.start()
        reason = "stopped"
        next_check = time.monotonic() + POLL_S
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                idle_left = self.idle_exit_s - (now - self.last_question)
                if idle_left <= 0:
                    reason = f"idle for {self.idle_exit_s:.0f} s"
                    break
                if now >= next_check:
                    next_check = now + POLL_S
                    try:
                        lost = self._check_files()
                    except Exception as exc:  # noqa: BLE001 - checked again next time
                        log_exception("checking the daemon's files", exc)
                        lost = None
                    if lost:
                        reason = lost
                        break
                if not self._listening and now >= self._fd_short_until:
                    try:
                        self._listen(True)
                    except (OSError, ValueError, KeyError) as exc:
                        log_exception("listening again", exc)
                        self._fd_short_until = now + FD_BACKOFF_S
                wake = [idle_left, next_check - now]
                if self._conns:
                    wake.append(next(iter(self._conns.values())).deadline - now)
                if not self._listening:
                    wake.append(self._fd_short_until - now)
                for key, _ in sel.select(timeout=max(0.0, min(wake))):
                    self._event(key.data)
                self._expire(time.monotonic())
        finally:
            for conn in list(self._conns.values()):
                self._drop(conn)
            for _ in workers:
                try:
                    self._jobs.put_nowait(None)
                except queue.Full:
                    break
            sel.close()
        return reason

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
        assert self._sel is not None and self.listener is not None
        if on and not self._listening:
            self._sel.register(self.listener, selectors.EVENT_READ, "listen")
        elif not on and self._listening:
            self._sel.unregister(self.listener)
        self._listening = on

    def _accept(self) -> None:
        assert self.listener is not None
        for _ in range(64):  # a bounded burst per wake-up, then the others get a turn
            try:
                sock, _ = self.listener.accept()
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
        if self.transport == "unix" and not check_peer(peer_uid(sock)):
            log_event("refused", why="peer uid")
            sock.close()  # no reply: tell a stranger nothing
            return
        sock.setblocking(False)
        if len(self._conns) >= self.max_connections:
            # The oldest unfinished request has had the longest to arrive: it makes way.
            self._busy(next(iter(self._conns.values())), "too many connections")
        assert self._sel is not None
        conn = Conn(sock, time.monotonic() + self.request_timeout_s)
        self._conns[sock] = conn
        self._sel.register(sock, selectors.EVENT_READ, conn)

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
                sock, _ = self.listener.accept()  # type: ignore[union-attr]
                sock.close()
            except OSError:
                pass
            self._spare_fd = self._open_spare()
        if self._conns:  # the oldest unfinished request frees its descriptor for the next one
            self._busy(next(iter(self._conns.values())), "no descriptor left")
        self._listen(False)
        self._fd_short_until = time.monotonic() + FD_BACKOFF_S

    def _read(self, conn: Conn) -> None:
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
            self.timed_out += 1
            self._reply_now(conn, {"ok": False, "error": "request timed out"})

    def _unwatch(self, conn: Conn) -> None:
        self._conns.pop(conn.sock, None)
        try:
            assert self._sel is not None
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _drop(self, conn: Conn) -> None:
        self._unwatch(conn)
        conn.sock.close()

    def _reply_now(self, conn: Conn, reply: dict) -> None:
        self._unwatch(conn)
        self._send_nowait(conn.sock, reply)

    def _busy(self, conn: Conn, why: str) -> None:
        self.busy += 1
        self._note_busy(why)
        self._reply_now(conn, {"ok": False, "error": "busy"})

    def _note_busy(self, why: str) -> None:
        now = time.monotonic()
        if now - self._last_busy_log >= 1.0:  # one line a second at most, under a flood
            self._last_busy_log = now
            log_event("busy", why=why, busy_total=self.busy)

    @staticmethod
    def _send_nowait(sock: socket.socket, reply: dict) -> None:
        """Best effort, never blocking the loop: a small reply into a fresh socket's buffer."""
        try:
            sock.setblocking(False)
            sock.send(_encode(reply))
        except OSError:
            pass
        finally:
            sock.close()

    def _request(self, sock: socket.socket, raw: bytes) -> None:
        """A whole request line: answer it here (ping, status, stop, errors) or queue it."""
        try:
            req = json.loads(raw)
        except ValueError:
            self._send_nowait(sock, {"ok": False, "error": "request is not JSON"})
            return
        if not isinstance(req, dict):
            self._send_nowait(sock, {"ok": False, "error": "request is not an object"})
            return
        nonce = None
        if self.transport == "tcp":
            import hmac

            given = req.get("secret")
            if not (isinstance(given, str) and self.secret and hmac.compare_digest(given, self.secret)):
                log_event("refused", why="secret")
                sock.close()
                return
            nonce = str(req.get("nonce", ""))
        if req.get("cmd") in INLINE or req.get("cmd") not in COMMANDS:
            self._send_nowait(sock, self._sign(self.dispatch(req), nonce))
            return
        try:
            self._jobs.put_nowait((sock, req, nonce))
        except queue.Full:
            self.busy += 1
            self._note_busy("queue full")
            self._send_nowait(sock, self._sign({"ok": False, "error": "busy"}, nonce))

    def _sign(self, reply: dict, nonce: str | None) -> dict:
        if nonce is not None and self.secret:
            reply["hmac"] = client.reply_hmac(self.secret, nonce)
        return reply

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            sock, req, nonce = job
            try:
                with sock:
                    reply = self._sign(self.dispatch(req), nonce)
                    sock.setblocking(True)
                    sock.settimeout(REPLY_TIMEOUT_S)
                    sock.sendall(_encode(reply))
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                log_event("client gone")  # the hook's budget ran out first: normal under load
            except Exception as exc:  # noqa: BLE001 - one bad connection must not stop the daemon
                log_exception("connection", exc)

