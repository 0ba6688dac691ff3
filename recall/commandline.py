"""What both command-line programs (``recall``, ``recall.cli``; ``recall-eval``, ``recall_eval.cli``)
share, below either: the one error type (``UserError``: one line, masked, terminal-safe), the error
filter that turns what a user can fix into it (``clean_errors``), Ctrl-C's line (``Interrupted``),
a failed write of a command's own output (``output_failed``) and a float option that is a number
(``Finite``). ``recall.cli.common`` hands them to every ``recall`` command."""

from __future__ import annotations

import sqlite3
import sys

import click

from recall.errors import RecallError
from recall.privacy.paths import os_error_line
from recall.privacy.safetext import shortened, terminal_text


class UserError(click.ClickException):
    """One-line error for the user (exit 1), its message masked (a secret in a file name or a
    set's id it names), terminal-safe, and cut in its middle past a screen's worth."""

    def __init__(self, message: str) -> None:
        from recall.privacy.masking import mask_secrets

        super().__init__(terminal_text(shortened(mask_secrets(message))))


class Interrupted(UserError):
    """Ctrl-C: one line saying what became of the work (exit 130, as a shell reports SIGINT)."""

    exit_code = 130

    def __init__(self, kept: str = "what was finished is kept") -> None:
        super().__init__(f"interrupted: {kept}; run the same command again to go on")


def clean_errors(*extra):
    """Decorator: errors a user can fix become one ``Error: ...`` line (exit 1), no traceback.

    Always catches missing files or folders, and every error of recall's own: one root,
    ``recall.errors.RecallError`` (bad config, no model, a damaged index or store, a full
    disk, an untrusted daemon, a team store that cannot be used, ...), each told with the
    command that repairs it; SQLite errors and a full or read-only disk met anywhere are
    told the same way. ``extra`` adds exception classes (the harness's own), or
    zero-argument functions returning one, called when the command runs, so a heavy module
    is imported only then. Shared by every ``recall`` command and ``recall_eval.cli``.
    """
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            caught: tuple[type[BaseException], ...] = (
                FileNotFoundError, RecallError, *(t if isinstance(t, type) else t() for t in extra))
            try:
                return fn(*args, **kwargs)
            except caught as exc:
                raise UserError(str(exc)) from None
            except BrokenPipeError:  # the reader went away (`| head`): nothing is wrong, nothing more to say
                _stdout_to_nowhere()  # (and no second error when the interpreter flushes it at exit)
                sys.exit(141)  # what a shell reports for a writer a closed pipe ended (`ls | head`): 128 + SIGPIPE
            except KeyboardInterrupt:
                raise Interrupted() from None
            except MemoryError:  # numpy's too: said by `recall.cli.main.run`, plainly (masking loads more code)
                raise
            except (sqlite3.DatabaseError, OSError) as exc:
                line = output_failed(exc) or _state_line(exc)
                if line is None and isinstance(exc, OSError):
                    line = os_error_line(exc)
                if line is None:
                    raise
                raise UserError(line) from None
        return wrapper
    return decorate


def _stdout_to_nowhere() -> None:
    import os

    try:
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, sys.stdout.fileno())
        os.close(nowhere)
    except (OSError, ValueError):
        pass


def _state_line(exc: BaseException) -> str | None:
    from recall.privacy.paths import recall_home, store_file
    from recall.store.errors import state_line

    return state_line(exc, recall_home(), store_file())


def output_failed(exc: BaseException) -> str | None:
    """One line when ``exc`` is a failed write of the command's own output (stdout to a full
    disk, ``> /dev/full``: raised inside click's ``echo``, which ``say`` and click's help and
    usage lines write through), not of a file of recall's: an outside tester was told
    RECALL_HOME's disk was full and to free space there. None otherwise."""
    if not isinstance(exc, OSError) or exc.filename is not None or isinstance(exc, BrokenPipeError):
        return None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "echo" and "click" in code.co_filename:
            return (f"could not write this command's output: {exc.strerror or exc}; nothing of recall's is "
                    "wrong (send the output somewhere with room)")
        tb = tb.tb_next
    return None


class Finite(click.FloatRange):
    """A float option's type: in its range, and a number (click's FloatRange lets nan through:
    every comparison with it is false; inf is out of any bounded range but says so oddly)."""

    def convert(self, value, param, ctx):
        import math

        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv
