"""What every ``recall`` command shares: the one printer, the one error type, the error filter, the app.

User errors print one line (``Error: ...``, exit 1), never a traceback. Everything a command
prints goes through ``say`` (and an error's message through ``UserError``): text from notes,
file names and teammates is made safe for a terminal there (``recall.privacy.safetext.terminal_text``),
so no note can send an escape sequence to the user's terminal (tests/project/test_architecture.py
checks that no other printer is used under recall/cli)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import click

from recall.errors import RecallError
from recall.privacy.paths import os_error_line
from recall.privacy.safetext import shortened, terminal_text


def say(message: object = "", err: bool = False, nl: bool = True, masked: bool = True) -> None:
    """Print ``message`` (to stderr with ``err``): the CLI's one printer, terminal-safe and
    masked (``recall.privacy.masking``): a secret in a setting, a URL or a file name is never
    printed, whichever line names it. ``masked=False`` only for a path the user named and a
    script reads back (`recall config --path`), which masking could make useless."""
    from recall.privacy.masking import mask_secrets

    text = str("" if message is None else message)
    click.echo(_encodable(terminal_text(mask_secrets(text) if masked else text), err), err=err, nl=nl)


def warn(problem: object) -> None:
    """``warning: …`` on stderr, one line cut in its middle past ``MAX_LINE_CHARS`` (a folder
    nested 200 deep was a 4,263-character warning; stop 48, an outside tester's X03)."""
    from recall.privacy.safetext import shortened

    say(f"warning: {shortened(str(problem))}", err=True)


def say_json(value: object, indent: int | None = None) -> None:
    """``value`` as JSON on stdout, through ``say``: characters as they are where the terminal
    takes UTF-8, ``\\uXXXX`` escapes where it does not (ja_JP.eucJP, de_DE.ISO-8859-1: an emoji in
    a note's name was a traceback; stop 47, an outside tester)."""
    import json

    say(json.dumps(value, ensure_ascii=not _utf8(sys.stdout), indent=indent))


def _utf8(stream) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def _encodable(text: str, err: bool) -> str:
    """``text`` with what the stream's encoding cannot hold written as ``\\U0001f680``: a note
    named with an emoji or in Japanese, printed under a Latin-1 or EUC-JP locale, was a traceback."""
    stream = sys.stderr if err else sys.stdout
    if _utf8(stream):
        return text
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text


def say_plain(line: str) -> None:
    """One ``Error:`` line on stderr with no code loaded to write it: for running out of memory,
    where masking (a native module) would fail in turn. Only for lines recall wrote itself."""
    import sys

    sys.stderr.write(f"Error: {line}\n")


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


def nothing_yet(home, repair: str) -> str:
    """What to say when nothing is indexed yet: ``repair``, unless an index is running now, whose
    end is what to wait for (naming `recall index` started a second one beside it; stop 47)."""
    from recall.indexing.progress import read_progress

    running = read_progress(home)
    if running is not None and running.get("running"):
        return f"an index is running (pid {running['pid']}): wait for it to end (`recall status` shows how far it is)"
    return repair


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


class FolderPath(click.Path):
    """A folder argument: ``click.Path``, but "" (an unset shell variable, ``"$NOTES"``) is
    refused, not read as ``.``: ``recall index ''`` from your home would index all of it."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("an empty folder name (an unset variable?): name the folder, or `.` for this one", param, ctx)
        return super().convert(value, param, ctx)


def check_folders(dirs: tuple[Path, ...], command: str) -> None:
    """Each DIR given a command is a folder, else one line (click's own was three, a usage
    block and a line of its words)."""
    for d in dirs:
        if not d.exists():
            raise UserError(f"no such folder: {d}; check the path (a folder indexed before that is gone is "
                            "dropped, with its notes, by the next `recall index`)")
        if not d.is_dir():
            raise UserError(f"not a folder: {d}; `{command}` takes the folder that holds the notes")


fail_cleanly = clean_errors()


def recall_app():
    """The core (``recall.api.Recall``) under RECALL_HOME, built when a command runs."""
    from recall.api import Recall

    return Recall()


STDIN_CHARS = 65_536  # what `-` reads: more than the model ever looks at


def typed_text(parts: tuple[str, ...] | str) -> str:
    """The words of a search: ``-`` alone reads them from stdin, where another local user's
    ``ps`` does not see them (a command line is readable by everyone in ``/proc``)."""
    if parts in ("-", ("-",)):
        return sys.stdin.read(STDIN_CHARS).strip()
    return parts if isinstance(parts, str) else " ".join(parts)


def scope_flags(repo: str | None, everything: bool) -> tuple[str | None, bool]:
    """``--repo NAME`` and ``--all`` as the one scope they ask for: both, or a blank NAME, is a
    usage error (the README gives them as alternatives; one was dropped without a word)."""
    if repo is not None and not repo.strip():
        raise click.UsageError("--repo needs a project's folder name (or leave it out for this project)")
    if repo is not None and everything:
        raise click.UsageError("--repo NAME and --all ask for different scopes: give one of them")
    return repo, everything


def own_negatives_words(own: int, near: int, whose: str) -> str:
    """How many of a collection's ``own`` negatives a fit could count: the ``near`` misses
    (``recall.ranking.floors.near_misses``), as `recall index` and `recall status` say it."""
    if near == own:
        return f"{own} of {whose} own negatives"
    return f"{near} of {whose} {own} own negatives near the notes (the rest no nearer than chit-chat)"
