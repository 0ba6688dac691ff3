"""What every ``recall`` command shares: the one error type, the error filter, the app.

User errors print one line (``Error: ...``, exit 1), never a traceback."""

from __future__ import annotations

import sqlite3

import click

from ..config import ConfigError
from ..embedders import EmbedderError
from ..errors import RecallError


class UserError(click.ClickException):
    """One-line error for the user (exit 1)."""


def clean_errors(*extra):
    """Decorator: errors a user can fix become one ``Error: ...`` line (exit 1), no traceback.

    Always catches missing files or folders, bad config, no model and permission errors,
    and damaged or impossible state (``recall.errors``: a damaged index or store, a full
    disk), each told with the command that repairs it; ``extra`` adds exception classes, or
    zero-argument functions returning one, called when the command runs, so a heavy module
    is imported only then. Shared by every ``recall`` command and ``recall_eval.cli``.
    """
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            caught: tuple[type[BaseException], ...] = (
                FileNotFoundError, NotADirectoryError, ConfigError, EmbedderError, PermissionError, RecallError,
                *(t if isinstance(t, type) else t() for t in extra))
            try:
                return fn(*args, **kwargs)
            except caught as exc:
                raise UserError(str(exc)) from None
            except (sqlite3.DatabaseError, OSError) as exc:
                line = _state_error(exc)
                if line is None:
                    raise
                raise UserError(line) from None
        return wrapper
    return decorate


def _state_error(exc: BaseException) -> str | None:
    """One line for a SQLite error or a full disk met anywhere; None: not ours to explain."""
    from ..errors import DiskFull, is_disk_full
    from ..paths import recall_home

    if is_disk_full(exc):
        return str(DiskFull(getattr(exc, "filename", None) or recall_home()))
    if isinstance(exc, sqlite3.DatabaseError):
        from ..api import DB_NAME
        from ..store import store_error

        err = store_error(recall_home() / DB_NAME, exc)
        return str(err) if isinstance(err, RecallError) else f"SQLite: {exc} ({recall_home() / DB_NAME})"
    return None


fail_cleanly = clean_errors()


def pg_store_error() -> type[Exception]:
    """The team store's error, for ``clean_errors``: psycopg is imported only when it is raised."""
    from ..pgstore import PgStoreError

    return PgStoreError


def recall_app():
    """The core (``recall.api.Recall``) under RECALL_HOME, built when a command runs."""
    from ..api import Recall

    return Recall()
