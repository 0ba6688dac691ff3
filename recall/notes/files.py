"""Read note files: one note per markdown file, YAML front matter on top.

Front matter is ``name``, ``description``, ``type`` (user | feedback | project |
reference), either at the top level or nested under ``metadata:`` (newer Claude Code).
A file without front matter gets name = its first line when that is a heading ("# Title"),
else the file stem; description = its first non-empty line that is not a heading.

Bad input never stops a folder from being read: each problem becomes a ``Problem``
with a one-line message, and every other file is still returned.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from recall.notes.frontmatter import split_front_matter
from recall.notes.problems import Problem
from recall.notes.rendered import shown_markdown
from recall.notes.walk import agents_projects, subfolders
from recall.privacy.decoding import Binary, decode
from recall.privacy.masking import mask_path, mask_secrets
from recall.privacy.paths import utf8_name
from recall.privacy.regular import LeftTheFolder, NotAFile, read_inside

# A headline is a name and a description on one line of at most ~1 KB (the hook's cap): longer
# fields are cut when read, said once. An outside tester's note with an 870 KB header cost the
# daemon seconds per message (every message it ranked for got nothing, others waited) and made
# every MCP search answer 1.75 MB.
MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS = 200, 1_000

# A note is a few hundred bytes; 1 MB is a log or a dump pasted by mistake. Past it we
# read only the first MAX_NOTE_BYTES (enough for the 6 chunks we keep) and warn.
MAX_NOTE_BYTES = 1_000_000
NOTE_TYPES = ("user", "feedback", "project", "reference")
INDEX_FILE = "MEMORY.md"  # Claude Code's index of the memory folder: not a note.


@dataclass
class Note:
    id: str  # file stem: what question sets name in ``expected`` (a secret in it masked)
    path: str  # absolute path, shown to the agent so it can read the original (``shown_path``)
    name: str
    description: str
    type: str
    body: str
    content_hash: str  # of the raw bytes read: decides whether to re-embed
    mtime: float = 0.0
    warnings: list[str] = field(default_factory=list)
    unchanged: bool = False  # bytes known to the caller: not parsed (see read_folder's skip)
    # Messages the note should answer (front matter ``questions:``, then the folder's
    # questions file): indexed as extra chunks, see recall.notes.questions.
    questions: list[str] = field(default_factory=list)
    # A document, image or recording (recall.notes.documents): its text as (location, text)
    # segments, chunked by recall.notes.documents.chunks up to ``max_chunks``; None for a note.
    segments: list[tuple[str, str]] | None = None
    max_chunks: int | None = None
    extra: dict = field(default_factory=dict)  # kept with the note (a document's format)
    stem: str = ""  # the file's stem as written (``id`` masks it; in memory only): its questions' key

    # The path recall keeps and shows when ``shown_path`` would give it another file's (two names
    # whose secrets are masked alike: ``distinct``); "" means ``shown_path(path)``.
    shown: str = ""

    @property
    def questions_key(self) -> str:
        return self.stem or self.id

    @property
    def kept_path(self) -> str:
        """The store's key and what an agent is shown: ``shown``, else ``shown_path(path)``."""
        return self.shown or shown_path(self.path)


def shown_path(path: Path | str) -> str:
    """A note file's path as recall keeps and shows it (store, index files, logs, the agent):
    a secret in its name masked like text (``ghp_….md`` -> ``[REDACTED].md``)."""
    return mask_path(str(path))


# A line of one of markdown's rule or front-matter delimiters (``---``, ``+++``, ``***``, ``___``):
# never a note's name or description (an outside tester's notes were described as ``---``).
_DELIMITER = re.compile(r"\s*([-+*_=~])(?:[ \t]*\1){2,}\s*")


def _first_line(body: str, skip_headings: bool = False) -> str:
    for line in body.splitlines():
        if skip_headings and line.lstrip().startswith("#"):
            continue
        stripped = line.strip().lstrip("#").strip()
        if stripped and not _DELIMITER.fullmatch(stripped):
            return stripped
    return ""


def _heading_title(body: str) -> str:
    """The title of a file without front matter whose first line is a markdown heading
    ("# Install guide"): its name, as a document's title is (the file stem otherwise)."""
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return first.lstrip("#").strip() if first.startswith("#") and first.lstrip("#")[:1] in (" ", "\t") else ""


def _text_field(meta: dict, key: str, warnings: list[str] | None = None) -> str:
    value = meta.get(key)
    if value is None and isinstance(meta.get("metadata"), dict):
        value = meta["metadata"].get(key)
    if warnings is not None and isinstance(value, (list, tuple, dict)):  # name: {a: 1} was the stem, unsaid
        shape = "a mapping" if isinstance(value, dict) else "a list"
        warnings.append(f"front matter '{key}' is {shape}, not one line of text: "
                        f"{'ignored' if shape == 'a mapping' else 'its items joined'}; write it as '{key}: …'")
    if isinstance(value, bytes):  # name: !!binary aGVsbG8= -> "hello", not "b'hello'"
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, (list, tuple)):  # name: [a, b] -> "a, b", not its Python repr
        return ", ".join(str(v).strip() for v in value if v is not None and not isinstance(v, (dict, list)))
    text = "" if value is None or isinstance(value, dict) else str(value).strip()
    return "" if _DELIMITER.fullmatch(text) else text


def cap_field(value: str, limit: int) -> str:
    """``value`` cut at ``limit`` characters (with "…")."""
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def _capped(value: str, limit: int, what: str, warnings: list[str]) -> str:
    if len(value) > limit:
        warnings.append(f"{what} is {len(value):,} characters: cut at {limit:,} (a headline is one short line)")
    return cap_field(value, limit)


def parse_note(path: Path, raw: bytes, decoded: tuple[str, list[str]] | None = None) -> Note:
    """Parse the bytes of one note file (``decoded``: their text and what reading it took, when
    the caller has them already). Never raises on content."""
    if decoded is None:
        try:
            decoded = decode(raw)  # the one reading of bytes as text (recall.privacy.decoding)
        except Binary:
            decoded = raw.decode("utf-8", errors="replace"), ["binary data read as text"]
    text, warnings = decoded[0].lstrip("\ufeff"), list(decoded[1])
    meta, body, error = split_front_matter(text)
    if error:
        warnings.append(error)
    meta = meta or {}
    name = _text_field(meta, "name", warnings) or mask_path(path.stem)  # a file's name: masked as one (``creds X.md``)
    shown = body = shown_markdown(body)  # a headline, and the text, are what the file shows (rendered.py)
    description = _text_field(meta, "description", warnings) or _first_line(shown)
    if not meta and not error and (title := _heading_title(shown)):  # markdown without a header
        name, description = title, _first_line(shown, skip_headings=True)
    name, description = (_capped(name, MAX_NAME_CHARS, "name", warnings),
                         _capped(description, MAX_DESCRIPTION_CHARS, "description", warnings))
    note_type = _text_field(meta, "type", warnings).lower()[:40]
    if note_type and note_type not in NOTE_TYPES:
        warnings.append(f"unknown type {note_type!r}: recall's types are {', '.join(NOTE_TYPES)}")
    questions = meta.get("questions")
    if questions is None and isinstance(meta.get("metadata"), dict):
        questions = meta["metadata"].get("questions")
    if isinstance(questions, str):
        questions = [questions]
    if questions is not None and (not isinstance(questions, list)
                                  or not all(isinstance(q, str) for q in questions)):
        warnings.append("front matter 'questions' is not a list of strings; ignored: write one question a line "
                        "under it, as '  - how do I …?'")
        questions = None
    return Note(
        id=mask_secrets(path.stem),
        stem=path.stem,
        path=shown_path(path),
        name=name,
        description=description,
        type=note_type,
        body=body.strip(),
        content_hash=hashlib.sha256(raw).hexdigest(),
        warnings=warnings,
        questions=list(questions or []),
    )


SkipFn = Callable[[str, str, str], bool]  # (shown path, content hash, the note's key as written)


def _note_id(path: Path, key: str | None, shown: str) -> str:
    """A note's id: its key (``note_keys``) with secrets masked, part by part for a path.
    ``shown`` is ``shown_path(path)``, whose last part is the stem masked already (a re-index
    of 20,000 unchanged notes spent a third of its time masking each name twice more)."""
    if key is not None and key != path.stem:
        return mask_path(key)
    name = shown.rpartition("/")[2]
    if path.suffix.lower() == ".md" and name.endswith(path.suffix):  # masked apart from it
        return name[:-len(path.suffix)]
    return mask_secrets(path.stem)


def read_note(path: Path, skip: SkipFn | None = None, key: str | None = None, root: str | None = None
              ) -> tuple[Note | None, list[Problem]]:
    """Read one file; (None, problems) when it cannot be a note. ``key``: what the note is
    known by (``note_keys``; default its stem). ``root``: the real path of the folder it was
    found in (default its own folder's); a file that, opened, is elsewhere is not read
    (``recall.privacy.regular.open_inside``).

    ``skip(shown path, content_hash, key)`` returning True means the caller already has this exact
    file: it comes back unparsed (``unchanged=True``), which keeps a re-index of a large
    folder to one read and one hash per file.
    """
    problems: list[Problem] = []
    shown = shown_path(path)
    try:
        raw, size = read_note_bytes(path, root)
    except (NotAFile, LeftTheFolder) as exc:
        return None, [Problem(shown, f"{exc}; skipped")]
    except OSError as exc:
        return None, [Problem(shown, f"unreadable ({exc.strerror or exc}); skipped")]
    try:
        decoded = decode(raw)  # binary data is said before anything else is done with it
    except Binary as exc:
        return None, [Problem(shown, str(exc))]
    if not decoded[0].strip():
        # nothing to hand over, and a folder of a thousand empty files moved the calibrated floor
        # (their stems, alike, crowded every message's ranks: an outside tester's, stop 60)
        return None, [Problem(shown, "empty (nothing but white space in it); skipped until it holds a note")]
    if skip is not None:
        digest = hashlib.sha256(raw).hexdigest()
        if skip(shown, digest, key or path.stem):
            return Note(_note_id(path, key, shown), shown, "", "", "", "", digest, unchanged=True,
                        stem=key or path.stem, shown=shown), []
    if size > MAX_NOTE_BYTES:
        problems.append(Problem(shown, f"{size:,} bytes, over 1 MB; indexing its start only"))
    # its id as an unchanged note's (``_note_id``): ``token-X.md`` was "token-X" read, and
    # "token-[REDACTED]" skipped (stop 58)
    note = replace(parse_note(path, raw, decoded), id=_note_id(path, key, shown), stem=key or path.stem)
    note.shown = shown  # the store's key, not masked again each time it is asked for
    try:
        note.mtime = path.stat().st_mtime
    except OSError:
        pass
    problems.extend(Problem(shown, w) for w in note.warnings)
    return note, problems


def read_note_bytes(path: Path, root: str | None = None) -> tuple[bytes, int]:
    """The first MAX_NOTE_BYTES of a note file and its size, as the indexer reads it
    (``recall.privacy.regular.read_inside``: without blocking; ``NotAFile`` unless a regular file,
    ``LeftTheFolder`` unless inside ``root``, the real path of its folder, by default its own)."""
    return read_inside(path, root if root is not None else os.path.realpath(path.parent), MAX_NOTE_BYTES)


def is_note_name(fname: str) -> bool:
    """Whether a file of this name is a note: ``.md`` in any case (``Plan.MD`` too), not
    Claude Code's ``MEMORY.md`` index, not hidden."""
    return fname.lower().endswith(".md") and fname != INDEX_FILE and not fname.startswith(".")


def iter_note_files(folder: Path) -> Iterator[tuple[Path | None, Problem | None]]:
    """Yield the note files (``is_note_name``) under ``folder`` (recursively), sorted.

    Symlinks that lead outside the folder are skipped with a problem: a note folder
    should not become a way to index (and show an agent) arbitrary files.
    """
    root = folder.resolve()
    leave_out = agents_projects(folder)
    unread: list[OSError] = []  # a folder the walk cannot open: said, not skipped in silence
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False, onerror=unread.append):
        yield from _unread_folders(unread)
        dirnames[:] = subfolders(dirpath, dirnames, leave_out)
        for fname in sorted(filenames):
            if not is_note_name(fname):
                continue
            path = Path(dirpath) / fname
            if (bad := name_problem(path, folder)) is not None:
                yield None, bad
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError) as exc:  # a loop (ELOOP / RuntimeError), or dangling
                    why = "a symlink loop" if isinstance(exc, RuntimeError) or getattr(exc, "errno", 0) == errno.ELOOP \
                        else "a broken symlink"
                    yield None, Problem(shown_path(path), f"{why}; skipped")
                    continue
                if not target.is_relative_to(root):
                    yield None, Problem(shown_path(path), "symlink leads outside the folder; skipped")
                    continue
            yield path, None
    yield from _unread_folders(unread)


def _unread_folders(unread: list[OSError]) -> Iterator[tuple[None, Problem]]:
    """A problem for each folder the walk could not open (an outside tester's note 200 folders
    deep, past the system's 4,096-character path limit, was left out without a word)."""
    while unread:
        exc = unread.pop(0)
        where = shown_path(exc.filename) if exc.filename else "a folder"
        hint = ": the path is longer than the system takes; move the notes up" if exc.errno == errno.ENAMETOOLONG \
            else ""
        yield None, Problem(where, f"folder cannot be read ({exc.strerror or exc}){hint}; the notes in it are "
                                   "not indexed")


def name_problem(path: Path, folder: Path) -> Problem | None:
    """One line for a file whose name or folder under ``folder`` is not valid UTF-8 (undecodable
    bytes: no key to store it under, no JSON line or terminal to show it in); else None."""
    name = path.relative_to(folder) if path.is_relative_to(folder) else path  # the watcher's: any spelling
    if utf8_name(str(name)):
        return None
    return Problem(shown_path(_readable(path)), "its file or folder name is not valid UTF-8; rename it to a UTF-8 "
                   "name (`mv`, or `convmv -f latin1 -t utf-8 --notest FILE`); skipped")


def misnamed(root: Path) -> Problem | None:
    """One line for a folder whose whole path is not valid UTF-8 (given on the command line or in
    config.toml, not found by a walk): no key to store it under, nor a path FAISS or a terminal
    takes (stop 47, an outside tester's traceback from every index run)."""
    return name_problem(root, Path(root.anchor))


def _readable(path: Path) -> str:
    """``path`` with its undecodable bytes shown as U+FFFD."""
    return os.fsencode(path).decode("utf-8", "replace")


def distinct(note: Note, taken: Container[str], *, renumber_id: bool) -> Note:
    """``note`` under a path none in ``taken`` has: two names differing only in what masking hides
    (``invoice_<random>.txt``) would both be ``[REDACTED].txt``, one lost. The second becomes
    ``[REDACTED]~2.txt``, in the folder's order: nothing hidden shows. ``renumber_id``: the id is
    the masked stem (a note's; ``[REDACTED]~2``), not the file's own relative path (a document's)."""
    kept = note.kept_path
    folder, _, name = kept.rpartition("/")
    base, dot, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    n = 2
    while (shown := f"{folder}/{base}~{n}{dot}{ext}") in taken:
        n += 1
    return replace(note, shown=shown, id=f"{note.id}~{n}" if renumber_id else note.id)


def note_keys(folder: Path, paths: Sequence[Path]) -> dict[Path, str]:
    """The key each note file of ``folder`` is known by (its questions' ``note``, the writer's
    section, the note's id before masking): its stem, or, for a file name several subfolders
    share (each project's ``README.md``), its path in the folder without the suffix
    (``billing/README``), whichever sorts first; a second ``x.MD`` beside ``x.md`` keeps its
    suffix. The indexer and the background writer both name notes by it (stop 45: the second
    README was skipped, then the writer asked for the first one's questions only)."""
    names = Counter(nfc(p.stem) for p in paths)
    keys: dict[Path, str] = {}
    taken: set[str] = set()
    for path in paths:
        key = nfc(path.stem)
        if names[key] > 1 and path.parent != folder:
            key = nfc(path.relative_to(folder).with_suffix("").as_posix())
        if key in taken:
            key = nfc(path.relative_to(folder).as_posix())
        taken.add(key)
        keys[path] = key
    return keys


def nfc(key: str) -> str:
    """A note's key in Unicode's composed form: macOS and many sync tools write file names
    decomposed (``é`` as ``e`` + U+0301), a person types them composed, and the two spellings
    look the same: a questions file's line for ``résumé-export`` found no note of that name
    (stop 47, an outside tester)."""
    return unicodedata.normalize("NFC", key) if not key.isascii() else key


def read_folder(folder: Path, skip: SkipFn | None = None) -> tuple[list[Note], list[Problem]]:
    """All notes of a folder, each named by ``note_keys``. Raises ``FileNotFoundError`` if the
    folder is missing."""
    if not folder.exists():
        raise FileNotFoundError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise NotADirectoryError(f"not a folder: {folder}")
    paths: list[Path] = []
    problems: list[Problem] = []
    for path, problem in iter_note_files(folder):
        if problem is not None:
            problems.append(problem)
        else:
            assert path is not None
            paths.append(path)
    keys = note_keys(folder, paths)
    real = os.path.realpath(folder)
    notes: list[Note] = []
    seen: dict[str, str] = {}
    for path in paths:
        note, found = read_note(path, skip, keys[path], real)
        problems.extend(found)
        if note is None:
            continue
        if note.id in seen:  # two names, secrets masked alike: both kept
            note = distinct(note, set(seen.values()), renumber_id=True)
        seen[note.id] = note.kept_path
        notes.append(note)
    return notes, problems
