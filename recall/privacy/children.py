"""Children that end with recall: the kernel's parent-death signal (Linux ``prctl``).

A converter's ffmpeg and the agent CLI that writes questions were left running, reparented to
init, when the process that started them died without its cleanup (Ctrl-C's kill of a
converter, SIGKILL or the out-of-memory killer on `recall questions run`): one went on writing
gigabytes of frames (stop 48, an outside tester's Z01 and Z05). ``ending_with_me()`` is the
``preexec_fn`` that asks the kernel to kill the child when its parent goes, whatever the way.
Elsewhere than Linux it does nothing: the callers' own cleanup still runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator

PR_SET_PDEATHSIG = 1


def ending_with_me(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess``: the child gets ``sig`` when the thread that started
    it ends (for the callers, who wait for their child, that is their process's end). The C
    library is looked up here, before the fork, so the child only makes one system call."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig))

    return child


PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
REAP_S = 2.0  # how long the adopted are waited for once killed


@contextlib.contextmanager
def adopting_orphans() -> Iterator[None]:
    """While it lasts, a descendant's orphans come to this process (not to init), so that a
    daemon an agent double-forks can still be found and ended (``end_all``); the flag as it was
    after. Linux only; elsewhere nothing."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        yield
        return
    was = ctypes.c_int(0)
    prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was))
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        prctl(PR_SET_CHILD_SUBREAPER, was.value)


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the process's name (state first, then its parent:
    the name, in brackets, may hold spaces), None where it cannot be read (gone, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _processes() -> dict[int, tuple[int, bytes]]:
    """Every process's parent and state, from ``/proc`` (empty where there is none)."""
    out: dict[int, tuple[int, bytes]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        fields = stat_fields(name) if name.isdigit() else None
        if fields and len(fields) > 1 and fields[1].isdigit():
            out[int(name)] = (int(fields[1]), fields[0])
    return out


def _below(parents: dict[int, int], roots: set[int]) -> set[int]:
    """``roots`` and every process descending from them."""
    found = set(roots)
    grew = True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    return found


def children() -> set[int]:
    """This process's children now."""
    me = os.getpid()
    return {pid for pid, (ppid, _) in _processes().items() if ppid == me}


def end_all(root: int, before: set[int]) -> None:
    """SIGKILL ``root``'s process group, ``root`` and everything descending from it, and every
    child of ours not in ``before`` (orphans brought back to us under ``adopting_orphans``), until none is
    left: a helper the agent started in a session of its own (Node's ``detached``, ``setsid``)
    escaped the group's kill and ran on for ever (stop 49, an outside tester's Z06). The adopted
    ones are reaped; ``root`` is left to its ``Popen``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, signal.SIGKILL)
    me = os.getpid()
    adopted: set[int] = set()
    for _ in range(50):  # each round kills what the last one let fork; a few suffice
        table = _processes()
        parents = {pid: ppid for pid, (ppid, _) in table.items()}
        ours = {pid for pid, ppid in parents.items() if ppid == me} - before - {root}
        adopted |= ours
        victims = (_below(parents, {root} | ours) - {me}) & set(parents)
        alive = [pid for pid in victims if table[pid][1] not in (b"Z", b"X")]
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    deadline = time.monotonic() + REAP_S  # one stuck in the kernel (a dead mount) is left to init
    while adopted and time.monotonic() < deadline:
        for pid in list(adopted):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    adopted.discard(pid)
            except ChildProcessError:
                adopted.discard(pid)
        if adopted:
            time.sleep(0.01)


@contextlib.contextmanager
def unnamed(path: str | os.PathLike[str]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """``path`` for a child's command line without its name, which any local user reads in
    ``/proc/<pid>/cmdline`` (a recording ``pw_X.mp4`` was named in ffmpeg's: an outside tester's,
    stop 58): (``/proc/self/fd/N``, the ``pass_fds`` that give the child descriptor N), the file
    opened here; the path itself where there is no ``/proc``. Raises OSError as ``open`` does."""
    if not os.path.isdir("/proc/self/fd"):
        yield os.fspath(path), ()
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe there must not hold us
    try:
        yield f"/proc/self/fd/{fd}", (fd,)
    finally:
        os.close(fd)
