"""`make bench`: indexing throughput against the embedder's raw rate, and re-index time.

1. Throughput. The shipped sample is chunked once; the embedder's raw encode rate on
   exactly those chunks (batch 32) is the baseline. Then `recall index` machinery
   (read, mask, chunk, embed, SQLite, FAISS) indexes the same notes into a fresh home.
   Reported: chunks/s of each and their ratio (target >= 0.9). Repeated, medians.
2. Re-index one changed note in a 2,000-note collection (target < 1 s). The collection
   is synthetic; to avoid embedding 4,000+ chunks first, its vectors are pre-seeded
   (random unit vectors under the real model id), so the timed step is exactly what a
   user pays after an edit: scan 2,000 files, hash, re-chunk and embed the changed note
   with the real model, write SQLite, rebuild and swap the FAISS index.
3. The store benchmark (local vs PostgreSQL + pgvector) when its module is present.

Times vary on shared machines: compare the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from recall.api import Recall
from recall.config.load import packaged_settings
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.indexing.texts import note_chunks
from recall.notes.files import read_folder

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "datasets" / "sample" / "notes"
WORDS = ("invoice ledger tax rounding migration deploy rollback staging pytest fixture celery retry "
         "queue index replica pool branch rebase commit review docs dashboard alert cache token "
         "schema column table frontend state hooks translation currency decimal flag release").split()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def throughput(model: str, repeats: int) -> dict:
    embedder = get_embedder(model)
    notes, _ = read_folder(SAMPLE)
    cfg = packaged_settings().chunking
    texts = [t for n in notes for t, _ in note_chunks(n, cfg)]
    embedder.embed_passages(texts[:4])  # warm-up: first call pays one-off costs
    raw, full = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(0, len(texts), 32):
            embedder.embed_passages(texts[i : i + 32])
        raw.append(len(texts) / (time.perf_counter() - t0))
        with tempfile.TemporaryDirectory() as home:
            app = Recall(home=Path(home), embedder=embedder)
            t0 = time.perf_counter()
            stats = app.index([SourceSpec("dir", SAMPLE)])
            full.append(stats.chunks_embedded / (time.perf_counter() - t0))
    return {
        "model": embedder.model_id, "chunks": len(texts), "repeats": repeats,
        "raw_chunks_per_s": statistics.median(raw), "index_chunks_per_s": statistics.median(full),
        "ratio": statistics.median(full) / statistics.median(raw), "target_ratio": 0.9,
    }


def synthetic_collection(folder: Path, n: int, rng: random.Random) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 260)))
        (folder / f"note-{i:04d}.md").write_text(
            f"---\nname: Synthetic note {i}\ndescription: {' '.join(rng.sample(WORDS, 6))}\n"
            f"type: project\n---\n\n{body}\n", encoding="utf-8")


def reindex_one(model: str, n_notes: int, repeats: int) -> dict:
    embedder = get_embedder(model)
    rng = random.Random(7)
    times, embedded, embed_times = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        synthetic_collection(folder, n_notes, rng)
        app = Recall(home=Path(tmp) / "home", embedder=embedder)
        # Pre-seed vectors for every chunk so the first full index embeds nothing.
        notes, _ = read_folder(folder)
        pairs = {h: t for n in notes for t, h in note_chunks(n, app.config.chunking)}
        vecs = np.random.default_rng(7).standard_normal((len(pairs), embedder.dimension)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        app.indexer().store.put_vectors(list(pairs), vecs)  # through the store contract
        first = app.index([SourceSpec("dir", folder)])
        assert first.chunks_embedded == 0, "pre-seeded vectors were not used"
        for r in range(repeats):
            target = folder / f"note-{rng.randrange(n_notes):04d}.md"
            target.write_text(target.read_text() + f"\nEdited line {r}: {rng.choice(WORDS)}.\n")
            t0 = time.perf_counter()
            stats = app.index([SourceSpec("dir", folder)])
            times.append(time.perf_counter() - t0)
            embedded.append(stats.chunks_embedded)
            embed_times.append(stats.embed_seconds)
            assert stats.changed == 1
        chunks = app.store.counts()["chunks"]
    return {"notes": n_notes, "chunks": chunks, "repeats": repeats, "median_s": statistics.median(times),
            "p95_s": pct(times, 95), "chunks_embedded_median": statistics.median(embedded),
            "embed_median_s": statistics.median(embed_times),
            "rest_median_s": statistics.median(t - e for t, e in zip(times, embed_times, strict=True)),
            "target_s": 1.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.environ.get("RECALL_MODEL") or packaged_settings().model,
                    help="model spec (default: RECALL_MODEL, else the shipped default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--no-store", action="store_true", help="skip the local-vs-PostgreSQL store benchmark")
    args = ap.parse_args(argv)

    tp = throughput(args.model, args.repeats)
    print(f"\nIndexing throughput on the sample ({tp['chunks']} chunks, {tp['model']}, median of {tp['repeats']})")
    print(f"  embedder raw encode  {tp['raw_chunks_per_s']:8.2f} chunks/s   (baseline, same chunks, same run)")
    print(f"  recall index         {tp['index_chunks_per_s']:8.2f} chunks/s")
    print(f"  ratio                {tp['ratio']:8.3f}          (target >= {tp['target_ratio']})")

    ri = reindex_one(args.model, args.notes, max(5, args.repeats * 3))
    print(f"\nRe-index after editing one note of {ri['notes']} ({ri['chunks']} chunks, vectors pre-seeded)")
    print(f"  median {ri['median_s'] * 1000:7.1f} ms   p95 {ri['p95_s'] * 1000:7.1f} ms   "
          f"chunks embedded per edit {ri['chunks_embedded_median']:.0f}   (target < {ri['target_s']:.0f} s)")
    print(f"  of which embedding {ri['embed_median_s'] * 1000:7.1f} ms (the model), everything else "
          f"{ri['rest_median_s'] * 1000:7.1f} ms (scan, hash, SQLite, FAISS rebuild and swap)")

    out = ROOT / "reports" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.json").write_text(json.dumps({"throughput": tp, "reindex_one": ri}, indent=2))
    print(f"\nwritten: {out / 'index.json'}")

    if not args.no_store:
        try:
            from bench import bench_store
        except ImportError:
            print("store benchmark: bench/bench_store.py not present; skipped")
        else:
            bench_store.main([])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
