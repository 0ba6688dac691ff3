"""An install's or uninstall's writes to the user's agent files, done as one batch (``run``).

Every file the edit touches is read once (``current``: later reads in the same edit see the
bytes staged for it), its new bytes are staged (``stage``), and nothing is written until the
whole edit is computed. Then ``_commit``: a file changed since it was read (Claude Code rewrites
``~/.claude.json`` while a session is open) is not overwritten, the edit is made again on its
new content; a file its owner made read-only is refused; a complete new copy of every file is
written beside it (a full disk or a folder recall cannot write to refuses here, before any file
changes); then the copies replace the files, and a failure mid-way puts back each file already
replaced. A hard-linked file (dotfiles kept with hard links) is written in place, so that its
other links see the change: its old bytes are kept and written back when the write fails (a
full disk had left it cut at 4 KiB, no longer JSON). What install added is recorded
(``records.state_note``) only once every write landed: a record of a write that failed made a
later uninstall remove the user's own flags (an outside tester's D1, D2, D4, D8)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from recall.errors import RecallError

T = TypeVar("T")
_UNSET: Any = object()
TRIES = 3  # edits made again on a file changed meanwhile, before one line refuses


class InstallError(RecallError):
    """Settings that cannot be read or written; the message says which file and why."""


class _Changed(Exception):
    """A file the batch read was changed by someone else before the batch wrote it."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


class _File:
    """One file of the batch: ``shown`` (the path as the user names it, a link's own path),
    ``before`` (its bytes as read; None: it did not exist), ``after`` (bytes to write, None to
    delete it, ``_UNSET``: only read)."""

    def __init__(self, shown: Path, before: bytes | None) -> None:
        self.shown, self.before, self.after = shown, before, _UNSET


class Batch:
    """The files an edit read and staged, ``records.state_note``'s notes held till its writes
    landed, and what runs then (``then``: the notes written, folders install made dropped)."""

    def __init__(self) -> None:
        self.files: dict[Path, _File] = {}
        self.notes: list[tuple[Path, str, bool]] = []
        self.then: list[Callable[[], None]] = []


_batch: Batch | None = None


def active() -> Batch | None:
    return _batch


def _target(path: Path) -> Path:
    try:
        return path.resolve() if path.is_symlink() else path
    except (OSError, RuntimeError):  # a loop of links: read (and refused) as it is
        return path


def _read(path: Path) -> bytes | None:
    from recall.privacy.paths import read_bytes

    try:
        return read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):  # a file where its folder should be: said as it is written
        return None


def _entry(path: Path) -> _File:
    assert _batch is not None
    target = _target(path)
    if target not in _batch.files:
        _batch.files[target] = _File(path, _read(target))
    return _batch.files[target]


def current(path: Path) -> bytes | None:
    """``path``'s bytes as this edit sees them (None: no such file)."""
    if _batch is None:
        return _read(_target(path))
    entry = _entry(path)
    return entry.before if entry.after is _UNSET else entry.after


def current_text(path: Path) -> str | None:
    data = current(path)
    return None if data is None else data.decode("utf-8")


def exists(path: Path) -> bool:
    if _batch is None:
        return path.exists()
    return current(path) is not None


def stage(path: Path, data: bytes | None) -> None:
    """``data`` for ``path`` (None: delete it), written when the batch is; at once without one."""
    if _batch is not None:
        _entry(path).after = data
        return
    run(lambda: stage(path, data))


def later(fn: Callable[[], None]) -> None:
    """``fn`` once the batch's writes landed (at once without a batch)."""
    if _batch is None:
        fn()
    else:
        _batch.then.append(fn)


def run(edit: Callable[[], T]) -> T:
    """``edit()`` as one batch: its reads, then all its writes or none. Made again (up to
    ``TRIES`` times) on a file changed since it read it; then one line refuses."""
    global _batch
    if _batch is not None:  # inside a batch already: part of it
        return edit()
    for _ in range(TRIES):
        _batch = batch = Batch()
        try:
            result = edit()
            _commit(batch)
        except _Changed as exc:
            changed = exc.path
            continue
        finally:
            _batch = None
        for fn in batch.then:  # the records first (recall.agents.records.state_note)
            fn()
        return result
    raise InstallError(
        f"{changed} changed while recall edited it, {TRIES} times (the agent writing it?): "
        "nothing was written; close the agent and run the command again"
    )


def _commit(batch: Batch) -> None:
    writes = [(t, f) for t, f in batch.files.items() if f.after is not _UNSET and f.after != f.before]
    for target, entry in writes:
        if _read(target) != entry.before:
            raise _Changed(entry.shown)
        st = _stat(target)
        if st is not None and not st.st_mode & stat.S_IWUSR:
            raise PermissionError(errno.EACCES, "it is read-only", str(entry.shown))
    made: list[Path] = []
    copies: dict[Path, str] = {}
    done: list[tuple[Path, _File]] = []
    try:
        for target, entry in writes:  # every new copy first: nothing changed yet
            if entry.after is not None:
                with _named(entry.shown):
                    copies[target] = _copy(target, entry.after, made)
        for target, entry in writes:
            with _named(entry.shown):
                _swap(target, entry.after, copies.pop(target, None))
            done.append((target, entry))
    except BaseException:
        for target, entry in reversed(done):
            _put_back(target, entry.before)
        for tmp in copies.values():
            Path(tmp).unlink(missing_ok=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise


@contextmanager
def _named(shown: Path) -> Iterator[None]:
    """An OSError raised inside names ``shown`` (not "a file under RECALL_HOME", nor the copy)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None or str(exc.filename).startswith(str(shown.parent) + os.sep + ".recall."):
            exc.filename = str(shown)
        raise


def _stat(target: Path) -> os.stat_result | None:
    try:
        return target.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _copy(target: Path, data: bytes, made: list[Path]) -> str:
    """A complete copy of ``data`` beside ``target``, with its mode and owner; its path."""
    import tempfile

    from recall.privacy.paths import make_missing_dirs

    missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    make_missing_dirs(target.parent)
    made.extend(reversed(missing))
    st = _stat(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".recall.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st else 0o600)
        if st is not None and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()) and os.geteuid() == 0:
            os.chown(tmp, st.st_uid, st.st_gid)  # `sudo recall install` left root's file where the user's was
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _swap(target: Path, data: bytes | None, tmp: str | None) -> None:
    """The new copy in ``target``'s place: renamed over it, or, where other hard links share it,
    written into it (its old bytes written back if that fails); ``data`` None deletes it."""
    if data is None:
        target.unlink(missing_ok=True)
        return
    assert tmp is not None
    st = _stat(target)
    if st is None or st.st_nlink == 1:
        os.replace(tmp, target)
        return
    old = target.read_bytes()
    Path(tmp).unlink()  # its space for the write in place (it proved there was enough)
    try:
        _write_in_place(target, data)
    except BaseException:
        _write_in_place(target, old)  # fits: the file held that many bytes a moment ago
        raise


def _write_in_place(target: Path, data: bytes) -> None:
    with open(target, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def _put_back(target: Path, before: bytes | None) -> None:
    """A file already replaced by a batch that then failed, given back as it was (best effort)."""
    try:
        if before is None:
            target.unlink(missing_ok=True)
        else:
            _swap(target, before, _copy(target, before, []))
    except OSError:
        pass
