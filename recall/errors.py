"""The root of recall's errors, and damaged or impossible state, each told in one line with
the command that repairs it.

The core raises these; front ends print ``str(exc)`` (the CLI as ``Error: ...``, the
daemon logs the type). They are kept apart from the modules that raise them so a front end
can catch them without importing FAISS, numpy or SQLite code.
"""

from __future__ import annotations

import errno
from pathlib import Path

REBUILD = "recall index --rebuild"


class RecallError(Exception):
    """The one root of recall's errors: ``str`` is one line saying what is wrong and the
    command that repairs it. Every exception recall defines derives from it (those that code
    catches as ``ValueError`` too keep that base: ``ConfigError``, ``NoteRejected``), so a front
    end catches this one class (``recall.cli.common.clean_errors``); tests/core/errors/test_errors.py checks."""


class IndexDamaged(RecallError):
    def __init__(self, path: Path | str, detail: str) -> None:
        super().__init__(f"the search index is damaged ({path}: {detail}); repair it with `{REBUILD}`")


class StoreDamaged(RecallError):
    def __init__(self, path: Path | str, detail: str) -> None:
        super().__init__(f"the note store is damaged ({path}: {detail}); repair it with `{REBUILD}` "
                         "(it moves the file aside and indexes your notes again)")


class DiskFull(RecallError):
    def __init__(self, path: Path | str, index: bool = True) -> None:
        """``index``: ``path`` is recall's own (under RECALL_HOME), where an index was being written."""
        super().__init__(f"no space left on the disk while writing {path}; free some space on it, then run "
                         "the command again" + (" (`recall index` goes on where it stopped; the index in use "
                                                "was not changed)" if index else ""))


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC/EDQUOT from the OS, SQLite's "database or disk is full", FAISS's write errors."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return True
    text = str(exc)
    return "database or disk is full" in text or "No space left" in text or "write error" in text


class EmbedderError(RecallError):
    """A model that cannot be loaded, with a message saying what to do (raised by
    ``recall.embedding.models``, which names it too)."""


class HomeUnusable(RecallError):
    """RECALL_HOME cannot be used: another user's, read-only, not writable (``recall.privacy.trust``
    says which and the repair)."""


def is_unwritable(exc: BaseException) -> bool:
    """EROFS, EACCES, EPERM: the OS refused a write (a read-only mount, another user's file)."""
    return isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)


OUT_OF_MEMORY = ("recall ran out of memory (a limit such as `ulimit -v`, or a container's, or the machine's): "
                 "free some, or raise the limit, then run the command again; what was finished is kept")


class OutOfMemory(RecallError):
    """Out of memory, or of room for a thread's stack (what ``short_of_memory`` says)."""

    def __init__(self) -> None:
        super().__init__(OUT_OF_MEMORY)


def short_of_memory(exc: BaseException) -> bool:
    """Out of memory, or of address space for a thread (Python's "can't start new thread" under a
    memory limit such as `ulimit -v`: a daemon's workers are started by the hundred MB)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc))
