"""A scope's dense scan (FAISS with the scope's chunks as a bitmap) ranks exactly what a scan
of every chunk keeps of the scope's: the same notes, the same order, the same scores to the bit."""

from __future__ import annotations

import random

from helpers.notes import write_note
from recall.api import Recall
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.ranking.scope import Scope

WORDS = "deploy staging server money rounding decimal kiwi zebra cache token branch review".split()


def _reference(searcher, qv, scope, k_notes):
    idx = searcher.index
    scores, ids = idx.index.search(qv, idx.ntotal)  # every chunk, no selector
    best = {}
    for score, cid in zip(scores[0], ids[0], strict=True):
        n = int(idx.chunk_note[cid])
        if scope.admits(idx.notes[n]) and n not in best:
            best[n] = float(score)
    ranked = sorted(best.items(), key=lambda kv: -kv[1])[:k_notes]
    return [(idx.notes[n].get("id"), s) for n, s in ranked]


def test_every_scope_scans_like_a_filter_over_all_chunks(recall_home, tmp_path):
    rng = random.Random(22)
    folders = {"p1": tmp_path / "p1", "p2": tmp_path / "p2", "rules": tmp_path / "rules"}
    for i in range(60):  # notes of three sources, of one to a few chunks each
        where = rng.choice(list(folders))
        body = "\n\n".join(" ".join(rng.choices(WORDS, k=40)) for _ in range(rng.randint(1, 4)))
        write_note(folders[where], f"{where}-{i}", f"Note {i}", " ".join(rng.choices(WORDS, k=5)), body)
    app = Recall(home=recall_home, embedder=get_embedder("hash"))
    app.index([SourceSpec("memory", folders["p1"], "-home-me-p1"),
               SourceSpec("memory", folders["p2"], "-home-me-p2"),
               SourceSpec("rule", folders["rules"])])
    searcher = app.searcher
    scopes = [Scope(project="-home-me-p1"), Scope(project="-home-me-p2", shared=False),
              Scope(repo="p1", shared=False), Scope(project=None), Scope(project="-elsewhere", shared=False)]
    for text in ("deploy the staging server", "decimal money rounding", "zebra review"):
        qv = searcher.embedder.embed_queries([text])
        for scope in scopes:
            got = [(h.note.get("id"), h.score) for h in searcher.search_vector(qv, scope, 15)]
            assert got == _reference(searcher, qv, scope, 15), scope
