"""What a SQLite error or a full disk means for the user, in one line with its repair: a full
disk, a read-only or another user's home, a damaged store, a file-size limit, a path too long
for SQLite, a disk over its quota or failing; SQLite's own words ("disk I/O error", "unable to open
database file") name none of these. Said by the CLI (``recall.cli.common.clean_errors``) and the watcher alike."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from recall.errors import DiskFull, RecallError, StoreDamaged, is_disk_full


def state_line(exc: BaseException, home: Path, db: Path) -> str | None:
    """One line for a SQLite error or a full disk met anywhere under ``home`` (``db``: its
    store), said by the CLI and by the watcher alike; None: not a state of the machine or of
    the index, a bug to show whole."""
    from recall.errors import is_unwritable

    if is_disk_full(exc) or (isinstance(exc, sqlite3.OperationalError) and "disk I/O error" in str(exc)
                             and nearly_full(home)):  # SQLite's word for a full disk, at times
        where = Path(getattr(exc, "filename", None) or home)
        return str(DiskFull(where, index=where.is_relative_to(home)))
    if is_unwritable(exc):  # a read-only mount, another user's file: what and the repair
        from recall.privacy.trust import home_problem

        return home_problem(home) or str(exc)
    if isinstance(exc, sqlite3.DatabaseError):
        err = store_error(db, exc)
        return str(err) if isinstance(err, RecallError) else f"SQLite: {exc} ({db})"
    return None


def nearly_full(path: Path) -> bool:
    """Whether the disk holding ``path`` has less than 1 MiB free."""
    free = free_bytes(path)
    return free is not None and free < NEARLY_FULL


NEARLY_FULL = 1 << 20


def free_bytes(path: Path) -> int | None:
    """The free bytes on the disk holding ``path`` (or its nearest existing parent); None if unknown."""
    import shutil

    for where in (path, *path.parents):
        try:
            return shutil.disk_usage(where).free
        except OSError:
            continue
    return None


def store_error(path: Path, exc: sqlite3.DatabaseError) -> Exception:
    """What a SQLite error means for the user: a full disk, a damaged file (or something
    that is no file where the store goes), or (anything else: locked, unopenable) the error
    itself."""
    if is_disk_full(exc):
        return DiskFull(path)
    if os.path.lexists(path) and not os.path.isfile(path):  # a folder, a pipe: --rebuild moves it aside
        return StoreDamaged(path, "not a file")
    if isinstance(exc, sqlite3.IntegrityError):  # two writers at once, not a damaged file (--rebuild embeds all)
        return RecallError(f"another process changed {path} at the same moment ({exc}): run the command again")
    if not isinstance(exc, sqlite3.OperationalError) or "malformed" in str(exc):
        return StoreDamaged(path, str(exc))
    if "unable to open database file" in str(exc) and len(str(path)) > SQLITE_MAX_PATH:
        return RecallError(f"the store's path is too long for SQLite ({len(str(path)):,} characters; it opens no "
                           f"file whose path is longer than {SQLITE_MAX_PATH}): point RECALL_HOME at a shorter path "
                           f"({path})")
    if "database is locked" in str(exc):
        return RecallError(f"{path} stayed locked by another process for 30 s (a `recall index` running, or the "
                           "daemon holding a store damaged under it): run `recall stop`, then the command again "
                           "(`recall index --rebuild` if it then says the store is damaged)")
    if "disk I/O error" in str(exc) and (limit := file_size_limit()) is not None:
        return RecallError(f"a file-size limit (`ulimit -f`: {limit:,} bytes) stopped a write of {path}: raise it "
                           "(`ulimit -f unlimited`), then run the command again (`recall index` goes on where it "
                           "stopped; the index in use was not changed)")
    if "disk I/O error" in str(exc):  # SQLite's words for EDQUOT, for ENOSPC growing its -shm file, for a bad disk
        return RecallError(f"SQLite could not read or write {path} (disk I/O error): the disk may be full or over "
                           "its quota, or failing; free some space (or check the disk), then run the command again "
                           "(`recall index` goes on where it stopped; the index in use was not changed)")
    return exc


SQLITE_MAX_PATH = 512  # SQLite's own limit on a file's path (SQLITE_MAX_PATHNAME), under the system's


def file_size_limit() -> int | None:
    """The largest file this process may write (RLIMIT_FSIZE), in bytes; None when unlimited.
    SQLite says only "disk I/O error" when a write meets it."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def short_of(exc: OSError) -> None:
    """Raise what the machine ran short of (descriptors, memory: ``paths.SHORT_OF``) as itself with
    its repair; return for anything else. Out of descriptors, a sound index was said to be damaged,
    with a rebuild as the repair (an outside tester's, stop 58)."""
    from recall.privacy.paths import SHORT_OF, os_error_line

    if exc.errno in SHORT_OF:
        raise RecallError(os_error_line(exc)) from exc


def store_identity(db: Path) -> tuple[int, int] | None:
    """The store file's (device, inode) now; None where there is none."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def still_there(home: Path, db: Path, identity: tuple[int, int] | None) -> None:
    """``RecallError`` when the store ``db``, ``identity`` when the command opened it, is no longer
    the file at its path: RECALL_HOME deleted (or moved, or replaced) while `recall index` wrote
    it, which then reported what it had added, exit 0, all of it unlinked (an outside tester's)."""
    if identity is None or store_identity(db) == identity:
        return
    raise RecallError(f"{home} was deleted or replaced while this command wrote its index ({db} is no longer the "
                      "file it wrote): nothing it did was kept; run `recall index` again (it indexes every note "
                      "anew)")
