"""Data contracts: note collections, question sets (JSONL), provenance.

A question set is JSONL, one object per line:

    {"id": "sample-a-01", "kind": "paraphrase" | "unrelated", "text": "...",
     "expected": ["<note id = file stem>", ...], "lang": "en"}

``unrelated`` lines have ``expected: []``. Every command that reads sets reads this
shape through ``load_questions``, which reports the first bad line by number.

The BEIR layout is in ``recall_eval.datasets.beir``.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from recall.notes.files import Note, iter_note_files, read_folder, read_note_bytes
from recall.privacy.masking import mask_secrets
from recall.privacy.regular import not_a_file

from . import kinopeee
from .paths import PROJECT_ROOT, SHARED_BENCHMARKS

KINDS = ("paraphrase", "unrelated")
FIELDS = ("id", "kind", "text", "expected", "lang")
# Optional: what kind of message it is, for breakdowns (task-start, cross-language, terse,
# plain, near-miss, other); sets written under another brief carry it.
OPTIONAL = ("style",)


class DatasetError(ValueError):
    """A set or a folder that breaks the contract; the message names file and line."""


@dataclass
class Question:
    id: str
    kind: str
    text: str
    expected: list[str]
    lang: str
    set_id: str = ""  # which file it came from (not written back)
    style: str = ""  # OPTIONAL field; "" when the set does not say

    def as_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k in FIELDS or (k in OPTIONAL and v)}


@dataclass
class Collection:
    name: str
    notes_dir: Path
    question_files: list[Path] = field(default_factory=list)


def collection_name(name: str, option: str = "--collection") -> str:
    """``name`` when it is one folder name, the folder a collection's data and reports go in
    (``datasets/NAME``, ``reports/NAME``); else a ``DatasetError`` in one line saying the rule:
    ``../../x``, an absolute path or a line break wrote reports outside ``--reports`` (stop 57).
    ``option``: the flag that named it (``--pool`` was said to be ``--collection``)."""
    odd = any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name)
    if not name or odd or ".." in name or any(c in name for c in "/\\\0") or name == ".":
        raise DatasetError(f"{option} {name!r} is not a collection's name: one folder name, without /, \\, "
                           "'..', NUL or a control character")
    return name


def collection_paths(name: str, root: Path = PROJECT_ROOT) -> Collection:
    """``datasets/NAME/notes`` (else ``../shared/benchmarks/NAME/notes``, where collections
    that are not ours to copy live, else a ``BUILT`` collection's) and
    ``datasets/NAME/questions/*.jsonl``."""
    base = root / "datasets" / collection_name(name)
    qdir = base / "questions"
    files = sorted(qdir.glob("*.jsonl")) if qdir.is_dir() else []
    notes = base / "notes"
    if not notes.is_dir() and (SHARED_BENCHMARKS / name / "notes").is_dir():
        notes = SHARED_BENCHMARKS / name / "notes"
    if not notes.is_dir() and name in BUILT:
        notes = built_notes(name)
    return Collection(name, notes, files)


# Collections kept upstream in another shape (a module with ``SOURCE`` and ``build_notes``):
# their notes are written at run time into the user's cache, the same files each time, so
# nothing of the upstream text enters this repository.
BUILT = {"kinopeee": kinopeee}


def built_notes(name: str) -> Path:
    """The notes folder of a ``BUILT`` collection, written from ``../shared/benchmarks`` into
    the cache; a folder that does not exist when the upstream data is absent."""
    import platformdirs

    dest = Path(platformdirs.user_cache_dir("recall-eval")) / name / "notes"
    if BUILT[name].SOURCE.is_file():
        BUILT[name].build_notes(dest)
    return dest


def shipped_collection(notes_dir: Path, root: Path = PROJECT_ROOT) -> str | None:
    """The collection whose own notes folder ``notes_dir`` is (the same resolved path:
    ``datasets/NAME/notes``, ``../shared/benchmarks/NAME/notes`` or a ``BUILT`` one's), else None.
    Only then do its shipped artefacts (baseline, questions per note) go with the folder: a
    user's folder merely named like it (``/x/sample/notes``) gets none of them."""
    import platformdirs

    folder = notes_dir.resolve()
    name = folder.parent.name
    if folder.name != "notes" or not name:
        return None
    own = [root / "datasets" / name / "notes", SHARED_BENCHMARKS / name / "notes"]
    if name in BUILT:
        own.append(Path(platformdirs.user_cache_dir("recall-eval")) / name / "notes")
    return name if any(p.is_dir() and p.resolve() == folder for p in own) else None


def heldout_sets(name: str | None, root: Path = PROJECT_ROOT) -> list[Path]:
    """``datasets/NAME/heldout/*.jsonl``: sets written under other briefs, never used for
    tuning; ``run`` reports each on its own."""
    folder = root / "datasets" / name / "heldout" if name else None
    return sorted(folder.glob("*.jsonl")) if folder is not None and folder.is_dir() else []


def collection_note_questions(name: str | None, root: Path = PROJECT_ROOT) -> Path | None:
    """``datasets/NAME/questions.jsonl``: the questions per note shipped for a collection
    (``recall-eval expand`` writes them), or None."""
    path = root / "datasets" / name / "questions.jsonl" if name else None
    return path if path is not None and path.is_file() else None


def read_notes(notes_dir: Path) -> list[Note]:
    notes, _problems = read_folder(notes_dir)
    if not notes:
        raise DatasetError(f"{notes_dir}: no note files (*.md) found")
    return notes


def note_text(note: Note) -> str:
    """What a note says: the same three parts the chunker embeds."""
    return f"{note.name}\n{note.description}\n\n{note.body}"


# --- question sets ---------------------------------------------------------------


def parse_question(obj: object, where: str, set_id: str = "") -> Question:
    """Validate one decoded line; raise ``DatasetError`` naming ``where`` on any breach."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in FIELDS if k not in obj]
    if missing:
        raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
    extra = sorted(set(obj) - set(FIELDS) - set(OPTIONAL))
    if extra:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(extra)}")
    qid, kind, text, expected, lang = (obj[k] for k in FIELDS)
    if not isinstance(qid, str) or not qid.strip():
        raise DatasetError(f"{where}: 'id' must be a non-empty string")
    if kind not in KINDS:
        raise DatasetError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: 'text' must be a non-empty string")
    if not isinstance(expected, list) or not all(isinstance(e, str) and e for e in expected):
        raise DatasetError(f"{where}: 'expected' must be a list of note ids (strings)")
    if kind == "paraphrase" and not expected:
        raise DatasetError(f"{where}: a paraphrase needs at least one expected note id")
    if kind == "unrelated" and expected:
        raise DatasetError(f"{where}: an unrelated question must have 'expected': []")
    if not isinstance(lang, str) or not lang.strip():
        raise DatasetError(f"{where}: 'lang' must be a language code such as 'en' or 'ja'")
    style = obj.get("style", "")
    if not isinstance(style, str):
        raise DatasetError(f"{where}: 'style' must be a string")
    # a note's id is its file's stem masked (recall.notes.files): a stem that reads as a secret is
    # named by the set as written and found under the id the index shows (stop 44)
    return Question(qid, kind, text, list(dict.fromkeys(mask_secrets(e) for e in expected)), lang, set_id, style)


class KeyTwice(ValueError):
    """A JSON object with one key twice (``json`` keeps the last, unsaid)."""


def _one_each(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise KeyTwice(f"the key {key!r} twice")
        out[key] = value
    return out


def parse_lines(lines: Iterable[str], source: str, set_id: str = "") -> list[Question]:
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}, line {lineno}"
        try:
            obj = json.loads(line, object_pairs_hook=_one_each)
        except KeyTwice as exc:
            raise DatasetError(f"{where}: {exc} in one object (which one counts would be a guess): keep one") from None
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        except (ValueError, RecursionError) as exc:  # nested too deep; an integer of 5,000 digits
            raise DatasetError(f"{where}: not readable JSON ({type(exc).__name__})") from None
        q = parse_question(obj, where, set_id)
        if q.id in seen:
            raise DatasetError(f"{where}: duplicate id {q.id!r} (first on line {seen[q.id]})")
        seen[q.id] = lineno
        questions.append(q)
    if not questions:
        raise DatasetError(f"{source}: no questions")
    return questions


def load_questions(path: Path) -> list[Question]:
    """A question set (JSONL), read as ``read_input`` reads a file a user names: a byte-order mark
    dropped (an editor's was refused as "Unexpected UTF-8 BOM"; an outside tester's, stop 55)."""
    from recall_eval.files import InputError, read_input

    said: list[str] = []
    try:
        text = read_input(path, said)
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such question set") from None
    except InputError as exc:
        raise DatasetError(str(exc)) from None
    try:
        return parse_lines(text.split("\n"), str(path), path.stem)  # line feeds only: not at U+2028
    except DatasetError as exc:
        if not said:
            raise
        raise DatasetError(f"{exc}; the file was {said[0]}: save it as UTF-8 if it is not") from None


def load_sets(paths: Sequence[Path], warn: Callable[[str], None] | None = None) -> list[Question]:
    """Several sets as one list; ids must stay unique across them (they key the results). A
    message repeated within its set counts once, said through ``warn`` (stderr by default); one
    message labelled two ways is refused (``once_each``)."""
    out: list[Question] = []
    owner: dict[str, Path] = {}
    for path in paths:
        read_provenance(path)  # checked before any scoring: a bad record was a traceback at a run's end
        for q in load_questions(path):
            if q.id in owner:
                raise DatasetError(f"{path}: id {q.id!r} already used in {owner[q.id]}")
            owner[q.id] = path
            out.append(q)
    return once_each(out, warn or _to_stderr)


def message_key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _label(q: Question) -> tuple[str, tuple[str, ...]]:
    return q.kind, tuple(sorted(q.expected))


def once_each(questions: Sequence[Question], warn: Callable[[str], None]) -> list[Question]:
    """``questions`` with a message repeated within its set counted once (said); one message
    labelled two ways anywhere is a ``DatasetError``. The same message twice in one set was
    counted twice, its interval narrower than the data, and one message could be both related
    and unrelated (an outside tester's AH04); across sets see ``overlap.leaks``."""
    first: dict[str, Question] = {}
    out, repeated = [], []
    for q in questions:
        seen = first.setdefault(message_key(q.text), q)
        if seen is q:
            out.append(q)
        elif _label(seen) != _label(q):
            raise DatasetError(f"{q.set_id}: question {q.id!r} is the message of {seen.id!r} ({seen.set_id}) with "
                               "another label (related to other notes, or unrelated): give it one")
        elif seen.set_id == q.set_id:
            repeated.append(q.id)
        else:
            out.append(q)  # in another set: each set is scored on its own (``leaks`` for tune)
    if repeated:
        warn(f"warning: {len(repeated)} message(s) repeat an earlier one of their set word for word and count "
             f"once: {', '.join(repeated[:3])}{', ...' if len(repeated) > 3 else ''}")
    return out


def _to_stderr(line: str) -> None:
    import sys

    from recall_eval.files import shown

    print(shown(line), file=sys.stderr)


def check_expected(questions: Sequence[Question], note_ids: Iterable[str], source: str) -> None:
    """Every expected id must name a note of the collection."""
    known = set(note_ids)
    for q in questions:
        unknown = [e for e in q.expected if e not in known]
        if unknown:
            raise DatasetError(f"{source}: question {q.id!r} expects unknown note(s) {', '.join(unknown)}")


def write_questions(path: Path, questions: Iterable[Question]) -> None:
    """A question set as JSONL, masked and the user's only (``recall_eval.files``)."""
    from recall_eval.files import masked, write_private

    write_private(path, "".join(json.dumps(masked(q.as_json()), ensure_ascii=False) + "\n" for q in questions))


# --- provenance --------------------------------------------------------------------


def provenance_path(set_path: Path) -> Path:
    return set_path.with_name(set_path.stem + ".provenance.json")


def checks_path(set_path: Path) -> Path:
    return set_path.with_name(set_path.stem + ".checks.json")


def read_provenance(set_path: Path) -> dict | None:
    """A set's provenance record, or None where it has none; one line for one that is no JSON
    object (a list, a string, nested past Python's limit: tracebacks at the report's end; a
    named pipe: a wait; an outside tester's, stop 55)."""
    from recall_eval.files import read_input

    p = provenance_path(set_path)
    if not p.exists() and not p.is_symlink():
        return None
    try:
        data = json.loads(read_input(p))
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{p}: not valid JSON ({(str(exc).splitlines() or [type(exc).__name__])[0][:200]})") \
            from None
    if not isinstance(data, dict):
        raise DatasetError(f"{p}: not a provenance record (a JSON object): fix it, or remove it")
    return data


def write_json(path: Path, data: dict) -> None:
    """``data`` as JSON, masked and the user's only (``recall_eval.files``)."""
    from recall_eval.files import masked, write_private

    write_private(path, json.dumps(masked(data), ensure_ascii=False, indent=2) + "\n")


def note_files(notes_dir: Path) -> list[Path]:
    """The note files of a folder as the indexer walks it (``recall.notes.files.iter_note_files``:
    no link out of the folder, no hidden file, MEMORY.md left out), regular files only (a named
    pipe is found without opening it: ``not_a_file``), sorted. What is left out, the indexer says
    in one line; so it is not said here again."""
    return sorted(path for path, _problem in iter_note_files(notes_dir)
                  if path is not None and not_a_file(path) is None)


def collection_hash(notes_dir: Path) -> str:
    """Hash of every note file's name and bytes: names the collection a set was made for. Each
    read as the indexer reads it (``recall.notes.files.read_note_bytes``: without blocking, a
    regular file only, its first ``MAX_NOTE_BYTES``); one the indexer skips, a named pipe or a
    link to a device, takes no part (it hung the run, or read until memory ran out: stop 57)."""
    h = hashlib.sha256()
    real = os.path.realpath(notes_dir)
    for path in note_files(notes_dir):
        try:
            raw, _size = read_note_bytes(path, real)
        except OSError:  # NotAFile too: the indexer said it in one line and skipped it
            continue
        h.update(path.relative_to(notes_dir).as_posix().encode())
        h.update(b"\0")
        h.update(raw)
    return h.hexdigest()[:16]
