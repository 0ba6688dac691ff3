"""Second stages for ``recall-eval compare``: rerankers of the core's dense list.

    maxsim   the core's dense top RERANK_DEPTH, rescored by the same embedder at a finer
             grain: each note is split into sentences (from its stored chunks, so secrets
             stay masked), each sentence embedded once (cached); a note's sentence score is
             its best sentence's cosine, and its final score alpha * the core's score +
             (1 - alpha) * best-sentence cosine, alpha tuned on training questions. A long
             chunk averages a note's points together; one sentence can match a short
             message much more sharply. The combined score stays on the model's cosine
             scale, so the gap rule still applies to it.
    cross    the core's dense top RERANK_DEPTH, reordered by a sentence-transformers
             ``CrossEncoder`` (any path or id) on (question, the note's best chunk as the core
             found it) pairs. Its logits have no fixed scale: the order comes from the
             cross-encoder, the gap rule keeps the dense list's score shape.

Fusion of the dense list and BM25 is the core's (``recall.ranking.fusion``, measured through
``recall.api`` with BM25's weight as a setting): the harness keeps no copy of it.

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

from recall.privacy.paths import make_missing_dirs
from recall_eval.comparison.components import NEG, Corpus, EmbeddingCache, note_max, top_depth
from recall_eval.scoring.metrics import reciprocal_rank

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


def best_chunks(corpus: Corpus, notes: np.ndarray, chunk_row: np.ndarray) -> list[str]:
    """The text of each listed note's best chunk as the core reported it (``Hit.chunk``; the
    note's first chunk where the core did not say, or a question chunk matched)."""
    out = []
    for j in notes:
        rows = np.flatnonzero(corpus.chunk_note == j)
        k = int(chunk_row[j])
        out.append(corpus.chunks[int(rows[k if 0 <= k < rows.size else 0])])
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

    def rerank_one(self, question: str, order_row: np.ndarray, chunk_row: np.ndarray, corpus: Corpus,
                   depth: int = RERANK_DEPTH) -> np.ndarray:
        """Cross-encoder scores on the core's dense top ``depth`` notes; -inf elsewhere."""
        top = top_depth(order_row, depth)
        out = np.full(order_row.shape, NEG)
        out[top] = self.scores(question, best_chunks(corpus, top, chunk_row))
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
    make_missing_dirs(out)
    BertForSequenceClassification(cfg).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out
