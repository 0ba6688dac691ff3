"""A note's questions: messages the note should answer, indexed as extra chunks of it.

A note is written in the words of the person who learnt the lesson; the message that
should bring it back is written in other words, often in another language. Indexing a
few such messages beside the note's own text closes most of that gap (docs/decision.md:
sample hit@3 0.738 -> 0.925, cross-language 0.40 -> 0.85, same silence).

Questions come from two places, merged per note (front matter first, duplicates
dropped, at most ``MAX_QUESTIONS``):

* the note's front matter, ``questions:`` (a list of strings): written by hand, they
  travel with the note;
* a questions file ``questions.jsonl`` in the notes folder, one line per note,
  ``{"note": "<file stem>", "questions": ["...", ...]}``: what ``recall-eval expand``
  writes, so generated questions never rewrite a user's notes.

A line of a questions file may also carry ``"restatements": [...]``: the note's name and description
restated in the other language (English for a Japanese note, Japanese for an English
one), written by the same context-free step. They are indexed like questions (role
``restatement``) but never serve as calibration positives (``recall.ranking.calibration``): they
bridge languages, they are not messages.

A bad line of a questions file is a ``Problem`` (one line, the rest is read), never a failure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from recall.notes.problems import Problem, capped
from recall.privacy.paths import read_bytes

QUESTIONS_FILE = "questions.jsonl"
# The name this file had before 0.3 (`recall-eval expand` wrote it): still read where no
# questions.jsonl is beside it.
LEGACY_QUESTIONS_FILE = "expansions.jsonl"
QUESTIONS_FILE_NAMES = (QUESTIONS_FILE, LEGACY_QUESTIONS_FILE)
# Five generated questions per note (three, the opening of a piece of work, a terse one: issue #23);
# a hand-written list may be longer.
# Past eight, extra chunks mostly add ways to match the wrong message.
MAX_QUESTIONS = 8
# A question is a message, not a document: longer text is cut (a pasted paragraph
# would otherwise become a second body).
MAX_QUESTION_CHARS = 300


def clean_questions(values: Iterable[object]) -> list[str]:
    """Strings only, stripped, cut to ``MAX_QUESTION_CHARS``, empty and repeated ones
    dropped (order kept), at most ``MAX_QUESTIONS``."""
    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            continue
        text = " ".join(value.split())[:MAX_QUESTION_CHARS]
        if text and text not in out:
            out.append(text)
    return out[:MAX_QUESTIONS]


def parse_line(text: str, field: str = "questions") -> tuple[str, list]:
    """(note stem, its raw questions) from one questions file line; ValueError says why not.
    ``field="restatements"`` reads the optional restatements instead (absent: [])."""
    shape = '{"note": stem, "questions": [...]}'
    try:
        obj = json.loads(text)
        stem = obj["note"]
        questions = obj[field] if field == "questions" else obj.get(field, [])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else exc
        raise ValueError(f"expected {shape} ({why})") from None
    if not isinstance(stem, str) or not isinstance(questions, list):
        raise ValueError(f"expected {shape} (note must be a string and questions a list)")
    return stem, questions


def read_questions_file(path: Path, known: Sequence[str] | None = None, field: str = "questions"
                 ) -> tuple[dict[str, list[str]], list[Problem]]:
    """``{note stem: questions}`` from a questions file, and a problem per bad line.

    With ``known`` (the folder's note stems), a line naming no note is a problem too
    (``unknown_notes``), and left out. ``field="restatements"``: the notes' restatements.
    """
    problems: list[Problem] = []
    try:
        raw = read_bytes(path)
    except OSError as exc:
        return {}, [Problem(str(path), f"unreadable ({exc.strerror or exc}); no questions from it")]
    text = raw.decode("utf-8", errors="replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        problems.append(Problem(str(path), "invalid UTF-8; bad bytes replaced"))
    out: dict[str, list[str]] = {}
    for i, line in enumerate(text.split("\n"), 1):  # line feeds only: a question may hold U+2028
        if not line.strip():
            continue
        try:
            stem, questions = parse_line(line, field)
        except ValueError as exc:
            problems.append(Problem(f"{path}:{i}", f"{exc}; line skipped"))
            continue
        out[stem] = clean_questions([*out.get(stem, []), *questions])
    if field != "questions":
        out = {stem: values for stem, values in out.items() if values}
        problems = []  # bad lines are reported once, by the questions' pass
    if known is not None:
        problems.extend(unknown_notes(path, out, known))
        out = {stem: qs for stem, qs in out.items() if stem in known}
    return out, capped(problems, path)


def unknown_notes(path: Path, questions_file: dict[str, list[str]], stems: Iterable[str]) -> list[Problem]:
    """A problem for each note the questions file names that the folder does not have: its
    questions would otherwise be indexed for nothing, silently."""
    have = set(stems)
    return [Problem(str(path), f"no note named {stem!r} in this folder; its questions are ignored")
            for stem in questions_file if stem not in have]


def merge(front_matter: Sequence[str], questions_file: Sequence[str]) -> list[str]:
    return clean_questions([*front_matter, *questions_file])


def questions_hash(questions: Sequence[str]) -> str:
    """Short hash of a note's questions from its questions file: part of its fingerprint, so editing the
    questions file re-indexes exactly the notes whose questions changed."""
    if not questions:
        return ""
    return hashlib.sha256("\n".join(questions).encode("utf-8")).hexdigest()[:16]


def folder_questions_file(root: Path) -> Path | None:
    """The questions file of a notes folder: ``questions.jsonl``, else the legacy
    ``expansions.jsonl``; None when it has neither."""
    for name in QUESTIONS_FILE_NAMES:
        if (root / name).is_file():
            return root / name
    return None
