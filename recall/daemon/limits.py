"""What the machine lets a daemon have: the soft limits it inherited raised (file size,
descriptors), a descriptor limit no daemon can answer under refused at start, a start that
failed for want of memory said as that (``recall.daemon.lifecycle`` calls each), and the memory
a rebuild freed handed back (``return_freed_memory``)."""

from __future__ import annotations

import contextlib

OPEN_FILES = 4096  # descriptors the daemon asks for: sessions, the store's files, the watcher's


def lift_soft_limits() -> None:
    """The file-size limit of the shell or hook that started this daemon (`ulimit -S -f`) raised to
    what the system lets it: the daemon outlives that command by hours, and its log stopped at the
    limit without a word (an outside tester's, stop 56). A hard limit stays; writes then say so."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    # Descriptors too, up to OPEN_FILES: a daemon a hook started under `ulimit -n 12` failed its
    # start as a damaged index, or answered 1 of 10 sessions at once (an outside tester's, stop 58).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


MIN_OPEN_FILES = 32  # under it a daemon holds its store and its files with no room left to answer


def too_few_files() -> Exception | None:
    """A hard descriptor limit no daemon can answer under (`ulimit -n 13`: it listened and never
    accepted a question, silent for good; an outside tester's, stop 58), said with its repair."""
    from recall.errors import RecallError

    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft >= MIN_OPEN_FILES:
        return None
    return RecallError(f"this process may open only {soft} files (`ulimit -n`) and the daemon needs "
                       f"{MIN_OPEN_FILES}: raise it (`ulimit -n 4096`) where the agent starts, then send a message")


def start_failure(exc: BaseException) -> BaseException:
    """What a failed start records: under an address-space limit (`ulimit -v`) a library that
    cannot map itself fails as an ImportError or an OSError, recorded as nothing more ("ImportError",
    and a repair, `recall serve --foreground`, that starts fine without the limit: an outside
    tester's, stop 56); it is the limit's doing, said with its repair."""
    import resource

    from recall.errors import OutOfMemory, RecallError, short_of_memory

    limited = resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    return OutOfMemory() if short_of_memory(exc) or (limited and not isinstance(exc, RecallError)) else exc


def return_freed_memory() -> None:
    """The heap pages freed since handed back to the system (glibc's ``malloc_trim``); nothing where
    there is no glibc. A daemon whose watcher rebuilt the index on every save kept what each rebuild
    had allocated: ~1 GB resident at 9,000 notes after ~30 saves, 8 times its working set (D2)."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
