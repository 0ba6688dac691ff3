"""Documents, screenshots and recordings as notes: what ``recall index DIR``, the
``[sources]`` folders and the watcher read beside markdown notes.

    file -> located text (``convert``: pages, slides, sheets, sections; ``images``: OCR;
            ``recordings``: OCR of sampled frames per 97 s piece)
         -> a ``recall.notes.files.Note`` with ``segments`` (location, text)
         -> ``recall.indexing.indexer`` masks and chunks it (``chunks.document_chunks``), like a note.

A document's name is its title (metadata, else first heading, else file name), its
description its first line of text; its id is its path relative to the folder (two
``README.md`` in different sub-folders are two documents). Only files whose bytes
changed are converted again (``unchanged``). A file that cannot be read is one
``Problem`` line; the rest of the folder is read.

Nothing here is imported by the hook; each converter library is imported when a file of
its format is first read (the ``docs`` and ``ocr`` extras in pyproject.toml).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from recall.notes.documents import failed
from recall.notes.documents.convert import DOCUMENT_FORMATS, Extracted, TooSlow, Unavailable, Unreadable, extract
from recall.notes.documents.isolated import Converter
from recall.notes.files import INDEX_FILE, Note, distinct, name_problem
from recall.notes.problems import Problem
from recall.notes.walk import agents_projects, subfolders, walked_into
from recall.privacy.masking import mask_path
from recall.privacy.paths import ensure_private_dir, leads_outside, run_dir
from recall.privacy.regular import LeftTheFolder, NotAFile, file_kind, open_inside

if TYPE_CHECKING:
    from recall.config.settings import DocumentsSettings

# Bumped per format when its converter's output changes: every document of that format is
# converted again once (only those: OCR and transcription are slow). 2: what a reader never sees
# is not read (``recall.notes.documents.shown``). A format not named is at 1.
CONVERTER_VERSIONS = {"html": 2, "docx": 2, "xlsx": 2, "pptx": 2}
IMAGE_FORMATS = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".webp": "webp", ".bmp": "bmp",
                 ".gif": "gif", ".tif": "tiff", ".tiff": "tiff"}
RECORDING_FORMATS = {".mp4": "mp4", ".mov": "mov", ".mkv": "mkv", ".webm": "webm", ".avi": "avi",
                     ".m4v": "m4v"}
LIBRARY = "library"  # the source kind of mirrored repositories' docs: searched on request
# (unchanged?) path, id, content hash -> True when the store already has these bytes
Unchanged = Callable[[str, str, str], bool]
# path, note type, format, frame_every_s -> its text (``isolated.Converter``)
Convert = Callable[[Path, str, str, float], Extracted]


class Ahead(Protocol):
    """Conversions done beside the writer (``recall.notes.documents.ahead``): a file not
    converted yet is ``want``ed and left as the store has it, so a note saved meanwhile never
    waits for a recording's conversion."""

    def take(self, key: str) -> Extracted | Exception | None: ...  # by ``content_key``; None: not yet

    def want(self, path: Path, root: Path, source_kind: str) -> None: ...


def format_of(path: Path, opts: DocumentsSettings, source_kind: str = "dir") -> tuple[str, str] | None:
    """(note type, format) for a file the documents reader takes, else None. Markdown is
    a note (``recall.notes.files``) except in a library source, where it is a document."""
    suffix = path.suffix.lower()
    if not opts.enabled:
        return None
    if suffix in DOCUMENT_FORMATS:
        if DOCUMENT_FORMATS[suffix] == "markdown" and source_kind != LIBRARY:
            return None
        return "document", DOCUMENT_FORMATS[suffix]
    if suffix in IMAGE_FORMATS and opts.images:
        return "image", IMAGE_FORMATS[suffix]
    if suffix in RECORDING_FORMATS and opts.recordings:
        return "recording", RECORDING_FORMATS[suffix]
    return None


def is_document_path(root: Path, path: Path, opts: DocumentsSettings, source_kind: str = "dir") -> bool:
    """Whether ``read_documents(root)`` would read ``path`` (the watcher's filter)."""
    if not walked_into(root, path) or path.name == INDEX_FILE:
        return False
    if leads_outside(path, root):
        return False
    return format_of(path, opts, source_kind) is not None and path.is_file()


def iter_document_files(root: Path, opts: DocumentsSettings, source_kind: str) -> Iterator[Path | Problem]:
    """The files under ``root`` the reader takes, sorted; a symlink out of the folder is a
    ``Problem`` (a folder must not become a way to show an agent other files)."""
    real = root.resolve()
    leave_out = agents_projects(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = subfolders(dirpath, dirnames, leave_out)
        for fname in sorted(filenames):
            path = Path(dirpath) / fname
            if fname.startswith(".") or fname == INDEX_FILE or format_of(path, opts, source_kind) is None:
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    yield Problem(str(path), "a broken symlink or a loop; skipped")
                    continue
                if not target.is_relative_to(real):
                    yield Problem(str(path), "symlink leads outside the folder; skipped")
                    continue
            yield path


def file_digest(path: Path, root: Path | None = None) -> str:
    """sha256 of the file's bytes, read in 1 MiB blocks (a recording is not held in memory);
    ``LeftTheFolder`` when, opened, it is not inside ``root`` (its own folder by default)."""
    h = hashlib.sha256()
    with os.fdopen(open_inside(path, os.path.realpath(root if root is not None else path.parent)), "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@contextmanager
def checked_copy(path: Path, root: Path) -> Iterator[Path]:
    """A copy of ``path`` (same name) in a private folder of the run folder, taken through
    ``open_inside``: what a converter opens by name. Opened by name in the folder itself, the
    file could be swapped for a link to a private file between the check and the converter's
    open, by another user who can write a shared folder (an outside tester's H5)."""
    tmp = tempfile.mkdtemp(prefix="checked-", dir=ensure_private_dir(run_dir()))
    try:
        copy = Path(tmp) / path.name
        with os.fdopen(open_inside(path, os.path.realpath(root)), "rb") as src, \
                os.fdopen(os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        yield copy
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def content_key(digest: str, fmt: str, opts: DocumentsSettings) -> str:
    """What decides whether a document is converted and written again: its bytes, the
    converters' version and the settings that change its chunks."""
    extra = f":f{opts.frame_every_s:g}" if fmt in RECORDING_FORMATS.values() else ""
    return f"{digest}:doc{CONVERTER_VERSIONS.get(fmt, 1)}:{fmt}:c{opts.max_chunks}{extra}"


def read_document(path: Path, root: Path, opts: DocumentsSettings, source_kind: str = "dir",
                  unchanged: Unchanged | None = None, convert: Convert | None = None,
                  ahead: Ahead | None = None) -> tuple[Note | None, list[Problem]]:
    """One file as a note with located segments; (None, [one line]) when it cannot be read.
    ``convert``: the child process that converts (``isolated.Converter``); one is started
    for this file when None. ``ahead``: its conversion is taken from there, and a file not
    converted yet is handed to it and kept as stored (an unchanged note) meanwhile."""
    kind_fmt = format_of(path, opts, source_kind)
    if kind_fmt is None:
        return None, []
    note_type, fmt = kind_fmt
    if path.is_relative_to(root) and (bad := name_problem(path, root)) is not None:
        return None, [bad]
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    try:
        st = path.stat()
        if not path.is_file():
            raise NotAFile(file_kind(st.st_mode))
        if st.st_size > opts.max_file_mb * 1_000_000:
            return None, [Problem(str(path), f"{st.st_size / 1e6:,.0f} MB, over [documents] max_file_mb "
                                             f"({opts.max_file_mb:g}); skipped")]
        key = content_key(file_digest(path, root), fmt, opts)
    except OSError as exc:
        return None, _unreadable(path, exc)
    if unchanged is not None and unchanged(str(path), rel, key):
        return Note(rel, str(path), "", "", note_type, "", key, unchanged=True), []
    if (line := failed.remembered(failed.failure_key(key, opts))) is not None:  # its bytes failed before
        return None, [Problem(str(path), f"{line} ({failed.AGAIN})")]
    done = ahead.take(key) if ahead is not None else None
    if ahead is not None and done is None:
        ahead.want(path, root, source_kind)
        return Note(rel, str(path), "", "", note_type, "", key, unchanged=True), []
    try:
        if isinstance(done, Exception):
            raise done
        if done is None:
            with (nullcontext(convert) if convert else Converter(opts.convert_max_mb, opts.convert_timeout_s) as conv,
                  checked_copy(path, root) as copy):
                done = conv(copy, note_type, fmt, opts.frame_every_s)
        got = done
    except TooSlow as exc:  # the file or a machine under load: remembered only when it happens again
        return None, [Problem(str(path), failed.timed_out(failed.failure_key(key, opts), str(exc)))]
    except Unreadable as exc:
        if not isinstance(exc, Unavailable):  # its bytes are why: not tried again until they change
            failed.remember(failed.failure_key(key, opts), str(exc))
        return None, [Problem(str(path), str(exc))]
    except ImportError as exc:
        extra = "ocr" if note_type != "document" else "docs"
        return None, [Problem(str(path), f"{fmt} needs {exc.name or exc} (pip install 'recall-memory[{extra}]'); "
                                         "skipped")]
    except OSError as exc:
        return None, _unreadable(path, exc)
    named = got.title or mask_path(path.stem) if note_type == "document" else mask_path(path.name)  # as its path is
    note = Note(id=rel, path=str(path), name=named,
                description=_first_line(got, skip=got.title), type=note_type, body=got.text,
                content_hash=key, mtime=st.st_mtime, segments=got.segments, max_chunks=opts.max_chunks,
                extra={"format": fmt})
    return note, [Problem(str(path), n) for n in got.notes]


def _unreadable(path: Path, exc: OSError) -> list[Problem]:
    """The one line of a document that could not be read: not a file, led out of its folder
    (``LeftTheFolder``), or the system's reason."""
    if isinstance(exc, NotAFile | LeftTheFolder):
        return [Problem(str(path), f"{exc}; skipped")]
    return [Problem(str(path), f"unreadable ({exc.strerror or exc}); skipped")]


def read_if_document(path: Path, root: Path, opts: DocumentsSettings, source_kind: str = "dir",
                     ahead: Ahead | None = None) -> tuple[Note | None, list[Problem]]:
    """``read_document`` for a path the watcher heard about: (None, []) unless it is one."""
    if not is_document_path(root, path, opts, source_kind):
        return None, []
    return read_document(path, root, opts, source_kind, ahead=ahead)


def extract_as(path: Path, note_type: str, fmt: str, frame_every_s: float,
               progress: Callable[[], None] | None = None) -> Extracted:
    """The located text of a file of ``format_of``'s kind, in this process (the child of
    ``isolated.Converter`` calls it; a recording calls ``progress`` as it goes)."""
    if note_type == "image":
        from recall.notes.documents.images import extract_image

        return extract_image(path, fmt)
    if note_type == "recording":
        from recall.notes.documents.recordings import extract_recording

        return extract_recording(path, fmt, frame_every_s, progress)
    return extract(path, fmt)


def _first_line(got: Extracted, skip: str = "") -> str:
    """The first line of text that is not the title or a heading (markdown marks
    stripped), <= 200 characters; else the first heading that is not the title."""
    headings = []
    for _, text in got.segments:
        for line in text.splitlines():
            heading = line.lstrip().startswith("#")
            line = line.strip().lstrip("#>*-|").strip().strip("*_").strip()
            if not line or line == skip or line.startswith("<!--") or set(line) <= set("-| :"):
                continue
            if not heading:
                return line[:200]
            headings.append(line)
    return headings[0][:200] if headings else ""


def read_documents(root: Path, opts: DocumentsSettings, source_kind: str = "dir",
                   unchanged: Unchanged | None = None, ahead: Ahead | None = None) -> tuple[list[Note], list[Problem]]:
    """Every document, image and recording under ``root`` (see the module doc); ``ahead``:
    as ``read_document``'s."""
    notes: list[Note] = []
    problems: list[Problem] = []
    taken: set[str] = set()
    if not opts.enabled:
        return notes, problems
    with Converter(opts.convert_max_mb, opts.convert_timeout_s) as convert:
        for item in iter_document_files(root, opts, source_kind):
            if isinstance(item, Problem):
                problems.append(item)
                continue
            note, found = read_document(item, root, opts, source_kind, unchanged, convert, ahead)
            problems.extend(found)
            if note is not None:
                if note.kept_path in taken:  # two names whose secrets are masked alike: both kept
                    note = distinct(note, taken, renumber_id=False)
                taken.add(note.kept_path)
                notes.append(note)
    return notes, problems
