"""What every ``recall`` command shares: the one printer, the one error type, the error filter, the app.

User errors print one line (``Error: ...``, exit 1), never a traceback. Everything a command
prints goes through ``say`` (and an error's message through ``UserError``): text from notes,
file names and teammates is made safe for a terminal there (``recall.privacy.safetext.terminal_text``),
so no note can send an escape sequence to the user's terminal (tests/project/test_architecture.py
checks that no other printer is used under recall/cli)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

# recall.commandline's, handed to every command from here
from recall.commandline import Finite, Interrupted, UserError, clean_errors, output_failed  # noqa: F401
from recall.privacy.safetext import terminal_text


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


def nothing_yet(home, repair: str) -> str:
    """What to say when nothing is indexed yet: ``repair``, unless an index is running now, whose
    end is what to wait for (naming `recall index` started a second one beside it; stop 47)."""
    from recall.indexing.progress import read_progress

    running = read_progress(home)
    if running is not None and running.get("running"):
        return f"an index is running (pid {running['pid']}): wait for it to end (`recall status` shows how far it is)"
    return repair


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
