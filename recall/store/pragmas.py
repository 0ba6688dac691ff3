"""How every connection to a store is set up (``Store``): the write-ahead log, foreign keys, a
small log, deleted rows zeroed."""

from __future__ import annotations

import sqlite3
import time


def set_pragmas(db: sqlite3.Connection) -> None:
    _write_ahead_log(db)
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("PRAGMA synchronous=NORMAL")
    # The write-ahead log kept small (checkpoint every 256 pages, truncated to 1 MB): a first
    # index writes every note, then every vector, and the log would otherwise grow to several
    # times the database before SQLite's default checkpoint.
    db.execute("PRAGMA wal_autocheckpoint=256")
    db.execute("PRAGMA journal_size_limit=1048576")
    # Deleted rows are overwritten with zeros, not left in free pages: a purged title or a
    # secret masked by newer rules must not survive in the file's unused space.
    db.execute("PRAGMA secure_delete=ON")


def _write_ahead_log(db: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """``PRAGMA journal_mode=WAL``, waited for as the connection's timeout waits for any lock:
    SQLite answers "database is locked" at once, without its busy handler, to a connection that
    would deadlock switching the journal of a file others are opening too (eight first opens of
    a new store at once under load: one failed, saying it had waited 30 s; CI, stop 51)."""
    end = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= end:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
