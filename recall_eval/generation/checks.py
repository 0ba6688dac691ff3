"""Checks on a freshly generated (or imported) question set.

    schema      each line parsed with recall_eval.datasets.collections.parse_question; bad lines rejected
    ids         every expected id must name a note of the collection
    duplicates  same text after normalisation (NFKC, case, spacing, punctuation): the
                later line is dropped
    leakage     content-word overlap between a paraphrase and its note
                (recall_eval.text.overlap); over LEAKAGE_THRESHOLD the line is flagged
    near-note   an unrelated line whose top score against the index is above the 90th
                percentile of the paraphrases' top scores is flagged for review: either
                the writer missed a note that does apply, or the line is a near-miss
                hard enough to be worth a look

Flags go to ``<set>.checks.json``, never into the set itself.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from recall.notes.files import Note
from recall_eval.datasets.collections import DatasetError, Question, note_text, parse_question
from recall_eval.text import overlap

# Share of a paraphrase's content words found in its note above which it is "leaky".
# On the shipped sample sets (written under the prompt's "reword" rule) the overlap sits
# at 0.0-0.45 for most lines; a line at 0.6 or more says more than half of what it says
# in the note's own words, which makes retrieval a word-matching exercise.
LEAKAGE_THRESHOLD = 0.6
# Unrelated lines above this percentile of the paraphrases' top scores look like notes.
NEAR_NOTE_PERCENTILE = 90
_FENCE = re.compile(r"^\s*```")
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


@dataclass
class Parsed:
    questions: list[Question] = field(default_factory=list)
    rejected: list[dict] = field(default_factory=list)  # {"line": n, "error": "...", "text": "..."}


def parse_generated(raw: str, set_id: str, source: str = "model output") -> Parsed:
    """Lenient parse of a model's JSONL: skip fences and prose, reject bad lines one by one."""
    out = Parsed()
    seen: set[str] = set()
    for lineno, line in enumerate(raw.splitlines(), 1):
        stripped = line.strip()
        if not stripped or _FENCE.match(stripped):
            continue
        where = f"{source}, line {lineno}"
        if not stripped.startswith("{"):
            out.rejected.append({"line": lineno, "error": f"{where}: not a JSON object",
                                 "text": stripped[:200]})
            continue
        try:
            q = parse_question(json.loads(stripped), where, set_id)
        except (ValueError, RecursionError, DatasetError) as exc:
            msg = str(exc) if isinstance(exc, DatasetError) else f"{where}: not valid JSON ({type(exc).__name__})"
            out.rejected.append({"line": lineno, "error": msg, "text": stripped[:200]})
            continue
        if q.id in seen:
            out.rejected.append({"line": lineno, "error": f"{where}: duplicate id {q.id!r}", "text": q.text})
            continue
        seen.add(q.id)
        out.questions.append(q)
    return out


def normalise(text: str) -> str:
    return _PUNCT.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def drop_unknown_ids(questions: list[Question], note_ids: set[str]) -> tuple[list[Question], list[dict]]:
    kept, rejected = [], []
    for q in questions:
        unknown = [e for e in q.expected if e not in note_ids]
        if unknown:
            rejected.append({"id": q.id, "error": f"unknown note id(s) {', '.join(unknown)}", "text": q.text})
        else:
            kept.append(q)
    return kept, rejected


def drop_duplicates(questions: list[Question]) -> tuple[list[Question], list[dict]]:
    kept: list[Question] = []
    first: dict[str, str] = {}
    dups: list[dict] = []
    for q in questions:
        key = normalise(q.text)
        if key in first:
            dups.append({"id": q.id, "duplicate_of": first[key], "text": q.text})
            continue
        first[key] = q.id
        kept.append(q)
    return kept, dups


def leakage(questions: Sequence[Question], notes: dict[str, Note],
            threshold: float = LEAKAGE_THRESHOLD) -> list[dict]:
    """One row per question: overlap with its note (paraphrases), and flags."""
    rows = []
    for q in questions:
        row: dict = {"id": q.id, "kind": q.kind, "lang": q.lang, "text": q.text, "flags": []}
        if q.kind == "paraphrase":
            score, shared = max((overlap(q.text, note_text(notes[e])) for e in q.expected),
                                key=lambda t: t[0])
            row.update(leakage=round(score, 3), shared_words=shared)
            if score > threshold:
                row["flags"].append("leakage")
        rows.append(row)
    return rows


def flag_near_notes(rows: list[dict], tops: dict[str, tuple[float | None, str | None]],
                    percentile: float = NEAR_NOTE_PERCENTILE) -> float | None:
    """Add each line's top score and note; flag unrelated lines above the paraphrases'
    ``percentile``. Returns that threshold (None without paraphrase scores)."""
    import numpy as np

    para = [float(top) for r in rows
            if r["kind"] == "paraphrase" and (top := tops.get(r["id"], (None, None))[0]) is not None]
    limit = float(np.percentile(para, percentile)) if para else None
    for r in rows:
        top, note_id = tops.get(r["id"], (None, None))
        r["top"] = None if top is None else round(top, 4)
        r["top_note"] = note_id
        if limit is not None and r["kind"] == "unrelated" and top is not None and top > limit:
            r["flags"].append("near_note")
    return limit


def reword_prompt(original_prompt: str, leaky: Sequence[dict]) -> str:
    """One retry round: ask for the flagged lines again, reworded, same ids and notes."""
    lines = "\n".join(
        json.dumps({"id": r["id"], "text": r["text"], "reused_words": r.get("shared_words", [])},
                   ensure_ascii=False) for r in leaky)
    return (
        f"{original_prompt}\n\n"
        "REWRITE REQUEST\n"
        "You already wrote the set. The paraphrases below reuse too many of their note's own "
        "words (listed in reused_words). Rewrite ONLY these lines: same id, kind, expected and "
        "lang, describing the situation in different words. Output one JSON object per line "
        "in the same format, nothing else.\n"
        f"{lines}\n"
    )
