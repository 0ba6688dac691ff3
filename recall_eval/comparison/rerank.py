"""Second stages for ``recall-eval compare``: they reorder first-stage rankings.

    fusion   ``ranx.fuse`` of several rankings, each cut to its top FUSE_DEPTH notes (what a
             core can fetch cheaply) and normalised (``prepare_row``): wsum / max / mnz over
             normalised scores, rrf over ranks; weights by ``ranx.optimize_fusion``.
             ``fuse_one`` is the same for one question in numpy: the per-question path that
             latency is measured on, and what a core would run (tests check it equals ranx).

    maxsim   the dense top RERANK_DEPTH, rescored by the same embedder at a finer grain: each
             note is split into sentences (from its
             stored chunks, so secrets stay masked), each sentence embedded once (cached);
             a note's sentence score is its best sentence's cosine, and its final score
             alpha * best-chunk cosine + (1 - alpha) * best-sentence cosine, alpha tuned on
             training questions. A long chunk averages a note's points together; one
             sentence can match a short message much more sharply. The combined score stays
             on the model's cosine scale, so the gap rule still applies to it.
    cross    the dense top RERANK_DEPTH, reordered by a sentence-transformers
             ``CrossEncoder`` (any path or id) on (question, the note's best chunk) pairs.
             Its logits have no fixed scale: the order comes from the cross-encoder, the
             gap rule keeps the dense list's score shape.

No cross-encoder ships its weights offline here: ``build_random_cross_encoder`` writes a
BERT with random weights (the MiniLM tokenizer) that proves the plumbing and, at the
``minilm-l6`` shape of the usual ms-marco rerankers, measures their latency. Its quality
figures are meaningless.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recall_eval.comparison.components import NEG, Corpus, EmbeddingCache, note_max, top_depth
from recall_eval.scoring.metrics import reciprocal_rank

# Notes per component handed to fusion. recall's search fetches 200 chunks (>= 33 notes);
# 50 notes per list is what a core can afford for both lists, and min-max normalisation
# over a fixed depth keeps scores comparable across questions.
FUSE_DEPTH = 50
LEXICAL = ("bm25", "grep")  # components whose zero means "nothing matched"
PLACEHOLDER = "<no match>"  # stands for an empty list in a ranx Run

# Notes reranked per question: the 20 notes recall's search returns, so the gap rule's
# ranks 2..11 all come from the reranked list.
RERANK_DEPTH = 20
ALPHAS = tuple(round(a * 0.1, 1) for a in range(11))
# Shorter pieces ("**Why:**", "- ok") carry no meaning of their own; a note keeps at most
# MAX_SENTENCES so one long note cannot make the index (and the rerank) balloon.
MIN_SENTENCE_CHARS = 12
MAX_SENTENCES = 40
# Sentence ends (not after "e.g." / "i.e."), Japanese full stops, line breaks.
_SPLIT = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+|(?<=[。！？])|\n+")
_MARKUP = re.compile(r"^\s*(?:[-*+>#]+|\d+[.)])\s*|\*\*|__|`")


def sentences(corpus: Corpus, context: bool = False) -> tuple[list[str], np.ndarray]:
    """(sentence texts, note index of each): name, description, then the body's sentences,
    from the masked text the note's chunks cover. ``context`` prefixes each sentence with
    its note's name (a sentence alone may not say what it is about)."""
    texts: list[str] = []
    owner: list[int] = []
    for ni, text in enumerate(corpus.covered):
        name = corpus.notes[ni].name.strip()
        seen: list[str] = []
        for piece in _SPLIT.split(text):
            piece = _MARKUP.sub("", piece or "").strip()
            if len(piece) >= MIN_SENTENCE_CHARS and piece not in seen and len(seen) < MAX_SENTENCES:
                seen.append(piece)
        if not seen:  # a note of short pieces only: its first chunk stands for it
            seen = [corpus.chunks[int(np.flatnonzero(corpus.chunk_note == ni)[0])]]
        texts += [f"{name}: {p}" if context and p != name else p for p in seen]
        owner += [ni] * len(seen)
    return texts, np.asarray(owner, dtype=np.int64)


@dataclass
class MaxSim:
    vecs: np.ndarray
    owner: np.ndarray
    n_notes: int

    @classmethod
    def build(cls, corpus: Corpus, embedder, cache: EmbeddingCache, context: bool = False) -> MaxSim:
        texts, owner = sentences(corpus, context)
        kind = "sentence-ctx" if context else "sentence"
        return cls(cache.embed(embedder, texts, "passage", kind), owner, len(corpus.notes))

    def sentence_scores(self, qv: np.ndarray) -> np.ndarray:
        """(questions x notes): best sentence cosine per note."""
        return note_max(qv @ self.vecs.T, self.owner, self.n_notes)

    def rerank_one(self, qv: np.ndarray, dense_row: np.ndarray, alpha: float,
                   depth: int = RERANK_DEPTH) -> np.ndarray:
        """One question, only the candidates' sentences touched (the per-question path a
        core runs; equals ``combine`` on that row)."""
        top = top_depth(dense_row, depth)
        rows = np.flatnonzero(np.isin(self.owner, top))
        fine = note_max((self.vecs[rows] @ qv.reshape(-1))[None, :], self.owner[rows], self.n_notes)[0]
        out = np.full(dense_row.shape, NEG)
        out[top] = alpha * dense_row[top] + (1 - alpha) * fine[top]
        return out


def combine(dense: np.ndarray, fine: np.ndarray, alpha: float, depth: int = RERANK_DEPTH) -> np.ndarray:
    """alpha * dense + (1 - alpha) * fine on each row's dense top ``depth``; -inf elsewhere."""
    out = np.full(dense.shape, NEG)
    for qi in range(dense.shape[0]):
        top = top_depth(dense[qi], depth)
        out[qi, top] = alpha * dense[qi, top] + (1 - alpha) * fine[qi, top]
    return out


def mrr(matrix: np.ndarray, ids: Sequence[str], expected: Sequence[Sequence[str]]) -> float:
    """Mean reciprocal rank of the first expected note (stable order on ties): the metrics'
    one definition (``recall_eval.scoring.metrics.reciprocal_rank``, checked against ranx)."""
    rr = [reciprocal_rank([ids[j] for j in top_depth(matrix[qi], matrix.shape[1])], exp)
          for qi, exp in enumerate(expected)]
    return float(sum(rr)) / max(1, len(expected))


def tune_alpha(dense: np.ndarray, fine: np.ndarray, ids: Sequence[str], expected: Sequence[Sequence[str]]) -> float:
    """The alpha with the best training MRR; on ties the largest (closest to plain dense)."""
    return max(ALPHAS, key=lambda a: (round(mrr(combine(dense, fine, a), ids, expected), 9), a))


# --- cross-encoder ----------------------------------------------------------------------


def best_chunks(qv: np.ndarray, chunk_vecs: np.ndarray, corpus: Corpus, notes: np.ndarray) -> list[str]:
    """The text of each listed note's best chunk for one question vector."""
    out = []
    for j in notes:
        rows = np.flatnonzero(corpus.chunk_note == j)
        out.append(corpus.chunks[int(rows[int(np.argmax(chunk_vecs[rows] @ qv))])])
    return out


class CrossReranker:
    def __init__(self, name_or_path: str) -> None:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        from recall.embedding.models import EmbedderError

        try:
            self.model = CrossEncoder(name_or_path, device="cpu")
        except Exception as exc:  # noqa: BLE001 - many loader errors, one message
            raise EmbedderError(f"cannot load cross-encoder {name_or_path!r} offline ({exc})") from exc
        self.name = Path(name_or_path).name or name_or_path

    def scores(self, question: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0)
        raw = self.model.predict([(question, p) for p in passages], batch_size=32, show_progress_bar=False)
        return np.asarray(raw, dtype=np.float64).reshape(len(passages), -1)[:, -1]

    def rerank_one(self, question: str, qv: np.ndarray, dense_row: np.ndarray, chunk_vecs: np.ndarray,
                   corpus: Corpus, depth: int = RERANK_DEPTH) -> np.ndarray:
        """Cross-encoder scores on the dense top ``depth`` notes; -inf elsewhere."""
        top = top_depth(dense_row, depth)
        out = np.full(dense_row.shape, NEG)
        out[top] = self.scores(question, best_chunks(qv, chunk_vecs, corpus, top))
        return out


SHAPES = {  # BertConfig sizes
    "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
    # cross-encoder/ms-marco-MiniLM-L-6-v2's shape: its latency is this model's latency
    "minilm-l6": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                  "intermediate_size": 1536},
}


def build_random_cross_encoder(out: Path, shape: str = "tiny", seed: int = 0) -> Path:
    """A BERT sequence classifier with random weights and the MiniLM tokenizer, saved so
    that ``CrossEncoder(out)`` loads it. For plumbing and latency only."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from recall.embedding.models import minilm_path

    tok = BertTokenizerFast.from_pretrained(minilm_path())
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), num_labels=1, max_position_embeddings=512, **SHAPES[shape])
    out.mkdir(parents=True, exist_ok=True)
    BertForSequenceClassification(cfg).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


# --- fusion ----------------------------------------------------------------------------


def prepare_row(row: np.ndarray, norm: str, depth: int = FUSE_DEPTH) -> np.ndarray:
    """One component's scores as fusion sees them: its top ``depth`` notes, normalised;
    -inf = not in the list.

        min-max  (s - min) / (max - min) over the list: cosines have no natural zero
                 (e5 puts every pair in 0.65-0.85), so only their spread means anything
        max      s / max: BM25's zero is "no word matched", a real floor, so one single
                 match keeps its full weight instead of becoming min-max's 0
        rank     depth, depth-1, ...: strictly decreasing, so rank-based fusion (rrf)
                 sees exactly this order, ties included
    """
    top = top_depth(row, depth)
    out = np.full(row.shape, NEG)
    vals = row[top]
    if norm == "rank":
        out[top] = depth - np.arange(top.size)
    elif norm == "max":
        out[top] = vals / vals.max() if top.size and vals.max() > 0 else 0.0
    elif top.size:
        lo, hi = vals.min(), vals.max()
        out[top] = (vals - lo) / (hi - lo) if hi > lo else 0.0
    return out


def norm_for(key: str, method: str) -> str:
    if method == "rrf":
        return "rank"
    return "max" if key in LEXICAL else "min-max"


def to_run(matrix: np.ndarray, qids: Sequence[str], ids: Sequence[str]):
    """A ranx Run of a prepared matrix, every doc id stored at one fixed width.

    Why not ``Run(dict)``: it stores ids as numpy strings as wide as that run's longest
    id, and ranx 0.3.21's fusion then fails to match ids across runs of different widths
    (scores of the narrower run silently become 0). A question with nothing retrieved gets
    a zero-score placeholder, because ranx needs every query in every run."""
    from numba.typed import List as TypedList
    from ranx import Run
    from ranx.data_structures.common import create_and_sort

    width = max(len(x) for x in [*ids, PLACEHOLDER])
    docs, scores = [], []
    for qi in range(len(qids)):
        top = np.flatnonzero(np.isfinite(matrix[qi]))
        docs.append(np.array([ids[j] for j in top] or [PLACEHOLDER], dtype=f"<U{width}"))
        scores.append(matrix[qi, top].astype(float) if top.size else np.zeros(1))
    run = Run()
    run.run = create_and_sort(TypedList(qids), TypedList(docs), TypedList(scores))
    run.sorted = True
    return run


def from_run(run, qids: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    col = {nid: j for j, nid in enumerate(ids)}
    out = np.full((len(qids), len(ids)), NEG)
    data = run.to_dict()
    for qi, qid in enumerate(qids):
        for nid, s in data.get(qid, {}).items():
            if nid in col:  # not the placeholder
                out[qi, col[nid]] = s
    return out


def _runs(matrices, norms, qids, ids, depth):
    return [to_run(np.stack([prepare_row(r, n, depth) for r in m]), qids, ids)
            for m, n in zip(matrices, norms, strict=True)]


def fuse(matrices: Sequence[np.ndarray], ids: Sequence[str], method: str, params: dict | None = None,
         norms: Sequence[str] | None = None, depth: int = FUSE_DEPTH) -> np.ndarray:
    """``ranx.fuse`` of the matrices (questions in row order), each prepared by ``prepare_row``."""
    from ranx import fuse as ranx_fuse

    norms = norms or [norm_for("", method)] * len(matrices)
    qids = [f"q{i}" for i in range(matrices[0].shape[0])]
    fused = ranx_fuse(_runs(matrices, norms, qids, ids, depth), norm=None, method=method, params=params or {})
    return from_run(fused, qids, ids)


def optimize(matrices: Sequence[np.ndarray], ids: Sequence[str], expected: Sequence[Sequence[str]], method: str,
             norms: Sequence[str] | None = None, metric: str = "mrr", depth: int = FUSE_DEPTH) -> dict:
    """Fusion parameters that maximise ``metric`` on these (training) questions
    (``ranx.optimize_fusion``: weights on a 0.1 grid for wsum, k in 10..100 for rrf)."""
    from ranx import Qrels, optimize_fusion

    if method not in ("wsum", "rrf"):
        return {}
    norms = norms or [norm_for("", method)] * len(matrices)
    qids = [f"q{i}" for i in range(matrices[0].shape[0])]
    qrels = Qrels({q: {e: 1 for e in exp} for q, exp in zip(qids, expected, strict=True)})
    found = optimize_fusion(qrels, _runs(matrices, norms, qids, ids, depth), norm=None, method=method,
                            metric=metric, show_progress=False)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dict(found).items()}


def fuse_one(rows: Sequence[np.ndarray], method: str, params: dict | None = None,
             norms: Sequence[str] | None = None, depth: int = FUSE_DEPTH) -> np.ndarray:
    """``fuse`` for one question in numpy (what a core would run): one score vector per
    component over the same notes; fused scores, -inf = in no list."""
    params = params or {}
    norms = norms or [norm_for("", method)] * len(rows)
    stack = np.vstack([prepare_row(r, n, depth) for r, n in zip(rows, norms, strict=True)])
    present = np.isfinite(stack)
    if method == "rrf":  # ranx: 1 / (k + rank), rank from 1 in each list
        ranks = depth - stack + 1
        vals = np.where(present, 1.0 / (params.get("k", 60) + ranks), 0.0)
    else:
        vals = np.where(present, stack, 0.0)
    if method == "wsum":
        fused = (np.asarray(params.get("weights") or [1.0] * len(rows))[:, None] * vals).sum(axis=0)
    elif method == "max":
        fused = np.where(present, stack, NEG).max(axis=0)
    elif method == "mnz":
        fused = vals.sum(axis=0) * present.sum(axis=0)
    elif method in ("rrf", "sum"):
        fused = vals.sum(axis=0)
    else:
        raise ValueError(f"fuse_one: no numpy version of {method!r}")
    return np.where(present.any(axis=0), fused, NEG)
