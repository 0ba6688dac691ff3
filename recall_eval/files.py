"""How anything the harness writes reaches the disk or the terminal: secrets masked, control
characters shown, the user's only.

A report holds the messages of a question set (a user's own, with ``recall-eval generate
--backend file``) and the notes' names; an exported or imported set holds a collection's
text. Every string in it is masked like indexed text (``recall.privacy.masking.mask_secrets``)
and made terminal-safe (``recall.privacy.safetext.terminal_text``: an escape sequence in a
note's name reads ``\\u001b`` in a report.md that is ``cat``-ed, in a chart, in a table
printed) before anything is written or printed. Every file the harness writes goes through
``write_private``: 0600 in folders it creates 0700 whatever the umask (another user could
otherwise rewrite a report.html the user opens, or the results.json the page renders), and
atomically (a temporary file beside it, then a rename), so a full disk or a kill leaves the
old file whole: a config ``tune`` rewrites, a baseline, a question set
(``tests/project/test_architecture.py`` checks that no other module of the harness writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall.privacy.masking import mask_secrets
from recall.privacy.paths import make_missing_dirs, replace_private
from recall.privacy.safetext import terminal_text

# What the harness reads of a file a user names (a question set, an answer, a provenance record):
# far past any it writes.
MAX_INPUT_BYTES = 1 << 31


class InputError(ValueError):
    """A file a user named that the harness cannot read: one line (``read_input``)."""


class OutputError(InputError):
    """A path the harness was told to write that it cannot: one line naming the path, the option
    that set it and the repair (``check_output`` before the work, ``write_private`` at write time)."""


class IdCollision(InputError):
    """Two keys (question ids) that would be written alike: one line, never one replacing the other."""


def read_input(path: Path, said: list[str] | None = None) -> str:
    """A file a user gave the harness, as text the way recall reads its settings files
    (``recall.privacy.decoding.settings_text``: a byte-order mark says the encoding, else UTF-8),
    opened without blocking: a named pipe, a socket or a folder where the file goes is one line,
    not a wait for a writer that may never come (`--from FIFO` and a FIFO for a provenance record
    hung; an outside tester's, stop 55)."""
    from recall.privacy.decoding import settings_encoding, settings_text
    from recall.privacy.regular import NotAFile, read_regular

    try:
        raw, _ = read_regular(path, MAX_INPUT_BYTES)
    except NotAFile as exc:
        raise InputError(f"{path} is {exc}, not a file: give a file") from None
    if said is not None and (how := settings_encoding(raw)) is not None:
        said.append(how)
    try:
        return settings_text(raw)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 (byte {exc.start}): save it as UTF-8") from None


def shown(text: str) -> str:
    """One string as the harness shows and writes it: masked, then terminal-safe."""
    return terminal_text(mask_secrets(text))


def masked(value: Any) -> Any:
    """``value`` (a results dict, a list, a string) with every string in it, keys too, ``shown``;
    a key or an ``id`` that showing changes keeps a short hash of what it was (``shown_id``), and
    two keys still written alike are one line (``IdCollision``), never one replacing the other."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        out = {shown_id(k) if isinstance(k, str) else k: shown_id(v) if k == "id" and isinstance(v, str) else masked(v)
               for k, v in value.items()}
        if len(out) != len(value):  # two keys one once shown: the later would replace the earlier
            seen: dict[Any, Any] = {}
            for k in value:
                s = shown_id(k) if isinstance(k, str) else k
                if s in seen:
                    raise IdCollision(f"{shown(repr(seen[s]))} and {shown(repr(k))} are written alike ({s}): "
                                      "rename one of them")
                seen[s] = k
        return out
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    return value


def shown_id(text: str) -> str:
    """An identifier (a question's id, a key) ``shown``; when that changes it, for any reason,
    followed by a short hash of the original: two ids stay two. Masking (a baseline of 48
    questions held 2 when 22-character ids all read ``[REDACTED]``: stop 44) and escaping alike
    (``k0<ESC>`` and the text ``k0\\u001b`` both read ``k0\\u001b``: one replaced the other in a
    baseline, and the gate passed a real regression: an outside tester, stop 58)."""
    out = shown(text)
    if out == text:
        return out
    import hashlib

    return f"{out}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def write_private(path: Path, data: str | bytes, newline: str | None = None, keep_mode: bool = False) -> None:
    """``data`` to ``path`` atomically, 0600, its missing folders made 0700
    (``recall.privacy.paths.replace_private``; ``newline``: what a line feed of ``data`` is
    written as, for a file kept in CRLF; ``keep_mode``: a file of the user's there that no one
    else may write keeps its mode, a config they made 0644)."""
    from recall.errors import RecallError, is_disk_full

    if isinstance(data, str) and newline not in (None, "\n"):
        data = data.replace("\n", newline)
    try:
        make_missing_dirs(path.parent)
        replace_private(path, data, keep_mode=keep_mode)
    except OSError as exc:
        if is_disk_full(exc):  # the folder written to, not RECALL_HOME (an outside tester: stop 44)
            raise RecallError(f"no space left on the disk while writing {path}; free some space on it, then run "
                              "the command again (the files written before are unchanged)") from exc
        if (named := _option_for(path)) is None:
            raise
        raise OutputError(_unwritable(path, *named, exc)) from None


# The paths the command line named for its output (``check_output``), and the option that named
# each: a write under one that fails says that option, not RECALL_HOME (an outside tester's 9).
_OUTPUTS: dict[Path, str] = {}


def _option_for(path: Path) -> tuple[Path, str] | None:
    """(the path named, the option that named it) that ``path`` is or is under, if any."""
    path = path.absolute()
    for root, option in _OUTPUTS.items():
        if path == root or root in path.parents:
            return root, option
    return None


def _unwritable(path: Path, root: Path, option: str, exc: OSError) -> str:
    """One line for a write under ``option`` that failed: the path, what is wrong, the repair."""
    import errno

    where = exc.filename or path
    why = {errno.EROFS: "the file system is read-only",
           errno.EACCES: "you may not write there (`ls -ld` it; `chmod u+w` the folder)",
           errno.EPERM: "the system refuses the write (`lsattr` it)",
           errno.ENOTDIR: "a file is where a folder goes (move it aside)",
           errno.EEXIST: "a file is where a folder goes (move it aside)",
           errno.EISDIR: "a folder is where the file goes (move it aside)",
           errno.ENAMETOOLONG: "the path is longer than the system takes"}.get(exc.errno or 0, exc.strerror or str(exc))
    return f"cannot write {where} ({option} {root}): {why}; give {option} another path, or repair it, and run again"


def check_output(path: Path, option: str, folder: bool) -> None:
    """``OutputError`` (one line: the path, the option that named it, the repair) unless the
    harness can write ``path`` (a folder with ``folder``, else a file): its folder exists or can be
    made, is writable, and no file is where a folder goes (nor a folder where the file goes).
    Called before the work, so that minutes of scoring or tuning are not lost to a path that
    could not be written; ``write_private`` then says a failure under it in the same terms."""
    import os

    _OUTPUTS[path.absolute()] = option
    if not folder and path.is_dir():
        raise OutputError(f"{path} is a folder: give {option} a file's path")
    here = path if folder else path.parent
    while not os.path.lexists(here) and here.parent != here:
        here = here.parent
    if not here.is_dir():
        what = "it" if here == path else f"{here}, on its way,"
        raise OutputError(f"{option} {path}: {what} is a file, not a folder; move it aside or give {option} "
                          "another path")
    if not os.access(here, os.W_OK | os.X_OK):
        try:
            ro = bool(os.statvfs(here).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):  # no statvfs (Windows)
            ro = False
        why = "is on a read-only file system" if ro else "is not writable by you (`ls -ld` it; `chmod u+w` it)"
        raise OutputError(f"{option} {path}: {here} {why}; give {option} another path")


def new_folder(path: Path) -> Path:
    """A folder made for one run at ``path``, or, when that is taken, at ``path-2``, ``path-3``...:
    never one that exists (two identical runs in one second had one folder, the second's files
    over the first's: an outside tester's). Made 0700, its missing parents too; returns it."""
    import os

    try:
        make_missing_dirs(path.parent)
        for n in range(1, 10_000):
            here = path if n == 1 else path.with_name(f"{path.name}-{n}")
            try:
                os.mkdir(here, 0o700)
            except FileExistsError:
                continue
            os.chmod(here, 0o700)
            return here
    except OSError as exc:
        if (named := _option_for(path)) is None:
            raise
        raise OutputError(_unwritable(path, *named, exc)) from None
    raise OutputError(f"{path} and 9,999 others beside it exist: move some aside")


def new_file(path: Path, *beside: str) -> Path:
    """A file name for one run, ``path`` or ``NAME-2.SUFFIX``...: one that does not exist, and
    whose ``beside`` suffixes (a report's ``.md``) do not either, reserved (created empty, 0600)
    so that a run beside this one takes another; ``write_private`` then fills it."""
    import os

    make_missing_dirs(path.parent)
    for n in range(1, 10_000):
        here = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        if any(os.path.lexists(here.with_suffix(s)) for s in beside):
            continue
        try:
            os.close(os.open(here, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            continue
        return here
    raise OutputError(f"{path} and 9,999 others beside it exist: move some aside")
