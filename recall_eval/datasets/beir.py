"""Question sets in the BEIR layout, both ways.

BEIR layout (so any IR tool can read a set): ``corpus.jsonl`` {_id, title, text},
``queries.jsonl`` {_id, text, metadata: {kind, lang}}, ``qrels/test.tsv`` with the
header ``query-id<TAB>corpus-id<TAB>score``. Unrelated questions are queries without
qrels, which is how BEIR says "nothing here is relevant".
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

from recall_eval.datasets.collections import DatasetError, Question, parse_question, read_notes
from recall_eval.files import masked, write_private


def export_beir(notes_dir: Path, questions: Sequence[Question], out: Path) -> dict[str, int]:
    """The notes and questions in the BEIR layout, every string masked, the files the user's
    only (``recall_eval.files``): an export is an artefact of the notes like a report."""
    from recall.privacy.masking import mask_together

    notes = read_notes(notes_dir)
    headers = [mask_together(n.name, n.description) for n in notes]  # as the index masks them: together
    corpus = "".join(json.dumps(masked({"_id": n.id, "title": name, "text": f"{desc}\n\n{n.body}".strip()}),
                                ensure_ascii=False) + "\n" for n, (name, desc) in zip(notes, headers, strict=True))
    queries = "".join(json.dumps(masked({"_id": q.id, "text": q.text, "metadata": {"kind": q.kind, "lang": q.lang}}),
                                 ensure_ascii=False) + "\n" for q in questions)
    rows = io.StringIO()
    writer = csv.writer(rows, delimiter="\t", lineterminator="\n")
    writer.writerow(["query-id", "corpus-id", "score"])
    pairs = [masked([q.id, note_id]) for q in questions for note_id in q.expected]
    writer.writerows([qid, note_id, 1] for qid, note_id in pairs)
    write_private(out / "corpus.jsonl", corpus)
    write_private(out / "queries.jsonl", queries)
    write_private(out / "qrels" / "test.tsv", rows.getvalue())
    return {"corpus": len(notes), "queries": len(questions), "qrels": len(pairs)}


def import_beir(folder: Path, split: str = "test") -> tuple[dict[str, dict], list[Question]]:
    """(corpus {id: {title, text}}, questions). A query without qrels is 'unrelated'; a
    question's expected notes are named by their file stems (``note_stem``)."""
    corpus = _read_corpus(folder / "corpus.jsonl")
    qrels_file = folder / "qrels" / f"{split}.tsv"
    qrels = _read_qrels(qrels_file)
    questions: list[Question] = []
    source = folder / "queries.jsonl"
    seen: set[str] = set()
    for i, line in enumerate(_lines(source), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            qid, text = str(obj["_id"]), obj["text"]
            meta = obj.get("metadata") or {}
            if not isinstance(meta, dict):
                raise TypeError("metadata must be an object")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise DatasetError(f"{source}, line {i}: {type(exc).__name__}: {exc}") from None
        if qid in seen:
            raise DatasetError(f"{source}, line {i}: _id {qid!r} is used twice: give each query an _id of its own")
        seen.add(qid)
        missing = [d for d in qrels.get(qid, []) if d not in corpus]
        if missing:
            raise DatasetError(f"{qrels_file}: query {qid!r} names {missing[0]!r}, which corpus.jsonl does not hold")
        expected = [note_stem(d) for d in qrels.get(qid, [])]
        kind = meta.get("kind") or ("paraphrase" if expected else "unrelated")
        lang = meta.get("lang") or "en"
        questions.append(parse_question(
            {"id": qid, "kind": kind, "text": text, "expected": expected, "lang": lang},
            f"{source}, line {i}", folder.name))
    return corpus, questions


def _read_corpus(source: Path) -> dict[str, dict]:
    """{_id: {title, text}}; an id used twice, or two ids that would name one note file, is one line."""
    corpus: dict[str, dict] = {}
    stems: dict[str, str] = {}  # file stem -> the id it was made from
    for i, line in enumerate(_lines(source), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            doc_id, title, text = str(doc["_id"]), doc.get("title") or "", doc.get("text") or ""
            if not isinstance(title, str) or not isinstance(text, str):
                raise TypeError("title and text must be strings")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise DatasetError(f"{source}, line {i}: {type(exc).__name__}: {exc}") from None
        stem = note_stem(doc_id)
        if doc_id in corpus or stem in stems:
            raise DatasetError(f"{source}, line {i}: _id {doc_id!r} " + (
                "is used twice" if doc_id in corpus else f"names the same note file as {stems[stem]!r}")
                               + ": give each document an _id of its own")
        stems[stem] = doc_id
        corpus[doc_id] = {"title": title, "text": text}
    return corpus


def _read_qrels(qrels_file: Path) -> dict[str, list[str]]:
    qrels: dict[str, list[str]] = {}
    for i, row in enumerate(csv.reader(_lines(qrels_file), delimiter="\t"), 1):
        if i == 1 and row[:1] == ["query-id"]:
            continue
        try:
            relevant = len(row) >= 3 and float(row[2]) > 0
        except ValueError:
            relevant = None
        if len(row) < 3 or relevant is None:
            raise DatasetError(f"{qrels_file}, line {i}: expected query-id, corpus-id, score")
        if relevant:
            qrels.setdefault(row[0], []).append(row[1])
    return qrels


_UNSAFE = re.compile(r"[^\w.-]+")
MAX_STEM = 120


def note_stem(doc_id: str) -> str:
    """The file stem a document's note gets: its ``_id`` with anything but letters, digits,
    ``.``, ``-`` and ``_`` made ``_`` (no ``/``, ``..`` or leading dot can lead out of the folder or
    hide the file), cut to ``MAX_STEM`` characters; the questions' expected ids use the same."""
    stem = _UNSAFE.sub("_", doc_id).lstrip(".")[:MAX_STEM] or "_"
    return stem if stem not in (".", "..") else "_"


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 (byte {exc.start}): save it as UTF-8") from None


def write_corpus_as_notes(corpus: dict[str, dict], out: Path) -> int:
    """Turn a BEIR corpus into a note folder (one ``note_stem(_id).md`` per document), which
    must be new or empty: an import never replaces a note of the user's."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(f"{out} is not an empty folder: give --notes-out a new folder")
    for doc_id, doc in corpus.items():
        title = json.dumps(doc["title"] or doc_id, ensure_ascii=False)
        first = (doc["text"].strip().splitlines() or [""])[0]
        body = doc["text"].strip()
        rest = body[len(first):].strip()
        write_private(out / f"{note_stem(doc_id)}.md",
                      f"---\nname: {title}\ndescription: {json.dumps(first, ensure_ascii=False)}\n---\n\n{rest}\n")
    return len(corpus)
