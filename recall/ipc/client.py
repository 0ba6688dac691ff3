"""Talk to the recall daemon: find it, ask it one question, start it when it is absent.

Long because: the hook imports one module for finding, trusting, asking and starting the daemon.

The hook imports this module on every message, so it uses the standard library and
``recall.privacy.paths`` only, and imports anything slower (``subprocess``, ``hmac``, ``fcntl``)
where it is used, not at the top.

Protocol (shape of mypy's dmypy): one connection, one JSON request line, one JSON reply
line. Where the daemon is found is in its status file, written after the socket is
bound and removed before it is closed:

    run_dir()/daemon.json    {pid, socket, model, device, started, transport, port}
    run_dir()/daemon.sock    the UNIX socket (transport "unix")
    run_dir()/daemon.secret  the shared secret (transport "tcp", 127.0.0.1 only)

With TCP every request carries the secret and a fresh nonce, and every reply carries
HMAC-SHA256(secret, nonce); a reply without the right HMAC is dropped, so another
process that grabs the port after the daemon died cannot feed text into the prompt.

Nothing is trusted that another user could have planted (``recall.privacy.trust``): before it reads
the status file, the client checks that the run folder, the status file, the socket, the
lock and the secret are this user's and closed to others, connects to its own socket path
(never to a path named in the status file), and checks from the kernel that the daemon runs
as this user. Anything else raises ``DaemonUntrusted`` before a byte of the prompt is sent,
and no daemon is started into such a folder.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from recall.errors import RecallError
from recall.ipc import inflight
from recall.privacy import trust
from recall.privacy.paths import daemon_log, ensure_private_dir, pid_exists, read_bytes, run_dir, user_config_path
from recall.privacy.regular import not_a_file, open_regular, read_regular

SOCKET_NAME = "daemon.sock"
STATUS_NAME = "daemon.json"
LISTENED_NAME = "daemon.listened"  # the pid of the last daemon that listened; kept when it exits
LOCK_NAME = "daemon.lock"
SECRET_NAME = "daemon.secret"
SPAWN_STAMP = "spawn.stamp"
STUCK_STAMP = "stuck.check"  # when a client last asked recall.daemon.unstick to look (suspect_stuck)
STUCK_CHECK_EVERY_S = 60.0
# What ``request`` raises for a daemon that answers nothing: no reply in time, or a full backlog
# (a UNIX socket's connect says EAGAIN where nobody accepts any more).
NO_ANSWER = frozenset({"TimeoutError", "BlockingIOError"})
FAILED_NAME = "daemon.failed"  # written by a daemon whose model could not load (no prompt in it)

PROTOCOL = 1
# A reply holds at most ~2 KB of context plus a ranked list; 1 MiB is a generous cap
# that still stops a runaway peer from filling memory.
MAX_REPLY_BYTES = 1 << 20
MAX_STATUS_BYTES = 1 << 16  # daemon.json and the secret: a few hundred bytes
# The most of a message a request carries: the one cut before the daemon (the hook and the MCP
# tool send the message as it is; the core reads what was typed around a paste of it,
# recall.ranking.pasted). A pasted megabyte stays off the socket (its first and last 32,768
# characters go: a question is typed before a paste or after it), and at 6 bytes per
# character (JSON's \uXXXX) a request stays well under the daemon's MAX_REQUEST_BYTES.
PROMPT_CHARS_MAX = 1 << 16


def ends(prompt: str) -> str:
    """``prompt`` cut to PROMPT_CHARS_MAX characters, its first and last halves kept."""
    if len(prompt) <= PROMPT_CHARS_MAX:
        return prompt
    half = PROMPT_CHARS_MAX // 2
    return prompt[:half] + "\n" + prompt[-half:]


# Set by recall's own checks (`recall install`'s timing) for the hooks they run: their questions
# carry ``"check": true`` (``checking``) and the daemon logs them as "check", not as a message of yours.
CHECK_ENV = "RECALL_CHECKING"
# A daemon loading its model takes seconds; hooks arriving meanwhile must not start
# another. One start per this many seconds, across all concurrent hooks.
SPAWN_COOLDOWN_S = 20.0
# sun_path is 104 bytes on macOS, 108 on Linux (with the NUL); longer paths are
# reached through a relative name after a chdir into the folder.
SUN_PATH_MAX = 100


class DaemonUnavailable(RecallError):
    """No daemon to talk to: not started, or its files are stale."""


class DaemonError(RecallError):
    """A daemon is there but gave no valid answer in time (busy, killed, refused, forged)."""


class DaemonUntrusted(DaemonError):
    """The run folder, a daemon file or the daemon's process is not this user's: nothing was
    sent, and no daemon is started there. ``str`` says which."""


RUN_FILES = (STATUS_NAME, SOCKET_NAME, LOCK_NAME, SECRET_NAME, SPAWN_STAMP, LISTENED_NAME)


def check_run_dir() -> None:
    """Raise ``DaemonUntrusted`` unless the run folder and the daemon's files are this user's
    and closed to others. A missing run folder is no daemon (``DaemonUnavailable``)."""
    run = run_dir()
    if not os.path.isdir(run):
        raise DaemonUnavailable("no run folder")
    # The home too: whoever can write it can swap the run folder between a check and a use.
    problem = trust.run_files_problem(run.parent) or trust.run_files_problem(run, *RUN_FILES)
    if problem:
        raise DaemonUntrusted(problem)


def status_path() -> Path:
    return run_dir() / STATUS_NAME


def socket_path() -> Path:
    return run_dir() / SOCKET_NAME


def secret_path() -> Path:
    return run_dir() / SECRET_NAME


def lock_path() -> Path:
    return run_dir() / LOCK_NAME


def pid_alive(pid: object) -> bool:
    """Whether ``pid`` is a live process of this user."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    # another user's is not ours: our daemon's pid was reused; on Windows the connect attempt is the test
    return pid_exists(pid, others=False)


def exited(pid: int) -> bool:
    """Whether ``pid`` has ended, also when it waits to be reaped (its parent, a hook long gone,
    left it to a subreaper that reaps late): taken for alive, such a daemon held its restart off
    after `recall stop` (an outside tester's AG03). Off the hook's usual path: read only where a
    daemon is to be started."""
    if not pid_alive(pid):
        return True
    from recall.privacy.children import stat_fields

    return (stat_fields(pid) or [b"?"])[0] == b"Z"


def read_status() -> dict | None:
    """The status file, if it still describes a live daemon (pid alive, socket present).

    Not proof the daemon answers: only a request is. A stale file is left for the next
    daemon to clean up, because only the holder of the lock may remove it safely. Raises
    ``DaemonUntrusted`` for files another user could have planted (``check_run_dir``).
    """
    try:
        check_run_dir()
    except DaemonUnavailable:
        return None
    try:  # read without blocking: a pipe planted there (or left by a fault) must not hold the hook
        data = json.loads(read_regular(status_path(), MAX_STATUS_BYTES)[0])
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not pid_alive(data.get("pid")):
        return None
    recorded = data.get("pid_start")  # absent from an older daemon's file: its pid alone, as before
    if recorded is not None and trust.process_start(data["pid"]) not in (None, recorded):
        return None  # the pid is another process's now: the daemon died (H4)
    if data.get("transport", "unix") == "unix" and not os.path.exists(socket_path()):
        return None
    return data


def connect_unix(sock: socket.socket, path: str) -> None:
    """``sock.connect(path)``; a path too long for sun_path is reached through a descriptor of its
    folder (``/proc/self/fd/N/name``), not by changing the working folder, which every thread of
    the process shares and which may be gone: from a folder since deleted, ``getcwd`` failed and
    the hook answered nothing beside a warm daemon (an outside tester's, stop 55). Where there is
    no ``/proc``, the working folder is changed and changed back by descriptor."""
    if len(os.fsencode(path)) < SUN_PATH_MAX:
        sock.connect(path)
        return
    folder = os.open(os.path.dirname(path) or ".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC)
    try:
        via = f"/proc/self/fd/{folder}/{os.path.basename(path)}"
        if os.path.isdir(f"/proc/self/fd/{folder}") and len(os.fsencode(via)) < SUN_PATH_MAX:
            sock.connect(via)
            return
        here = os.open(".", os.O_RDONLY | os.O_CLOEXEC)  # where this process is, a folder since deleted too
        try:
            os.fchdir(folder)
            try:
                sock.connect(os.path.basename(path))
            finally:
                os.fchdir(here)
        finally:
            os.close(here)
    finally:
        os.close(folder)


def recv_line(sock: socket.socket, limit: int, deadline: float | None = None) -> bytes:
    """Bytes up to the first newline (or EOF), within ``limit`` bytes and ``deadline``."""
    buf = bytearray()
    while b"\n" not in buf:
        if deadline is not None:
            _set_timeout(sock, deadline)
        part = sock.recv(65536)
        if not part:
            break
        buf += part
        if len(buf) > limit:
            raise DaemonError("message too long")
    return bytes(buf.split(b"\n", 1)[0])


def _set_timeout(sock: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DaemonError("out of time")
    sock.settimeout(left)


def reply_hmac(secret: str, nonce: str) -> str:
    import hashlib
    import hmac

    return hmac.new(secret.encode(), nonce.encode(), hashlib.sha256).hexdigest()


def checking() -> dict:
    """``{"check": True}`` to add to a question asked by recall's own check (``CHECK_ENV``), else ``{}``."""
    return {"check": True} if os.environ.get(CHECK_ENV) else {}


def request(msg: dict, *, timeout: float = 5.0, deadline: float | None = None, status: dict | None = None) -> dict:
    """Send one request, return the daemon's reply (a dict with ``ok``).

    ``deadline`` (time.monotonic()) bounds the whole exchange: connect, send, receive.
    Raises DaemonUnavailable when no daemon listens, DaemonError for anything else.
    """
    # Long because: one exchange read top to bottom (trust, connect, peer check, send, reply, HMAC).
    if deadline is None:
        deadline = time.monotonic() + timeout
    status = status or read_status()  # ``status``: the caller read it already
    if status is None:
        raise DaemonUnavailable("no daemon running")
    # The deadline travels as wall-clock time (monotonic clocks are per machine boot, not comparable
    # across processes everywhere), so the daemon can skip a question whose asker has already given up.
    msg = {**msg, "v": PROTOCOL, "give_up_at": time.time() + (deadline - time.monotonic())}
    if isinstance(msg.get("prompt"), str):
        msg["prompt"] = ends(msg["prompt"])
    secret = nonce = None
    if status.get("transport") == "tcp":
        try:
            secret = read_regular(secret_path(), MAX_STATUS_BYTES)[0].decode("ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise DaemonUnavailable("no secret file") from exc
        nonce = os.urandom(16).hex()
        msg["secret"], msg["nonce"] = secret, nonce
        sock = inflight.opened(socket.AF_INET)
    else:  # both remembered as the exchange in flight: a hook held past its budget reads its reply's ref
        sock = inflight.opened(socket.AF_UNIX)
    try:
        _set_timeout(sock, deadline)
        try:
            if secret is not None:  # nothing is sent before the listener is known to be this user's
                sock.connect(("127.0.0.1", int(status.get("port", 0))))
                problem = trust.tcp_listener_problem(sock)
                if problem:
                    raise DaemonUntrusted(problem)
            else:  # our own path: a status file could name anyone's socket
                connect_unix(sock, str(socket_path()))
                problem = trust.peer_problem(sock)
                if problem:
                    raise DaemonUntrusted(problem)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonUnavailable("daemon not listening") from exc
        _set_timeout(sock, deadline)
        sock.sendall(json.dumps(msg).encode("ascii") + b"\n")
        data = recv_line(sock, MAX_REPLY_BYTES, deadline)
    except DaemonError:
        raise
    except (OSError, ValueError) as exc:  # timeouts are OSError too
        raise DaemonError(type(exc).__name__) from exc
    finally:
        sock.close()
    if not data:
        raise DaemonError("connection closed without a reply")
    try:
        reply = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise DaemonError("reply is not JSON") from exc
    if not isinstance(reply, dict):
        raise DaemonError("reply is not an object")
    if secret is not None and nonce is not None:
        import hmac

        if not hmac.compare_digest(str(reply.get("hmac", "")), reply_hmac(secret, nonce)):
            raise DaemonError("reply not signed with our secret")
    return reply


# --- starting the daemon ---------------------------------------------------------


def daemon_command() -> list[str]:
    # -P: do not put the current folder on sys.path (a project with its own
    # ``recall`` folder must not shadow this package).
    return [sys.executable, "-P", "-m", "recall.daemon"]


def spawn_daemon(cooldown_s: float = SPAWN_COOLDOWN_S) -> Any:
    """Start the daemon detached, unless one was started less than ``cooldown_s`` ago.

    Concurrent hooks serialize on a lock around a timestamp file, so a burst of messages
    starts one daemon. Returns the started process (``subprocess.Popen``), or None when this
    call started none. (The daemon's own lock is
    what guarantees a single instance; this only avoids a storm of doomed starts.)
    """
    if os.path.isdir(run_dir()):
        check_run_dir()  # never start a daemon into a folder another user controls
    stamp = ensure_private_dir(run_dir()) / SPAWN_STAMP
    fd = open_regular(stamp, os.O_RDWR | os.O_CREAT)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            pass  # Windows: no flock; the daemon's own lock still keeps one instance
        except OSError:
            return None  # another hook is starting it right now
        try:
            last = float((os.read(fd, 64) or b"0").split()[0])
        except (ValueError, IndexError):
            last = 0.0
        now = time.time()
        if 0 <= now - last < cooldown_s:
            return None
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, repr(now).encode())
        user_config_path()  # a relative RECALL_CONFIG made absolute: the daemon runs in run/
        started = start_detached(daemon_command())
        os.pwrite(fd, f" {started.pid}".encode(), len(repr(now)))  # "time pid": see _started_daemon_died
        return started
    finally:
        os.close(fd)


def start_detached(command: list[str]) -> Any:
    """``command`` started in the run folder, detached from this process (no stdio of ours, its own
    session): it survives the hook and the agent's signals. The ``subprocess.Popen``."""
    import subprocess

    kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                    "stderr": subprocess.DEVNULL, "close_fds": True, "cwd": str(run_dir())}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    return subprocess.Popen(command, **kwargs)


def wait_until_ready(timeout_s: float = 30.0, poll_s: float = 0.1, started: Any = None) -> dict | None:
    """Poll with pings until a daemon answers with its model loaded; its ping reply, or
    None after ``timeout_s`` or as soon as ``started`` (the process ``spawn_daemon`` gave)
    has exited without one answering. (A daemon listens before its model is loaded.)"""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if started is not None and started.poll() is not None and lock_holder() is None:
            return None  # it exited, and no other daemon holds the lock
        try:
            reply = request({"cmd": "ping"}, timeout=1.0)
            if reply.get("ok") and reply.get("ready", True):
                return reply
        except (DaemonUnavailable, DaemonError):
            pass
        time.sleep(poll_s)
    return None


# How often a hook that started the daemon looks for its status file.
START_POLL_S = 0.005


def ask_or_start(msg: dict, deadline: float) -> dict | None:
    """``request(msg)``; when no daemon runs, start one and ask it as soon as it listens,
    all within ``deadline`` (time.monotonic()). None when no answer came in time.

    The daemon binds its socket before it loads the model and lets the question wait for
    the load, so the first message after a cold start is answered when the start fits in
    what is left of the budget. Raises DaemonError as ``request`` does.
    """
    if time.monotonic() >= deadline:  # the budget is spent: no question, but a missing daemon is started
        if lock_holder() is None:
            start_missing()
        return None
    try:
        status = read_status()
        reply = request(msg, deadline=deadline, status=status)
    except DaemonUnavailable:
        pass
    except DaemonError as exc:
        if str(exc) in NO_ANSWER:
            suspect_stuck()
        raise
    else:
        _retire_if_older(status)
        return reply
    if not start_missing() and _failed_recently():
        return None  # the last start could not load its model: waiting would only cost time
    while time.monotonic() + START_POLL_S < deadline:
        time.sleep(START_POLL_S)
        try:  # no status file yet: request() says DaemonUnavailable at once
            return request(msg, deadline=deadline)
        except DaemonUnavailable:
            continue
    return None


def _retire_if_older(status: dict | None) -> None:
    """Ask a daemon started by a recall from before ``recall.ipc.code`` (its status file,
    ``status``, has no ``code``) to stop: it would answer with its own, older code and model for
    good, where a daemon of this code ends itself after an upgrade. The next question starts one."""
    if status is not None and "code" not in status and status.get("ready", True):
        try:
            request({"cmd": "stop"}, timeout=0.2, status=status)
        except DaemonError:
            pass


def retire_older() -> bool:
    """``_retire_if_older`` for a command of this code (``recall status``, ``index``, ``install``,
    ``serve``): with the default mcp_tool route a daemon's one client is the session's MCP server,
    which runs the older code and never retires it, so the older daemon answered as long as the
    session stayed open (an outside tester's upgrade). Whether one was asked to stop; it finishes
    the questions it holds first (``recall.daemon.loop``)."""
    try:
        status = read_status()
        if status is None or "code" in status:
            return False
        request({"cmd": "stop"}, timeout=5, status=status)
    except (DaemonError, DaemonUnavailable):
        return False
    return True


def runs_older_code(status: dict) -> bool:
    """Whether the daemon of ``status`` (its status file) runs older code than this process: from
    before the code check (no ``code``), or of files changed since (``recall.ipc.code``)."""
    from recall.ipc.code import code_stamp, upgraded

    return "code" not in status or upgraded(status["code"], code_stamp())


def start_missing() -> Any:
    """Start a daemon where none runs (``spawn_daemon``), also within the cooldown when the last
    one started had listened and then died (killed, stopped): the process, or None."""
    started = spawn_daemon()  # or another hook just did: wait for that one
    if not started and not _failed_recently() and (_started_daemon_died() or _failure_over()):
        # killed after it listened, or failed on a config since changed: no doomed start, so no cooldown
        started = spawn_daemon(cooldown_s=0.0)
    return started


def suspect_stuck() -> None:
    """A question got no answer in time: ``python -m recall.daemon.unstick`` is started, detached,
    at most once a minute (``run/stuck.check``'s time), to tell a slow daemon from one that answers
    nothing (stopped, deadlocked) and to resume or replace that one. It answered nothing for good:
    every message paid the whole budget until `recall stop` (an outside tester's SIGSTOP, stop 60)."""
    if sys.platform == "win32":
        return
    stamp = run_dir() / STUCK_STAMP
    try:
        if 0 <= time.time() - os.stat(stamp).st_mtime < STUCK_CHECK_EVERY_S:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        os.close(open_regular(stamp, os.O_WRONLY | os.O_CREAT))
        os.utime(stamp)
        start_detached([sys.executable, "-P", "-m", "recall.daemon.unstick"])
    except OSError:
        pass


def _failure_over() -> bool:
    """Whether the last start failed on a config file that has changed since (``_failure``)."""
    record = _failure_record()
    return record is not None and _over(record[1])


def _started_daemon_died() -> bool:
    """Whether the daemon the last spawn started got as far as listening (``daemon.listened``
    names its pid) and has since ended, with no daemon holding the lock: killed (``kill -9``,
    the OOM killer), stopped (``recall stop``, SIGTERM) or gone for a model switch, not a
    start that fails (that one leaves ``daemon.failed``, or never listens), so the cooldown
    that stops a storm of doomed starts does not apply."""
    try:
        pid = int(read_bytes(run_dir() / SPAWN_STAMP, 256).split()[1])
        listened = int(read_bytes(run_dir() / LISTENED_NAME, 256).split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return listened == pid and exited(pid) and lock_holder() is None


UNREAD = "unread"  # an identity that could not be read (out of descriptors): no proof of a change


def config_identity() -> str:
    """The settings file's identity as one line (any edit, a move aside, a new file changes it):
    what a failed start records beside its reason."""
    try:
        st = os.stat(user_config_path())
    except OSError as exc:
        return "none" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREAD
    return f"{st.st_ino} {st.st_size} {st.st_mtime_ns}"


def _failure() -> tuple[float, list[str]] | None:
    """``daemon.failed``'s time and lines while they still hold: a failure recorded under another
    config file than the one there now is over (a config fixed after a start failed on it: `recall
    status` kept naming the old error, and hooks stayed silent for the cooldown; AI09)."""
    record = _failure_record()
    return None if record is None or _over(record[1]) else record


def _failure_record() -> tuple[float, list[str]] | None:
    """``daemon.failed``'s time and lines, None where there is none."""
    try:
        path = run_dir() / FAILED_NAME
        lines = read_bytes(path, 4096).decode("utf-8", errors="replace").splitlines()
        return os.stat(path).st_mtime, lines
    except OSError:
        return None


def index_identity() -> str:
    """Which generation each model's index points at, as one line (a repair, `recall index`, a
    switch change it): what a failed start records beside the config's identity."""
    root = run_dir().parent / "index"
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:  # out of descriptors is not "no index": the failure would be over at once
        return "none" if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREAD
    parts = []
    for name in names:
        try:
            st = os.stat(root / name / "current")
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                return UNREAD
            continue
        parts.append(f"{name}:{st.st_ino}:{st.st_mtime_ns}")
    return " ".join(parts) or "none"


def _over(lines: list[str]) -> bool:
    """Whether a failure's lines were recorded under another config file, or another index, than
    the ones there now (an index repaired after a start failed on it: hooks stayed silent for the
    cooldown, and `recall status` named the file the repair had replaced; stop 57)."""
    recorded = {line.split(" ", 1)[0]: line.split(" ", 1)[-1] for line in lines[2:] if " " in line}
    return any(key in recorded and recorded[key] not in (UNREAD, now()) for key, now in
               (("config", config_identity), ("index", index_identity)))


def _failed_recently(within_s: float = SPAWN_COOLDOWN_S) -> bool:
    failure = _failure()
    # 0 <=: a clock set back (or a file from the future) must not hold every start off for hours
    return failure is not None and 0 <= time.time() - failure[0] < within_s


def lock_holder() -> int | None:
    """The pid of the daemon holding the lock, read from the lock file; None if no process
    holds it. Finds a daemon whose socket or status file was deleted under it."""
    try:
        import fcntl
    except ImportError:  # Windows: the status file is all there is
        return None
    try:
        check_run_dir()  # a lock another user planted names a pid that `recall stop` would signal
    except DaemonUnavailable:
        return None
    try:
        fd = os.open(lock_path(), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        try:
            pid = int(os.pread(fd, 32, 0).decode("ascii").strip() or 0)
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not pid_alive(pid):
            return None  # the common "not running" case: no probing of the lock
        try:  # a shared lock is refused while a daemon holds its exclusive one
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return pid
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


# --- status for `recall status` ----------------------------------------------------


def last_start_failure() -> str | None:
    """Why the last daemon start could not load its model (``daemon.failed``, written by it):
    its own words with the repair (``run `recall models mpnet```), or its error's type."""
    failure = _failure()
    if failure is None:
        return None
    lines = failure[1]
    kind = lines[0].split(" ", 1)[1] if lines and " " in lines[0] else "an error"
    return (lines[1].strip() if len(lines) > 1 and lines[1].strip() else kind) + \
        " (`recall serve --foreground` shows it all)"


def files_problem() -> str | None:
    """A file the daemon keeps that is not a file (a named pipe, a folder...): no daemon can
    start until it is moved aside. What it is and the ``mv`` that repairs it, or None."""
    for path in [*(run_dir() / name for name in RUN_FILES if name != SOCKET_NAME),
                 run_dir() / FAILED_NAME, daemon_log()]:
        kind = not_a_file(path)
        if kind is not None:
            return f"{path} is {kind}: move it aside (`mv {path} {path}.old`)"
    return None


def _other_settings(reply: dict) -> str | None:
    """When the daemon reads another settings file than this process (another RECALL_CONFIG):
    its answers follow that one, and `recall status` and `--explain` said this one's (Y-03)."""
    if not isinstance(reply.get("config"), str) or reply["config"] == str(user_config_path()):
        return None
    return (f"it answers with the settings in {reply['config']} (top_floor {reply.get('top_floor')}), not "
            f"{user_config_path()} that this shell reads: `recall stop`, and the next message starts one with "
            "the settings of the agent that sends it")


def daemon_status(timeout_s: float = 1.0) -> dict:
    """Whether a daemon runs, and its pid, socket, model, start time and uptime.

    Reads the status file and asks the daemon; never starts one. A daemon whose start failed is
    said to be ending, with why, from its record on (``daemon.failed``) to its exit: between the two
    it was "starting", or "running" with its files missing, and why it failed went unsaid (CI,
    stop 58).
    """
    info = _asked(timeout_s)
    if "pid" not in info:
        return info
    started = info.get("started")
    if started is None:  # found by its lock: the lock file was written at its start
        try:
            started = os.stat(lock_path()).st_mtime
        except OSError:
            return info
    failure = _failure()
    # less a little: a file's time is the kernel's coarse clock, a few ms behind time.time()
    if failure is None or not isinstance(started, (int, float)) or failure[0] < started - 0.1:
        return info
    return {"running": False, "pid": info["pid"], "last_start_failed": last_start_failure(),
            "note": "its start failed and it is ending"}


def _asked(timeout_s: float) -> dict:
    """``daemon_status`` from the status file, the lock and the daemon's answer."""
    try:
        status = read_status()
    except DaemonUntrusted as exc:
        return {"running": False, "refused": str(exc)}
    if status is None:
        holder = lock_holder()
        if holder is None:
            problem = files_problem()
            if problem:
                return {"running": False, "problem": problem}
            failed = last_start_failure()
            return {"running": False, "last_start_failed": failed} if failed else {"running": False}
        return {"running": True, "pid": holder,
                "note": "its socket or status file is missing (it restores them within a second; "
                        "`recall stop` ends it)"}
    info = {
        "running": False,
        "pid": status.get("pid"),
        "socket": status.get("socket"),
        "transport": status.get("transport", "unix"),
        "model": status.get("model"),
        "device": status.get("device"),
        "started": status.get("started"),
    }
    try:
        reply = request({"cmd": "status"}, timeout=timeout_s)
    except DaemonUnavailable:
        info["note"] = "status file is stale (the next daemon cleans it up)"
        return info
    except DaemonUntrusted as exc:
        info["refused"] = str(exc)
        return info
    except DaemonError as exc:
        info["running"] = True
        info["answering"] = False  # hung (stopped, or stuck): the page and `recall status` say so
        info["note"] = f"not answering ({exc}); `recall stop` ends it, the next message starts a fresh one"
        return info
    # Running = answering questions; a daemon still loading its model says "starting".
    info["running"] = bool(reply.get("ok")) and bool(reply.get("ready", True))
    if reply.get("ok") and not reply.get("ready", True):
        info["starting"] = True
        info["note"] = "loading the model"
    for key in ("uptime_s", "queries", "index_generation", "idle_exit_s", "ready", "load_s", "busy", "watcher"):
        if key in reply:
            info[key] = reply[key]
    if reply.get("model_switch"):  # the daemon embeds the notes again for a new model
        info["model_switch"] = reply["model_switch"]
    if other := _other_settings(reply):
        info["other_settings"] = other
    if "code" not in status and retire_older():  # from before that check: it would answer for good
        info["older_code"] = ("it runs recall as it was before an upgrade, from before recall checked for one: "
                              "asked to stop now (it finishes its questions first); the next message starts this one")
    elif runs_older_code(status):  # an upgrade under it (recall.ipc.code)
        info["older_code"] = ("it runs recall as it was before an upgrade: it ends itself within seconds, and "
                              "the next message starts this one; `recall stop` ends it now")
    return info
