"""The one open of every file recall reads or writes by itself (``open_regular``): without
blocking, and refused unless a regular file, so a named pipe, a device or a folder put where a
file goes never hangs the hook, the daemon or a command. Standard library only (the hook and
git's records in ``recall.privacy.worktree`` read through it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600


class NotAFile(OSError):
    """A path that should be a file is a named pipe, socket, folder or device: ``str`` says which,
    ``filename`` where (when known). An ``OSError``: whoever handles an unreadable file handles
    this one too, without blocking."""

    def __init__(self, kind: str, path: Path | str | None = None) -> None:
        super().__init__(kind)
        self.filename = None if path is None else str(path)

    def __str__(self) -> str:
        return str(self.args[0])


def file_kind(mode: int) -> str:
    """What a non-regular ``st_mode`` is, for a user ("a named pipe")."""
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file ("a named pipe, not a file"), or None when it is a
    regular file or absent (links followed). Nothing is opened, so a pipe there cannot block:
    for files a library opens by name (SQLite, FAISS, numpy)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else f"{file_kind(mode)}, not a file"


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_regular(path: Path | str, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """``os.open`` for every file recall reads or writes by itself: opened without blocking and
    refused (``NotAFile``) unless it is a regular file, so a named pipe, a device or a folder put
    where a file goes never hangs the hook, the daemon or a command (a pipe with no reader
    refuses a writer, ENXIO, and says so too). The descriptor is blocking again once checked."""
    try:
        fd = os.open(path, flags | _NONBLOCK | getattr(os, "O_NOCTTY", 0), mode)
    except OSError as exc:
        kind = not_a_file(Path(path))
        if kind is not None:
            raise NotAFile(kind.removesuffix(", not a file"), path) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotAFile(file_kind(st.st_mode), path)
        if _NONBLOCK:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """The first ``max_bytes`` of a regular file and its size (``open_regular``: anything else
    is ``NotAFile``, found without blocking)."""
    return read_fd(open_regular(path), path, max_bytes)


def read_fd(fd: int, path: Path, max_bytes: int) -> tuple[bytes, int]:
    """The first ``max_bytes`` of the open file ``fd`` (``path``'s) and its size; ``fd`` closed."""
    with os.fdopen(fd, "rb") as fh:
        try:
            size = os.fstat(fd).st_size  # read what is there, not a buffer of the cap (the hook's path)
            return fh.read(min(max_bytes, size + 1) if size else max_bytes), size
        except OSError as exc:  # a read that fails (EIO): say which file
            exc.filename = exc.filename or str(path)
            raise


class LeftTheFolder(OSError):
    """A file found inside a folder that, opened, is somewhere else: swapped for a symlink (or a
    folder on its way for one) between the walk that checked it and the open that reads it."""

    def __init__(self, path: Path | str) -> None:
        super().__init__("it leads outside the folder now (a symlink put there after the folder was walked)")
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])


def _opened_at(fd: int, path: Path | str) -> str | None:
    """The real path of the file open as ``fd`` (Linux: ``/proc/self/fd``, which names what was
    opened, whatever its name is now); elsewhere that of ``path`` if it still names the same
    file, else None (something else is there now)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)")
    except OSError:
        pass
    real = os.path.realpath(path)
    try:
        there, opened = os.stat(real), os.fstat(fd)
    except OSError:
        return None
    return real if (there.st_dev, there.st_ino) == (opened.st_dev, opened.st_ino) else None


def open_inside(path: Path | str, root: Path | str) -> int:
    """``open_regular`` (read-only) for a file a walk of the folder ``root`` found: refused
    (``LeftTheFolder``) unless the file opened is inside ``root``. A walk's check that a note is
    no symlink out of the folder, then an open by name, left a moment in which another user who
    can write a shared folder swapped the note for a link to a private file, which was indexed
    (an outside tester's H5). Checking what was opened closes it: a link inside the folder still
    works, one outside (the last part or a folder on the way) is refused. ``root``: its real path
    (``os.path.realpath``), worked out once per walk."""
    fd = open_regular(path)
    try:
        where = _opened_at(fd, path)
        if where is None or not (where == str(root) or where.startswith(str(root).rstrip("/") + "/")):
            raise LeftTheFolder(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_inside(path: Path, root: Path | str, max_bytes: int) -> tuple[bytes, int]:
    """``read_regular`` of a file a walk of ``root`` found (``open_inside``)."""
    return read_fd(open_inside(path, root), path, max_bytes)
