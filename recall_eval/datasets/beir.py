"""Question sets in the BEIR layout, both ways.

BEIR layout (so any IR tool can read a set): ``corpus.jsonl`` {_id, title, text},
``queries.jsonl`` {_id, text, metadata: {kind, lang}}, ``qrels/test.tsv`` with the
header ``query-id<TAB>corpus-id<TAB>score``. Unrelated questions are queries without
qrels, which is how BEIR says "nothing here is relevant".
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from recall_eval.datasets.collections import DatasetError, Question, parse_question, read_notes


def export_beir(notes_dir: Path, questions: Sequence[Question], out: Path) -> dict[str, int]:
    notes = read_notes(notes_dir)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for n in notes:
            text = f"{n.description}\n\n{n.body}".strip()
            fh.write(json.dumps({"_id": n.id, "title": n.name, "text": text}, ensure_ascii=False) + "\n")
    qrels = 0
    with open(out / "queries.jsonl", "w", encoding="utf-8") as fq, \
            open(out / "qrels" / "test.tsv", "w", encoding="utf-8", newline="") as ft:
        writer = csv.writer(ft, delimiter="\t", lineterminator="\n")
        writer.writerow(["query-id", "corpus-id", "score"])
        for q in questions:
            meta = {"kind": q.kind, "lang": q.lang}
            fq.write(json.dumps({"_id": q.id, "text": q.text, "metadata": meta}, ensure_ascii=False) + "\n")
            for note_id in q.expected:
                writer.writerow([q.id, note_id, 1])
                qrels += 1
    return {"corpus": len(notes), "queries": len(questions), "qrels": qrels}


def import_beir(folder: Path, split: str = "test") -> tuple[dict[str, dict], list[Question]]:
    """(corpus {id: {title, text}}, questions). A query without qrels is 'unrelated'."""
    corpus: dict[str, dict] = {}
    for i, line in enumerate((folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                doc = json.loads(line)
                corpus[str(doc["_id"])] = {"title": doc.get("title", ""), "text": doc.get("text", "")}
            except (ValueError, KeyError, TypeError) as exc:
                raise DatasetError(f"{folder / 'corpus.jsonl'}, line {i}: {exc}") from None
    qrels: dict[str, list[str]] = {}
    qrels_file = folder / "qrels" / f"{split}.tsv"
    with open(qrels_file, encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if i == 1 and row[:1] == ["query-id"]:
                continue
            if len(row) < 3:
                raise DatasetError(f"{qrels_file}, line {i}: expected query-id, corpus-id, score")
            if float(row[2]) > 0:
                qrels.setdefault(row[0], []).append(row[1])
    questions: list[Question] = []
    source = folder / "queries.jsonl"
    for i, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            qid, text = str(obj["_id"]), obj["text"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError(f"{source}, line {i}: {exc}") from None
        meta = obj.get("metadata") or {}
        expected = qrels.get(qid, [])
        kind = meta.get("kind") or ("paraphrase" if expected else "unrelated")
        lang = meta.get("lang") or "en"
        questions.append(parse_question(
            {"id": qid, "kind": kind, "text": text, "expected": expected, "lang": lang},
            f"{source}, line {i}", folder.name))
    return corpus, questions


def write_corpus_as_notes(corpus: dict[str, dict], out: Path) -> int:
    """Turn a BEIR corpus into a note folder (one ``<_id>.md`` per document)."""
    out.mkdir(parents=True, exist_ok=True)
    for doc_id, doc in corpus.items():
        title = json.dumps(doc["title"] or doc_id, ensure_ascii=False)
        first = (doc["text"].strip().splitlines() or [""])[0]
        body = doc["text"].strip()
        rest = body[len(first):].strip()
        (out / f"{doc_id}.md").write_text(
            f"---\nname: {title}\ndescription: {json.dumps(first, ensure_ascii=False)}\n---\n\n{rest}\n",
            encoding="utf-8")
    return len(corpus)
