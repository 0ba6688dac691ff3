"""Each note's best chunk, taken from FAISS's results in numpy (``_first_per_note``), is what a
loop over the results gives: the same notes in the same order, the same scores and chunks."""

from __future__ import annotations

import numpy as np

from recall.ranking.search import _first_per_note
from recall.ranking.sentences import ranked_over_rows


def _loop(chunk_note, scores, ids, where):
    best = {}
    for score, cid in zip(scores, ids, strict=True):
        if cid < 0:
            continue
        n = int(chunk_note[cid])
        if n not in best:  # results come best first
            best[n] = float(score)
            where[n] = int(cid)
    return best


def test_same_as_a_loop_over_the_results():
    rng = np.random.default_rng(22)
    for trial in range(500):
        chunks = int(rng.integers(1, 400))
        chunk_note = np.sort(rng.integers(0, max(1, chunks // 3), chunks)).astype(np.int64)
        k = int(rng.integers(1, chunks + 1))
        ids = rng.permutation(chunks)[:k].astype(np.int64)
        ids[rng.random(k) < (0.2 if trial % 3 == 0 else 0.0)] = -1  # FAISS's "no result"
        scores = np.sort(rng.random(k).astype(np.float32))[::-1]
        if trial % 4 == 0:
            scores = np.round(scores, 1)  # ties
        want_where, got_where = {}, {}
        want = _loop(chunk_note, scores, ids, want_where)
        got = _first_per_note(chunk_note, scores, ids, got_where)
        assert list(got.items()) == list(want.items())
        assert list(got_where.items()) == list(want_where.items())
        assert all(type(n) is int and type(s) is float for n, s in got.items())


def _rows_loop(chunk_note, scores, ids, where):
    """What ``ranked_over_rows`` replaced: each note's best over the rows, by a loop, then sorted."""
    best: dict[int, float] = {}
    for row_scores, row_ids in zip(scores, ids, strict=True):
        row_where: dict[int, int] = {}
        for note, score in _loop(chunk_note, row_scores, row_ids, row_where).items():
            if score > best.get(note, float("-inf")):
                best[note], where[note] = score, row_where[note]
    return sorted(best, key=lambda note: -best[note])


def test_the_notes_over_a_message_s_sentences_are_those_a_loop_ranks():
    rng = np.random.default_rng(23)
    for trial in range(400):
        chunks = int(rng.integers(1, 400))
        chunk_note = np.sort(rng.integers(0, max(1, chunks // 3), chunks)).astype(np.int64)
        rows, k = int(rng.integers(0, 7)), int(rng.integers(1, chunks + 1))
        ids = np.array([rng.permutation(chunks)[:k] for _ in range(rows)], dtype=np.int64).reshape(rows, k)
        ids[rng.random((rows, k)) < (0.2 if trial % 3 == 0 else 0.0)] = -1
        scores = np.sort(rng.random((rows, k)).astype(np.float32), axis=1)[:, ::-1]
        if trial % 4 == 0:
            scores = np.round(scores, 1)  # ties, within a row and across rows
        want_where, got_where = {}, {}
        want = _rows_loop(chunk_note, scores, ids, want_where)
        got = ranked_over_rows(chunk_note, scores, ids, got_where)
        assert got == want
        assert got_where == want_where
        assert all(type(n) is int for n in got) and all(type(c) is int for c in got_where.values())
