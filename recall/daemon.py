"""The resident search daemon: the model and the index loaded once, kept warm.

The hook is a new process per message; loading a model there would cost seconds. The
daemon loads it once and answers each question in milliseconds. Its shape is mypy's
dmypy: one JSON request and one JSON reply per connection, dispatched to
``cmd_<name>`` (query, status, stop, ping); a status file that clients check before
they trust it; a foreground mode for debugging (``recall serve --foreground``).

Fast to answer its first question: the socket is bound and the status file written
before anything heavy is imported; the model and the index load in a thread meanwhile,
and questions that arrive during the load wait for it (within their asker's deadline).
``ping`` answers at once and says whether the model is ``ready``. A model that cannot load
ends the daemon (exit 1) and leaves ``run/daemon.failed``, so hooks stop waiting for starts
that fail until one succeeds.

Never starved, never wedged (every bound is in ``[daemon]`` of the config):

* one thread reads every connection (a selector): a request must arrive whole within
  ``request_timeout_ms`` from the connect, however it is sliced; at most
  ``max_connections`` are read at once, and when full the oldest unfinished one is
  answered "busy" and closed, so an idle or slow flood cannot hold out a live hook;
* whole requests go to ``workers`` threads through a queue of ``max_queued``; when it is
  full the request is answered "busy" at once (the hook then prints nothing, in time);
* questions are embedded in batches (``recall.batcher``): those that arrive while the
  model runs go in its next call together, each cut to one window of the model
  (``recall.embedders.fit_query``); a question whose asker gave up is dropped unembedded;
* running out of file descriptors in ``accept()`` logs one line, refuses the waiting
  connection through a spare descriptor, backs off briefly and keeps serving;
* its files are checked every ``POLL_S``: a deleted or replaced socket is bound anew, a
  deleted status file written anew; a lost lock file makes it exit (it no longer keeps
  a second daemon out). The lock file holds its pid, so ``recall stop`` / ``recall
  status`` find it even without its socket or status file.

Private by construction:

* files live in ``run_dir()`` (0700): the socket (0600), the status file (0600), the
  lock, and for TCP the shared secret (0600);
* on a UNIX socket the peer's uid is read from the kernel (SO_PEERCRED on Linux,
  LOCAL_PEERCRED on macOS/BSD) and anyone but this user is refused without a reply;
* with ``daemon.transport = "tcp"`` (Windows) it listens on 127.0.0.1 only, requests
  must carry the secret, and replies are signed (see ``recall.client``);
* the log (0600, rotated) records what was handed over: note ids, scores, bytes,
  timings, the decision. Never the prompt, and never an exception's message (which
  could quote it).

One daemon per user (an fcntl lock held for its life). It exits by itself after
``daemon.idle_exit_hours`` without a question, on ``recall stop`` and on SIGTERM,
removing its socket and status file. A re-built index is picked up without a restart:
``Recall.query`` checks the index's ``current`` marker on every question.
"""

from __future__ import annotations

import errno
import json
import logging
import logging.handlers
import os
import queue
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from . import client
from .paths import FILE_MODE, ensure_private_dir, private_open, recall_home, run_dir

COMMANDS = ("query", "status", "stop", "ping", "explain")
INLINE = ("status", "stop", "ping")  # answered by the reading thread at once, never queued
# A request is a prompt as JSON with \\u escapes; the hook cuts prompts to a few thousand
# characters, so 1 MiB is far above any real one. A bigger one is answered "too long".
MAX_REQUEST_BYTES = 1 << 20
# A reply is a few KB and goes into an empty socket buffer; a peer that does not read it
# within this loses it, and the worker moves on.
REPLY_TIMEOUT_S = 1.0
# How often the loop wakes to check the idle timer and its files (socket, status, lock):
# a deleted socket is bound anew within this.
POLL_S = 0.5
# Connections the kernel holds for us between two accepts (a burst of hooks at once).
LISTEN_BACKLOG = 512
# After running out of file descriptors, the listener rests this long before accepting again.
FD_BACKOFF_S = 0.2
# Questions asked without a deadline wait at most this long for the model to load.
LOAD_WAIT_S = 120.0
RANKED_IN_REPLY = 11  # the ranks the gap rule looks at
# Test-only: a uid the daemon expects instead of its own, to exercise refusal
# without a second user account. Only ever makes the daemon refuse more.
EXPECTED_UID_ENV = "RECALL_DAEMON_EXPECTED_UID"
_FD_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

log = logging.getLogger("recall.daemon")


# --- who is calling --------------------------------------------------------------

# Linux: struct ucred {pid_t pid; uid_t uid; gid_t gid}
_UCRED = struct.Struct("3i")
# macOS/BSD: struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]}
_XUCRED_PREFIX = struct.Struct("2I")
_XUCRED_SIZE = 4 + 4 + 2 + 2 + 16 * 4  # with the padding after cr_ngroups
SOL_LOCAL, LOCAL_PEERCRED = 0, 1


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a UNIX socket, from the kernel."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            return int(_UCRED.unpack(raw)[1])
        raw = conn.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE)  # macOS, BSD (getpeereid)
        return int(_XUCRED_PREFIX.unpack(raw[: _XUCRED_PREFIX.size])[1])
    except (OSError, struct.error):
        return None


def expected_uid() -> int:
    override = os.environ.get(EXPECTED_UID_ENV)
    return int(override) if override else os.getuid()


def check_peer(uid: int | None, expected: int | None = None) -> bool:
    """Only this user may ask. An unknown uid is refused (fail closed)."""
    return uid is not None and uid == (expected_uid() if expected is None else expected)


# --- single instance ---------------------------------------------------------------


def acquire_lock(path: Path) -> int | None:
    """Hold an exclusive lock on ``path`` for the life of the process; None if taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def lock_is_free() -> bool:
    """Whether no daemon holds the lock. The lock goes with the process (even a zombie
    not yet reaped holds none), so this is the test that a daemon has exited."""
    fd = acquire_lock(client.lock_path())
    if fd is None:
        return False
    os.close(fd)
    return True


def remove_files(*paths: Path) -> int:
    removed = 0
    for p in paths:
        try:
            p.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def clean_stale() -> int:
    """Remove a dead daemon's socket, status and secret files; how many there were.
    Only done while holding the lock: then no live daemon can own them."""
    ensure_private_dir(run_dir())
    fd = acquire_lock(client.lock_path())
    if fd is None:
        return 0
    try:
        return remove_files(client.status_path(), client.socket_path(), client.secret_path())
    finally:
        os.close(fd)


# --- the log ------------------------------------------------------------------------


def log_path() -> Path:
    return recall_home() / "logs" / "daemon.log"


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file is 0600 (rotation renames, so backups keep it)."""

    def _open(self):  # type: ignore[override]
        return private_open(Path(self.baseFilename), "a", encoding=self.encoding)


def setup_logging(config: Any, foreground: bool) -> None:
    ensure_private_dir(log_path().parent)
    log.handlers.clear()
    log.setLevel(logging.INFO)
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    handler = PrivateRotatingFileHandler(
        log_path(), maxBytes=config.log.max_bytes,
        backupCount=config.log.backups, encoding="utf-8",
    )
    handler.setFormatter(fmt)
    log.addHandler(handler)
    if foreground:
        err = logging.StreamHandler(sys.stderr)
        err.setFormatter(fmt)
        log.addHandler(err)


def log_event(event: str, **fields: Any) -> None:
    log.info("%s %s", event, json.dumps(fields, ensure_ascii=False, sort_keys=True))


def log_exception(where: str, exc: BaseException) -> None:
    # The type and the stack (file, line, code), never str(exc): a message may quote input.
    frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
    log.error("%s failed: %s\n%s", where, type(exc).__name__, frames)


# --- the server ------------------------------------------------------------------------


class _Conn:
    """A connection whose request is still being read."""

    __slots__ = ("sock", "buf", "deadline")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.deadline = deadline


class _NotNow(Exception):
    """A question that cannot be asked now: no prompt, the model still loading, the asker gone."""

    def __init__(self, error: str) -> None:
        self.error = error


def _encode(reply: dict) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"


class Daemon:
    def __init__(self, model_id: str, *, transport: str = "unix", idle_exit_s: float = 6 * 3600,
                 request_timeout_s: float = 1.0, max_connections: int = 128, max_queued: int = 64,
                 workers: int = 32, lock_fd: int | None = None) -> None:
        self.app: Any = None  # set by set_ready() once the model and the index are loaded
        self.watcher: Any = None  # [watch] enabled: started by the loader once ready
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
        self._conns: dict[socket.socket, _Conn] = {}  # insertion order = oldest first
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

    # lifecycle
    def bind(self) -> None:
        if self.transport == "tcp":
            import secrets

            self.secret = secrets.token_hex(32)
            with private_open(client.secret_path()) as fh:
                fh.write(self.secret)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))  # loopback only, any free port
            self.port = sock.getsockname()[1]
            self.address = f"127.0.0.1:{self.port}"
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
            self.listener = sock
        else:
            self.listener = self._bind_unix()

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
        self.address = str(path)
        return sock

    def write_status(self) -> None:
        """Written after bind (and again once ready), atomically: a reader sees all of it or none."""
        status = {
            "pid": os.getpid(), "socket": self.address, "model": self.model_id, "device": self.device,
            "started": self.started, "transport": self.transport, "port": self.port,
            "protocol": client.PROTOCOL, "ready": self.ready.is_set(),
        }
        tmp = client.status_path().with_suffix(".tmp")
        with private_open(tmp) as fh:
            json.dump(status, fh)
        os.replace(tmp, client.status_path())
        st = os.stat(client.status_path())
        self._status_id = (st.st_dev, st.st_ino)

    def set_ready(self, app: Any, load_s: float) -> None:
        self.app = app
        self.device = str(getattr(app.embedder, "device", ""))
        self.load_s = load_s
        self.ready.set()
        try:
            self.write_status()
        except OSError as exc:
            log_exception("writing the status file", exc)

    def request_stop(self) -> None:
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def close(self) -> None:
        """Status file first (clients stop trusting it), then the socket."""
        remove_files(client.status_path())
        if self.listener is not None:
            self.listener.close()
        if self.transport == "unix":
            remove_files(client.socket_path())
        else:
            remove_files(client.secret_path())
        close_batcher = getattr(getattr(self.app, "embedder", None), "close", None)
        if close_batcher is not None:
            close_batcher()

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
                    try:
                        if key.data == "wake":
                            self._drain_wake()
                        elif key.data == "listen":
                            self._accept()
                        else:
                            self._read(key.data)
                    except Exception as exc:  # noqa: BLE001 - one bad event must not stop the daemon
                        log_exception("event loop", exc)
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
        conn = _Conn(sock, time.monotonic() + self.request_timeout_s)
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

    @staticmethod
    def _open_spare() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return None

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
            self.timed_out += 1
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

    def _reply_now(self, conn: _Conn, reply: dict) -> None:
        self._unwatch(conn)
        self._send_nowait(conn.sock, reply)

    def _busy(self, conn: _Conn, why: str) -> None:
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

    def _check_files(self) -> str | None:
        """Our socket, status and lock files still ours? Rebind / rewrite; a reason to exit if
        the lock file is gone (then nothing keeps a second daemon from starting beside us)."""
        if self.lock_fd is not None:
            fst = os.fstat(self.lock_fd)
            if _file_id(client.lock_path()) != (fst.st_dev, fst.st_ino):
                log_event("lock file lost", action="exit")
                return "lock file lost"
        if self.transport == "unix" and _file_id(client.socket_path()) != self._socket_id:
            try:
                new = self._bind_unix()
            except OSError as exc:
                log_exception("binding the socket again", exc)
                return None
            old, self.listener = self.listener, new
            if self._listening:
                assert self._sel is not None and old is not None
                self._sel.unregister(old)
                self._sel.register(new, selectors.EVENT_READ, "listen")
            if old is not None:
                old.close()
            log_event("socket lost", action="bound again")
            self._status_id = None  # the status names the socket: write it again
        if _file_id(client.status_path()) != self._status_id:
            try:
                self.write_status()
            except OSError as exc:
                log_exception("writing the status file", exc)
        return None

    def dispatch(self, req: dict) -> dict:
        cmd = req.get("cmd")
        if cmd not in COMMANDS:
            return {"ok": False, "error": "unknown command"}
        try:
            return getattr(self, f"cmd_{cmd}")(req)
        except Exception as exc:  # noqa: BLE001
            log_exception(f"cmd_{cmd}", exc)
            return {"ok": False, "error": type(exc).__name__}

    # commands
    def cmd_ping(self, req: dict) -> dict:
        return {"ok": True, "pid": os.getpid(), "model": self.model_id, "ready": self.ready.is_set()}

    def cmd_status(self, req: dict) -> dict:
        idx = self.app.searcher.index if self.app is not None else None
        batcher = getattr(self.app, "embedder", None)
        return {
            "ok": True, "pid": os.getpid(), "model": self.model_id, "device": self.device,
            "transport": self.transport, "socket": self.address, "started": self.started,
            "uptime_s": round(time.time() - self.started, 1), "queries": self.queries,
            "idle_exit_s": self.idle_exit_s, "ready": self.ready.is_set(), "load_s": self.load_s,
            "index_generation": None if idx is None else idx.generation,
            "model_calls": getattr(batcher, "batches", None), "embedding": getattr(batcher, "in_flight", 0),
            "busy": self.busy, "timed_out": self.timed_out,
        }

    def cmd_stop(self, req: dict) -> dict:
        log_event("stop", by="request")
        self.request_stop()
        return {"ok": True, "stopping": True}

    def _ask(self, req: dict) -> tuple[Any, str]:
        """Run one question through the core: waits for the model while it loads, within the
        asker's deadline; embedded in a batch with the questions that arrive meanwhile."""
        prompt, cwd = req.get("prompt"), req.get("cwd")
        if not isinstance(prompt, str):
            raise _NotNow("no prompt")
        self.last_question = time.monotonic()
        give_up_at = req.get("give_up_at")  # the asker's deadline (epoch seconds), if any
        if not isinstance(give_up_at, int | float) or isinstance(give_up_at, bool):
            give_up_at = None
        t0 = time.perf_counter()
        if not self.ready.is_set():  # still loading: wait, within the asker's time
            wait = LOAD_WAIT_S if give_up_at is None else give_up_at - time.time()
            if not self.ready.wait(max(0.0, wait)):
                log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1), loading=True)
                raise _NotNow("loading")
        from .api import project_key
        from .batcher import Expired
        from .embedders import QUERY_CHARS_MAX
        from .search import Scope

        project = project_key(cwd if isinstance(cwd, str) and cwd else Path.home())
        app = self.app
        try:
            # The daemon's own cut (the core cuts again, exactly, to one window of the model).
            with app.embedder.give_up_at(give_up_at):
                return app.query(prompt[:QUERY_CHARS_MAX], Scope(project=project), project), project
        except Expired:
            # Under a burst, questions queue for the model; one whose asker has already
            # given up is skipped instead of delaying everyone behind it.
            log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1))
            raise _NotNow("expired") from None

    def cmd_query(self, req: dict) -> dict:
        from .selector import hook_line

        t0 = time.perf_counter()
        try:
            res, project = self._ask(req)
        except _NotNow as exc:
            return {"ok": False, "error": exc.error}
        wall_ms = (time.perf_counter() - t0) * 1000
        self.queries += 1
        d = res.decision
        timings = {k: round(v, 2) for k, v in res.timings.items()}
        timings["daemon_ms"] = round(wall_ms, 2)
        decision = d.as_dict()
        chosen = [{"id": c["id"], "score": c["score"]} for c in decision["chosen"]]
        log_event("query", decision=d.kind, reason=d.reason, top=_r4(d.top), gap=_r4(d.gap),
                  bytes=d.line_bytes, chosen=chosen, timings_ms=timings, project=project)
        return {
            "ok": True,
            "model": self.model_id,
            "decision": decision,
            "line": hook_line(d.text) if d.text else "",
            "ranked": [{"id": h.note.get("id"), "name": h.note.get("name"), "kind": h.note.get("kind"),
                        "score": round(h.score, 4)} for h in res.hits[:RANKED_IN_REPLY]],
            "timings_ms": timings,
        }

    def cmd_explain(self, req: dict) -> dict:
        """What ``query`` would hand over, with everything behind the decision (for
        ``recall ui``'s "try a message"): every ranked note, the settings in force and the
        config file each came from. Not an injection: nothing is logged, not even the
        decision, and the prompt never is."""
        from .selector import hook_line

        try:
            res, project = self._ask(req)
        except _NotNow as exc:
            return {"ok": False, "error": exc.error}
        d, s = res.decision, res.rule
        chosen = {(h.note.get("id"), h.note.get("path")) for h in d.chosen}  # render() may copy a hit
        return {
            "ok": True, "model": self.model_id, "device": self.device, "project": project,
            "decision": {**d.as_dict(), "text": d.text}, "line": hook_line(d.text) if d.text else "",
            "ranked": [{key: h.note.get(key) for key in ("id", "name", "description", "kind", "path", "project")}
                       | {"score": round(h.score, 4), "chosen": (h.note.get("id"), h.note.get("path")) in chosen}
                       for h in res.hits],
            "settings": s.as_dict() | {"selector": "learned" if s.learned is not None else "gap"},
            "origins": dict(s.thresholds.origins),
            "provenance": s.thresholds.provenance,
            "timings_ms": {k: round(v, 2) for k, v in res.timings.items()},
        }


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _r4(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


# --- entry point ---------------------------------------------------------------------


def write_lock_pid(fd: int) -> None:
    """The lock file names its holder, so `recall stop` / `status` find a daemon that lost
    its socket and status file (``client.lock_holder``)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def mark_failed(exc: BaseException) -> None:
    """Say that this start could not load its model: hooks stop waiting for starts that fail
    (``client.ask_or_start``) until the next one succeeds. The exception's type only."""
    try:
        with private_open(run_dir() / client.FAILED_NAME) as fh:
            fh.write(f"{time.time()} {type(exc).__name__}\n")
    except OSError:
        pass


def load_app(daemon: Daemon, config: Any) -> None:
    """The loader thread: the model, then the index; questions wait for it. A model that
    cannot load stops the daemon (exit status 1)."""
    t0 = time.perf_counter()
    try:
        from .api import Recall
        from .batcher import QueryBatcher
        from .embedders import get_embedder

        embedder = QueryBatcher(
            get_embedder(config.model), max_batch=config.daemon.batch_max,
            delay_s=config.daemon.debug_delay_ms / 1000,
        )
        app = Recall(config=config, embedder=embedder)
        app.searcher  # noqa: B018 - loads the index now, not on the first question
    except Exception as exc:  # noqa: BLE001
        log_exception("loading the model", exc)
        daemon.failed = True
        mark_failed(exc)
        daemon.request_stop()
        return
    remove_files(run_dir() / client.FAILED_NAME)
    load_s = time.perf_counter() - t0
    # Logged before it says so to a ping: whoever saw "ready" finds the line in the log.
    log_event("ready", load_s=round(load_s, 3), device=str(getattr(app.embedder, "device", "")))
    daemon.set_ready(app, load_s)
    try:  # [watch] enabled: re-index notes as they are saved, in this process
        from .watch import maybe_start_watcher

        daemon.watcher = maybe_start_watcher(app)
    except Exception as exc:  # noqa: BLE001 - searching matters more than watching
        log_exception("starting the watcher", exc)


def run_daemon(foreground: bool = False) -> int:
    """Run the daemon in this process until stopped. Exit status: 0 also when another
    daemon already runs (nothing to do), 1 when the model or config cannot be loaded."""
    os.umask(0o077)  # every file this process creates is the user's only
    # OpenMP threads (the model's, FAISS's) sleep between questions instead of spinning: a
    # spinning daemon takes the cores from the hooks it answers, and on a busy machine a
    # question took 10x longer (bench-hook). Set before the model's library loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from .config import load_config

    config = load_config()
    ensure_private_dir(run_dir())
    lock_fd = acquire_lock(client.lock_path())
    if lock_fd is None:
        if foreground:
            print("recall: a daemon is already running (recall stop ends it)", file=sys.stderr)
        return 0
    write_lock_pid(lock_fd)
    setup_logging(config, foreground)  # after the lock: one writer per rotating log
    # Do not pin the folder it was started from; keep RECALL_HOME valid if it was relative.
    os.environ["RECALL_HOME"] = str(recall_home().resolve())
    os.chdir(run_dir())
    daemon: Daemon | None = None

    def on_signal(signum, frame):  # noqa: ARG001
        if daemon is not None:
            daemon.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, on_signal)
    try:
        # Whatever is left in run_dir is a dead daemon's: we hold the lock.
        remove_files(client.status_path(), client.socket_path(), client.secret_path())
        transport = config.daemon.transport
        if sys.platform == "win32" or not hasattr(socket, "AF_UNIX"):
            transport = "tcp"  # no peer credentials on Windows: loopback + secret instead
        from .embedders import model_id_of

        try:
            model_id = model_id_of(config.model)
        except Exception as exc:  # noqa: BLE001
            log_exception("reading the model name", exc)
            mark_failed(exc)
            return 1
        daemon = Daemon(
            model_id, transport=transport, lock_fd=lock_fd,
            idle_exit_s=config.daemon.idle_exit_hours * 3600,
            request_timeout_s=config.daemon.request_timeout_ms / 1000,
            max_connections=config.daemon.max_connections,
            max_queued=config.daemon.max_queued,
            workers=config.daemon.batch_max,
        )
        # Listening before anything heavy is imported: a question that arrives during the
        # load waits for the model instead of finding no daemon.
        daemon.bind()
        daemon.write_status()
        log_event("start", pid=os.getpid(), model=daemon.model_id, transport=transport, address=daemon.address)
        threading.Thread(target=load_app, args=(daemon, config), name="recall-load", daemon=True).start()
        try:
            reason = daemon.serve_forever()
        finally:
            if daemon.watcher is not None:
                daemon.watcher.stop()
        if daemon.failed:
            return 1
        log_event("exit", why=reason, queries=daemon.queries)
        return 0
    finally:
        if daemon is not None:
            daemon.close()
        os.close(lock_fd)


def main(argv: list[str] | None = None) -> None:
    """``python -m recall.daemon [--foreground]``: what the hook starts, detached."""
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        print("usage: python -m recall.daemon [--foreground]   (what `recall serve` starts; `recall stop` ends it)")
        sys.exit(0)
    sys.exit(run_daemon(foreground="--foreground" in args))


if __name__ == "__main__":
    main()
