"""One agent CLI process, bounded in everything a broken or hostile CLI could make unbounded.

``subprocess.run(capture_output=True)`` read the CLI's output until its pipes closed, all of
it into memory: a CLI printing without end took gigabytes, and one whose child kept stdout
open (a language server, ``sleep`` started in the background) held the run for its whole
time limit and then threw a finished answer away. Here:

* **time**: the CLI itself must end within ``timeout_s``;
* **output**: stdout is read as it comes, up to ``MAX_ANSWER_BYTES`` (an answer for a batch
  of notes is a few tens of KB); past it the CLI is killed and nothing of it is used;
  stderr is read as it comes too, only its first and last bytes kept;
* **children**: the CLI runs in a process group of its own, killed whole when the CLI ends
  (or is killed), so nothing it started keeps running, and its output is awaited only
  ``DRAIN_S`` past its end (a child that left the group and holds stdout is not waited for);
* **bytes**: what it printed is read as UTF-8 with bad bytes replaced, never a traceback;
* **the run's own end**: SIGTERM or SIGHUP to recall (``kill``, a closed terminal, a logout)
  ends the run through the same cleanup, the CLI's group killed: Python's default for them ends
  the process on the spot, and an outside tester's CLI ran on unbounded after it (stop 45).

And the run itself: one at a time (``run_lock``), started in the background by `recall index`
and the watcher (``start_background``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from recall.errors import RecallError
from recall.privacy.children import adopting_orphans, children, end_all, ending_with_me
from recall.privacy.regular import open_regular

MAX_ANSWER_BYTES = 16 << 20
STDERR_HEAD, STDERR_TAIL = 4 << 10, 64 << 10
DRAIN_S = 5.0


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str  # its first STDERR_HEAD bytes and its last STDERR_TAIL


class TooLong(RecallError):
    """The CLI did not end within its time."""


class TooMuch(RecallError):
    """The CLI printed more than ``MAX_ANSWER_BYTES``."""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI's own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass


@contextlib.contextmanager
def signals_end_the_run():
    """SIGTERM and SIGHUP raise ``SystemExit`` while the CLI runs (in the main thread, where
    Python delivers them; a signal ignored, as under ``nohup``, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            old[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _keep_ends(stream, buf: bytearray) -> None:
    """Read ``stream`` to its end, keeping its first ``STDERR_HEAD`` bytes (the cause: a CLI's
    "API Error: 429" was lost behind 100 KB written after it, an outside tester's, stop 56) and its
    last ``STDERR_TAIL`` in ``buf``, a line of "…" between them where bytes were let go."""
    cut = b"\n\xe2\x80\xa6\n"
    try:
        while chunk := os.read(stream.fileno(), 1 << 16):
            buf.extend(chunk)
            if len(buf) > STDERR_HEAD + len(cut) + STDERR_TAIL:
                buf[STDERR_HEAD:len(buf) - STDERR_TAIL] = cut
    except (OSError, ValueError):
        pass


def run(argv: list[str], stdin: str, *, cwd: str, env: dict[str, str], timeout_s: float,
        max_bytes: int = MAX_ANSWER_BYTES) -> Finished:
    """Run ``argv`` with ``stdin`` as its input; raises ``TooLong``, ``TooMuch`` or ``OSError``
    (could not start)."""
    with adopting_orphans():  # a daemon the CLI double-forks comes back to us, to be ended with the rest
        return _run(argv, stdin, cwd=cwd, env=env, timeout_s=timeout_s, max_bytes=max_bytes)


def _run(argv: list[str], stdin: str, *, cwd: str, env: dict[str, str], timeout_s: float,
         max_bytes: int) -> Finished:
    before = children()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env, start_new_session=True, preexec_fn=ending_with_me())
    out = bytearray()
    err = bytearray()  # its two ends only: a CLI writing 2 GB there filled /tmp (stop 48, Z04)
    over = threading.Event()

    def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin.encode("utf-8", errors="replace"))
        except OSError:  # it did not read its input (exited, or closed it): its answer says why
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        try:
            while chunk := os.read(fd, 1 << 16):
                if len(out) + len(chunk) > max_bytes:
                    over.set()
                    _kill_group(proc)
                    return
                out.extend(chunk)
        except (OSError, ValueError):  # closed under it after the CLI's end
            pass

    threads = [threading.Thread(target=f, daemon=True) for f in (feed, drain)]
    threads.append(threading.Thread(target=_keep_ends, args=(proc.stderr, err), daemon=True))
    for t in threads:
        t.start()
    try:
        with signals_end_the_run():
            proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        raise TooLong() from None
    finally:
        end_all(proc.pid, before)  # whatever it started dies with it, in its group or not
    threads[1].join(DRAIN_S)
    threads[2].join(max(0.0, DRAIN_S / 5))
    if over.is_set():
        raise TooMuch()
    return Finished(proc.returncode, bytes(out).decode("utf-8", errors="replace"),
                    bytes(err).decode("utf-8", errors="replace"))


GENERATING_ENV = "RECALL_GENERATING"  # set in every process a run starts: no hook search, no second run
LOCK_FILE = "questions.lock"
LOG_FILE = "questions.log"


@contextlib.contextmanager
def run_lock(home: Path) -> Iterator[bool]:
    """Whether this process holds the one-run-at-a-time lock (released when it ends)."""
    import fcntl

    fd = open_regular(home / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def start_background(home: Path, argv: Sequence[str], cwd: Path) -> bool:
    """Start ``recall questions run ARGV`` detached (output to RECALL_HOME/questions.log, 0600),
    unless this process was itself started by a run. Never waits for it."""
    if os.environ.get(GENERATING_ENV):
        return False
    log_path = home / LOG_FILE
    fd = open_regular(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        proc = subprocess.Popen([sys.executable, "-P", "-m", "recall.cli", "questions", "run", *argv], cwd=cwd,
                                env={**os.environ, GENERATING_ENV: "1"}, stdin=subprocess.DEVNULL, stdout=fd,
                                stderr=fd, close_fds=True, start_new_session=True)
    finally:
        os.close(fd)
    # Reaped when it ends: the daemon (a long-lived parent) kept each finished run as a zombie
    # until its next save (stop 48, Z08). The `recall index` that starts one does not wait for it.
    threading.Thread(target=proc.wait, daemon=True, name="recall-questions-reaper").start()
    return True
