"""`make bench-first`: the first index of about 300 notes with their questions and
restatements, calibration included, beside the raw encoder's rate in the same run.

The collection: rules-120 (real rule notes, ../shared/benchmarks/rules-120/notes) with the
project's generated questions and restatements (datasets/rules-120/questions.jsonl) and
near misses (negatives.jsonl), the shipped sample (51 notes, its questions, restatements
and negatives), and, to reach ``--notes``, copies of rules-120 notes whose name and
questions carry a marker (so that every chunk text is new: the store embeds a text once,
and a plain copy would cost nothing). Nothing is read from datasets/*/audit/.

Measured, in one process, with the model of ``--model`` (default usem3):

1. raw: the encoder alone on exactly the passages the index will embed (batch 32), chunks/s;
2. first index: ``Recall.index`` on a fresh home (read, mask, chunk, embed, SQLite, FAISS,
   calibration): seconds in all, seconds of calibration, and when the first notes became
   searchable (the first index generation written mid-index) and when every note's text
   was (the notes phase's end), from the index's own progress events.

Targets (issue #22): in all <= 90 s for ~300 notes on 2 cores with usem3; times vary on a
shared machine, so the raw rate in the same run is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT.parent / "shared" / "benchmarks" / "rules-120" / "notes"
SETS = ROOT / "datasets"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_collection(folder: Path, n_notes: int, rules: Path) -> int:
    """Write the ~``n_notes`` collection to ``folder`` (notes, questions.jsonl, negatives.jsonl)."""
    folder.mkdir(parents=True)
    questions: list[dict] = []
    negatives: list[dict] = []
    for src, qfile, nfile in ((rules, SETS / "rules-120" / "questions.jsonl", SETS / "rules-120" / "negatives.jsonl"),
                              (SETS / "sample" / "notes", SETS / "sample" / "questions.jsonl",
                               SETS / "sample" / "negatives.jsonl")):
        for note in sorted(src.glob("*.md"))[:max(0, n_notes - len(list(folder.glob("*.md"))))]:
            shutil.copy(note, folder / note.name)
        questions += _jsonl(qfile)
        negatives += _jsonl(nfile)
    written = len(list(folder.glob("*.md")))
    by_stem = {q["note"]: q for q in _jsonl(SETS / "rules-120" / "questions.jsonl")}
    copy = 0
    for note in sorted(rules.glob("*.md")):
        if written >= n_notes:
            break
        copy += 1
        text = note.read_text(encoding="utf-8").replace("\nname: ", "\nname: (team copy) ", 1)
        (folder / f"copy-{note.name}").write_text(text, encoding="utf-8")
        q = by_stem.get(note.stem)
        if q:
            questions.append({"note": f"copy-{note.stem}",
                              "questions": [f"(team copy) {t}" for t in q.get("questions", [])],
                              "restatements": [f"(team copy) {t}" for t in q.get("restatements", [])]})
        written += 1
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
    with (folder / "negatives.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(n, ensure_ascii=False) + "\n" for n in negatives)
    return written


def passages(folder: Path) -> list[str]:
    """The texts the first index embeds (every chunk of every note, once per text)."""
    from recall.config.load import packaged_settings
    from recall.indexing.indexer import SourceSpec, prepare_note, read_source

    cfg = packaged_settings().chunking
    read = read_source(SourceSpec("dir", folder), cfg, {})
    texts: dict[str, str] = {}
    for note in read.notes:
        _, chunks = prepare_note(note, cfg, read.file_questions.get(note.id, []), read.restatements.get(note.id, []))
        texts.update((c.hash, c.text) for c in chunks)
    return list(texts.values())


def run(model: str, n_notes: int, rules: Path) -> dict:
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall.indexing.indexer import SourceSpec

    embedder = get_embedder(model)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        notes = build_collection(folder, n_notes, rules)
        texts = passages(folder)
        embedder.embed_passages(texts[:4])  # warm-up: the first call pays one-off costs
        t0 = time.perf_counter()
        for i in range(0, len(texts), 32):
            embedder.embed_passages(texts[i:i + 32])
        raw_s = time.perf_counter() - t0

        events: dict[str, float] = {}
        app = Recall(home=Path(tmp) / "home", embedder=embedder)
        t0 = time.perf_counter()

        def progress(_n: int, what: str) -> None:
            events.setdefault(what, time.perf_counter() - t0)

        stats = app.index([SourceSpec("dir", folder)], progress=progress)
        total_s = time.perf_counter() - t0
        cal_s = getattr(stats, "calibrate_seconds", None)
    return {"model": embedder.model_id, "notes": notes, "chunks": len(texts),
            "threads": os.environ.get("RECALL_THREADS"),
            "raw_s": raw_s, "raw_chunks_per_s": len(texts) / raw_s, "index_s": total_s,
            "embed_s": stats.embed_seconds, "calibrate_s": cal_s, "chunks_embedded": stats.chunks_embedded,
            "events_s": events, "target_s": 90.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="usem3")
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--rules", type=Path, default=RULES, help="the rules-120 notes folder")
    args = ap.parse_args(argv)
    if not args.rules.is_dir():
        print(f"first index: {args.rules} not found (../shared/benchmarks/rules-120/notes); skipped")
        return 0
    r = run(args.model, args.notes, args.rules)
    print(f"\nFirst index of {r['notes']} notes with questions and restatements ({r['chunks']} passages, {r['model']})")
    print(f"  raw encoder      {r['raw_s']:7.1f} s   {r['raw_chunks_per_s']:7.1f} passages/s (same texts, same run)")
    print(f"  recall index     {r['index_s']:7.1f} s   (target <= {r['target_s']:.0f} s; embedding {r['embed_s']:.1f} s"
          + (f", calibration {r['calibrate_s']:.1f} s" if r["calibrate_s"] is not None else "") + ")")
    print(f"  ratio index/raw  {r['index_s'] / r['raw_s']:7.2f}")
    said = {"notes": "first batch of notes' text embedded", "searchable": "first notes searchable",
            "questions": "first batch of questions embedded"}
    for what, at in r["events_s"].items():
        print(f"  {said.get(what, what):<38} at {at:6.1f} s")
    out = ROOT / "reports" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "first_index.json").write_text(json.dumps(r, indent=2))
    print(f"\nwritten: {out / 'first_index.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
