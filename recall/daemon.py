"""The resident search daemon: the model and the index loaded once, kept warm.

The hook is a new process per message; loading a model there would cost seconds. The
daemon loads it once and answers each question in milliseconds. Its shape is mypy's
dmypy: one JSON request and one JSON reply per connection, dispatched to
``cmd_<name>`` (query, status, stop, ping); a status file that clients check before
they trust it; a foreground mode for debugging (``recall serve --foreground``).

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

import json
import logging
import logging.handlers
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import client
from .paths import FILE_MODE, ensure_private_dir, private_open, recall_home, run_dir

COMMANDS = ("query", "status", "stop", "ping", "explain")
# A request is a prompt of at most ~16,000 characters (the hook cuts longer ones) as
# JSON with \\u escapes: well under 1 MiB. Anything bigger is not from our hook.
MAX_REQUEST_BYTES = 1 << 20
# A client that connects and sends nothing must not hold a worker for long.
READ_TIMEOUT_S = 5.0
# Workers: enough that pings and status never wait behind queries and that ten
# concurrent hooks are all accepted; embedding itself runs one at a time (a lock),
# because a model is not guaranteed to be thread-safe and it uses every core anyway.
WORKERS = 8
# How often the accept loop wakes to check the idle timer.
POLL_S = 1.0
RANKED_IN_REPLY = 11  # the ranks the gap rule looks at
# Test-only: a uid the daemon expects instead of its own, to exercise refusal
# without a second user account. Only ever makes the daemon refuse more.
EXPECTED_UID_ENV = "RECALL_DAEMON_EXPECTED_UID"

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
        log_path(), maxBytes=int(config.get("log.max_bytes", 1_000_000)),
        backupCount=int(config.get("log.backups", 3)), encoding="utf-8",
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


class Daemon:
    def __init__(self, app: Any, *, transport: str = "unix", idle_exit_s: float = 6 * 3600,
                 debug_delay_s: float = 0.0) -> None:
        self.app = app
        self.transport = transport
        self.idle_exit_s = idle_exit_s
        self.debug_delay_s = debug_delay_s
        self.model_id = app.embedder.model_id
        self.device = str(getattr(app.embedder, "device", ""))
        self.started = time.time()
        self.last_question = time.monotonic()
        self.queries = 0
        self.secret: str | None = None
        self.listener: socket.socket | None = None
        self.address = ""
        self.port = 0
        self._query_lock = threading.Lock()  # one embedding at a time
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
        else:
            path = client.socket_path()
            remove_files(path)  # we hold the lock: an existing socket is a dead daemon's
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if len(os.fsencode(str(path))) < client.SUN_PATH_MAX:
                sock.bind(str(path))
            else:  # too long for sun_path: bind by name from inside the folder (our cwd)
                os.chdir(path.parent)
                sock.bind(path.name)
            os.chmod(path, FILE_MODE)
            self.address = str(path)
        sock.listen(64)
        sock.setblocking(False)
        self.listener = sock

    def write_status(self) -> None:
        """Written last (after bind), atomically: a reader sees all of it or none."""
        status = {
            "pid": os.getpid(), "socket": self.address, "model": self.model_id, "device": self.device,
            "started": self.started, "transport": self.transport, "port": self.port,
            "protocol": client.PROTOCOL,
        }
        tmp = client.status_path().with_suffix(".tmp")
        with private_open(tmp) as fh:
            json.dump(status, fh)
        os.replace(tmp, client.status_path())

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

    def serve_forever(self) -> str:
        """Accept until stopped or idle; returns why it stopped."""
        assert self.listener is not None
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        reason = "stopped"
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="recall") as pool:
            while not self._stop.is_set():
                idle_left = self.idle_exit_s - (time.monotonic() - self.last_question)
                if idle_left <= 0:
                    reason = f"idle for {self.idle_exit_s:.0f} s"
                    break
                for key, _ in sel.select(timeout=min(POLL_S, idle_left)):
                    if key.fileobj is self._wake_r:
                        try:
                            self._wake_r.recv(64)
                        except OSError:
                            pass
                        continue
                    try:
                        conn, _ = self.listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    conn.setblocking(True)
                    pool.submit(self.handle, conn)
            sel.close()
        return reason

    # one connection
    def handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(READ_TIMEOUT_S)
                if self.transport == "unix" and not check_peer(peer_uid(conn)):
                    log_event("refused", why="peer uid")
                    return  # no reply: tell a stranger nothing
                raw = client.recv_line(conn, MAX_REQUEST_BYTES)
                req = json.loads(raw)
                if not isinstance(req, dict):
                    return
                nonce = None
                if self.transport == "tcp":
                    import hmac

                    given = req.get("secret")
                    if not (isinstance(given, str) and self.secret
                            and hmac.compare_digest(given, self.secret)):
                        log_event("refused", why="secret")
                        return
                    nonce = str(req.get("nonce", ""))
                reply = self.dispatch(req)
                if nonce is not None and self.secret:
                    reply["hmac"] = client.reply_hmac(self.secret, nonce)
                conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            log_event("client gone")  # the hook's budget ran out first: normal under load
        except Exception as exc:  # noqa: BLE001 - one bad connection must not stop the daemon
            log_exception("connection", exc)

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
        return {"ok": True, "pid": os.getpid(), "model": self.model_id}

    def cmd_status(self, req: dict) -> dict:
        idx = self.app.searcher.index
        return {
            "ok": True, "pid": os.getpid(), "model": self.model_id, "device": self.device,
            "transport": self.transport, "socket": self.address, "started": self.started,
            "uptime_s": round(time.time() - self.started, 1), "queries": self.queries,
            "idle_exit_s": self.idle_exit_s,
            "index_generation": None if idx is None else idx.generation,
        }

    def cmd_stop(self, req: dict) -> dict:
        log_event("stop", by="request")
        self.request_stop()
        return {"ok": True, "stopping": True}

    def cmd_query(self, req: dict) -> dict:
        from .search import Scope
        from .selector import hook_line
        from .service import project_key

        prompt, cwd = req.get("prompt"), req.get("cwd")
        if not isinstance(prompt, str):
            return {"ok": False, "error": "no prompt"}
        self.last_question = time.monotonic()
        project = project_key(cwd if isinstance(cwd, str) and cwd else Path.home())
        give_up_at = req.get("give_up_at")  # the asker's deadline (epoch seconds), if any
        t0 = time.perf_counter()
        with self._query_lock:
            # Under a burst, questions queue for the model; one whose asker has already
            # given up is skipped instead of delaying everyone behind it.
            if isinstance(give_up_at, int | float) and time.time() > give_up_at:
                log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1))
                return {"ok": False, "error": "expired"}
            if self.debug_delay_s:
                time.sleep(self.debug_delay_s)  # test-only knob: a query in flight for a while
            res = self.app.query(prompt, Scope(project=project), project)
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
        from .search import Scope
        from .selector import hook_line
        from .service import project_key

        prompt, cwd = req.get("prompt"), req.get("cwd")
        if not isinstance(prompt, str):
            return {"ok": False, "error": "no prompt"}
        self.last_question = time.monotonic()
        project = project_key(cwd if isinstance(cwd, str) and cwd else Path.home())
        with self._query_lock:
            res = self.app.query(prompt, Scope(project=project), project)
        d, s = res.decision, res.settings
        chosen = {(h.note.get("id"), h.note.get("path")) for h in d.chosen}  # render() may copy a hit
        keys = ("gap_floor", "top_floor", "full_gap", "full_margin", "neg_weight")
        config = self.app.config
        return {
            "ok": True, "model": self.model_id, "device": self.device, "project": project,
            "decision": {**d.as_dict(), "text": d.text}, "line": hook_line(d.text) if d.text else "",
            "ranked": [{key: h.note.get(key) for key in ("id", "name", "description", "kind", "path", "project")}
                       | {"score": round(h.score, 4), "chosen": (h.note.get("id"), h.note.get("path")) in chosen}
                       for h in res.hits],
            "settings": {k: v for k, v in vars(s).items() if k != "learned"}
                        | {"selector": "learned" if s.learned is not None else "gap"},
            "origins": {k: config.origins.get(f"thresholds.{s.thresholds_source}.{k}", "") for k in keys},
            "provenance": config.get(f"thresholds.{s.thresholds_source}.provenance"),
            "timings_ms": {k: round(v, 2) for k, v in res.timings.items()},
        }


def _r4(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


# --- entry point ---------------------------------------------------------------------


def run_daemon(foreground: bool = False) -> int:
    """Run the daemon in this process until stopped. Exit status: 0 also when another
    daemon already runs (nothing to do), 1 when the model or config cannot be loaded."""
    os.umask(0o077)  # every file this process creates is the user's only
    from .config import load_config

    config = load_config()
    ensure_private_dir(run_dir())
    lock_fd = acquire_lock(client.lock_path())
    if lock_fd is None:
        if foreground:
            print("recall: a daemon is already running (recall stop ends it)", file=sys.stderr)
        return 0
    setup_logging(config, foreground)  # after the lock: one writer per rotating log
    # Do not pin the folder it was started from; keep RECALL_HOME valid if it was relative.
    os.environ["RECALL_HOME"] = str(recall_home().resolve())
    os.chdir(run_dir())
    daemon: Daemon | None = None
    stop_early = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stop_early.set()
        if daemon is not None:
            daemon.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, on_signal)
    try:
        # Whatever is left in run_dir is a dead daemon's: we hold the lock.
        remove_files(client.status_path(), client.socket_path(), client.secret_path())
        transport = str(config.get("daemon.transport", "unix"))
        if sys.platform == "win32" or not hasattr(socket, "AF_UNIX"):
            transport = "tcp"  # no peer credentials on Windows: loopback + secret instead
        from .search import Scope
        from .service import Recall

        t0 = time.perf_counter()
        try:
            app = Recall(config=config)
            app.query("warm up the model and the index", Scope(everything=True))  # loads both
        except Exception as exc:  # noqa: BLE001
            log_exception("loading the model", exc)
            return 1
        load_s = time.perf_counter() - t0
        daemon = Daemon(
            app, transport=transport,
            idle_exit_s=float(config.get("daemon.idle_exit_hours", 6)) * 3600,
            debug_delay_s=float(config.get("daemon.debug_delay_ms", 0)) / 1000,
        )
        if stop_early.is_set():
            return 0
        daemon.bind()
        daemon.write_status()
        log_event("start", pid=os.getpid(), model=daemon.model_id, device=daemon.device,
                  transport=transport, address=daemon.address, load_s=round(load_s, 2))
        watcher = None
        try:  # [watch] enabled: re-index notes as they are saved, in this process
            from .watch import maybe_start_watcher

            watcher = maybe_start_watcher(app)
        except Exception as exc:  # noqa: BLE001 - searching matters more than watching
            log_exception("starting the watcher", exc)
        try:
            reason = daemon.serve_forever()
        finally:
            if watcher is not None:
                watcher.stop()
        log_event("exit", why=reason, queries=daemon.queries)
        return 0
    finally:
        if daemon is not None:
            daemon.close()
        os.close(lock_fd)


def main(argv: list[str] | None = None) -> None:
    """``python -m recall.daemon [--foreground]``: what the hook starts, detached."""
    args = sys.argv[1:] if argv is None else argv
    sys.exit(run_daemon(foreground="--foreground" in args))


if __name__ == "__main__":
    main()
