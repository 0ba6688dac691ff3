"""First stages for ``recall-eval compare``: the collection as every pipeline sees it, and
the components that score it.

A component scores every question against every note of a collection: a matrix
``(questions x notes)``, ``-inf`` = not retrieved, so metrics, fusion and tuning are array
operations and one matrix feeds every pipeline built from it:

    dense      best-chunk cosine, chunks exactly as recall indexes them (masked, recall's
               chunker): the hook's own ranking (a test checks it against recall's search)
    exp        dense plus note-side note questions: generated questions a note answers, as
               extra chunks of their note (the note still scores by its best chunk)
    bm25       Okapi BM25 (bm25s, Lucene variant) over the core's tokenizer
               (``recall.store.bm25.tokens``: words, CJK bigrams), as the BM25 baseline, one
               document per note from its stored chunks; unmatched notes are not retrieved
    grep       ``recall_eval.scoring.baselines.GrepBaseline`` (content words found in the note)

Embeddings go through ``EmbeddingCache`` (SQLite): a re-run embeds only texts it has not
seen for that model and role, and keeps the seconds each kind of text took to embed, so an
index build time can be reported from cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from recall.config.load import packaged_settings
from recall.config.settings import ChunkConfig
from recall.notes.chunking import chunk_text
from recall.notes.files import Note
from recall.privacy.masking import mask_secrets
from recall.store.bm25 import tokens as bm25_tokens
from recall_eval.datasets.collections import DatasetError, Question
from recall_eval.scoring.baselines import GrepBaseline

EMBED_BATCH = 32
NEG = -np.inf
K_NOTES = 20  # notes a ranking keeps: what recall's search returns


# --- embedding cache -------------------------------------------------------------------


class EmbeddingCache:
    """Vectors keyed by (model id, role, sha256 of the text); timings per (model, kind)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), isolation_level=None)
        self.db.execute("CREATE TABLE IF NOT EXISTS vec (model TEXT, role TEXT, hash TEXT, v BLOB,"
                        " PRIMARY KEY (model, role, hash))")
        self.db.execute("CREATE TABLE IF NOT EXISTS rate (model TEXT, kind TEXT, n INTEGER, seconds REAL,"
                        " PRIMARY KEY (model, kind))")

    def embed(self, embedder, texts: Sequence[str], role: str, kind: str) -> np.ndarray:
        """Unit rows for ``texts``; ``role`` is query or passage (e5 prefixes differ)."""
        model = embedder.model_id
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), 500):
            part = uniq[i : i + 500]
            q = ",".join("?" * len(part))
            found.update(self.db.execute(f"SELECT hash, v FROM vec WHERE model=? AND role=? AND hash IN ({q})",
                                         (model, role, *part)).fetchall())
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            items = list(todo.items())
            fn = embedder.embed_queries if role == "query" else embedder.embed_passages
            t0 = time.perf_counter()
            for i in range(0, len(items), EMBED_BATCH):
                batch = items[i : i + EMBED_BATCH]
                vecs = np.asarray(fn([t for _, t in batch]), dtype=np.float32)
                rows = [(model, role, k, v.tobytes()) for (k, _), v in zip(batch, vecs, strict=True)]
                self.db.execute("BEGIN")
                self.db.executemany("INSERT OR REPLACE INTO vec VALUES (?,?,?,?)", rows)
                self.db.execute("COMMIT")
                found.update((k, b) for _, _, k, b in rows)
            self._record(model, kind, len(items), time.perf_counter() - t0)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 1))

    def _record(self, model: str, kind: str, n: int, seconds: float) -> None:
        row = self.db.execute("SELECT n, seconds FROM rate WHERE model=? AND kind=?", (model, kind)).fetchone()
        n0, s0 = row or (0, 0.0)
        self.db.execute("INSERT OR REPLACE INTO rate VALUES (?,?,?,?)", (model, kind, n0 + n, s0 + seconds))

    def seconds_per_text(self, model: str, kind: str) -> float | None:
        """Mean seconds per text of ``kind`` when this cache embedded them (None if never)."""
        row = self.db.execute("SELECT n, seconds FROM rate WHERE model=? AND kind=?", (model, kind)).fetchone()
        return row[1] / row[0] if row and row[0] else None

    def close(self) -> None:
        self.db.close()


# --- the collection ----------------------------------------------------------------------


@dataclass
class Corpus:
    """A note collection as every pipeline sees it."""

    notes: list[Note]
    chunks: list[str]
    chunk_note: np.ndarray  # note index of each chunk (ascending)
    covered: list[str]  # per note, the masked text its chunks cover (name, description, body)
    note_questions: dict[str, list[str]] = field(default_factory=dict)  # note id -> questions

    @property
    def ids(self) -> list[str]:
        return [n.id for n in self.notes]

    @classmethod
    def build(cls, notes: Sequence[Note], chunking: ChunkConfig | None = None,
              note_questions: dict[str, list[str]] | None = None) -> Corpus:
        cfg = chunking or packaged_settings().chunking
        chunks, owner, covered = [], [], []
        for i, note in enumerate(notes):
            # exactly recall.indexing.indexer.note_chunks: masked parts, recall's chunker
            name, desc, body = (mask_secrets(x) for x in (note.name, note.description, note.body))
            mine = chunk_text(name, desc, body, cfg)
            chunks += mine
            owner += [i] * len(mine)
            header = f"{name}\n{desc}\n\n"
            end = len(mine[0])
            for c in mine[1:]:  # replay the chunker's stride to find where the last chunk ends
                end = max(end - cfg.overlap, len(header)) + len(c) - len(name) - 1
            covered.append((header + body)[:end])
        return cls(list(notes), chunks, np.asarray(owner, dtype=np.int64), covered, dict(note_questions or {}))

    def question_units(self) -> tuple[list[str], np.ndarray]:
        texts, owner = [], []
        for i, nid in enumerate(self.ids):
            for q in self.note_questions.get(nid, []):
                texts.append(q)
                owner.append(i)
        return texts, np.asarray(owner, dtype=np.int64)


def load_note_questions(path: Path, note_ids: Sequence[str]) -> dict[str, list[str]]:
    """The core's questions file reader (``recall.notes.questions.read_questions_file``, so eval measures the
    questions the core would index), strict: any bad line or unknown note is an error (a
    mismatched file would silently measure nothing)."""
    from recall.notes.questions import read_questions_file

    out, problems = read_questions_file(path, known=list(note_ids))
    if problems:
        raise DatasetError("; ".join(str(p) for p in problems[:3]) + (" ..." if len(problems) > 3 else ""))
    # The core indexes a note's restatements as chunks too (after its questions): so does eval.
    restated, _ = read_questions_file(path, known=list(note_ids), field="restatements")
    for stem, values in restated.items():
        out[stem] = [*out.get(stem, []), *values]
    return out


# --- scoring ---------------------------------------------------------------------------


def note_max(sim: np.ndarray, owner: np.ndarray, n_notes: int) -> np.ndarray:
    """Per note, the max over its units: sim (q x units), owner ascending -> (q x notes)."""
    out = np.full((sim.shape[0], n_notes), NEG, dtype=np.float64)
    if owner.size == 0:
        return out
    starts = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
    out[:, owner[starts]] = np.maximum.reduceat(sim, starts, axis=1)
    return out


@dataclass
class DenseIndex:
    """One model's vectors for a corpus: chunks (+ the notes' questions)."""

    model_id: str
    chunk_vecs: np.ndarray
    exp_vecs: np.ndarray | None
    exp_owner: np.ndarray | None

    @classmethod
    def build(cls, corpus: Corpus, embedder, cache: EmbeddingCache, note_question: bool = False) -> DenseIndex:
        vecs = cache.embed(embedder, corpus.chunks, "passage", "chunk")
        exp_v = exp_o = None
        if note_question and corpus.note_questions:
            texts, exp_o = corpus.question_units()
            exp_v = cache.embed(embedder, texts, "passage", "note questions")
        return cls(embedder.model_id, vecs, exp_v, exp_o)

    def scores(self, qv: np.ndarray, corpus: Corpus, note_question: bool = False) -> np.ndarray:
        out = note_max(qv @ self.chunk_vecs.T, corpus.chunk_note, len(corpus.notes))
        if note_question and self.exp_vecs is not None and self.exp_owner is not None:
            out = np.maximum(out, note_max(qv @ self.exp_vecs.T, self.exp_owner, len(corpus.notes)))
        return out


def note_docs(corpus: Corpus) -> list[str]:
    """One BM25 document per note: its stored chunks joined, the text a core can read back
    from its store (masked; the 100-character overlaps count twice, harmlessly)."""
    docs: list[list[str]] = [[] for _ in corpus.notes]
    for text, owner in zip(corpus.chunks, corpus.chunk_note, strict=True):
        docs[int(owner)].append(text)
    return ["\n".join(d) for d in docs]


class BM25Index:
    """BM25 over whole notes."""

    def __init__(self, corpus: Corpus) -> None:
        import bm25s

        t0 = time.perf_counter()
        self._bm25 = bm25s.BM25()
        self._bm25.index([bm25_tokens(d) for d in note_docs(corpus)], show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)
        self.n = len(corpus.notes)
        self.build_s = time.perf_counter() - t0

    def score_one(self, text: str) -> np.ndarray:
        """BM25 per note; -inf where no token matched (not retrieved, as the baseline)."""
        tokens = [t for t in bm25_tokens(text) if t in self._vocab]
        if not tokens:
            return np.full(self.n, NEG)
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        return np.where(scores > 0, scores, NEG)

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.score_one(t) for t in texts]) if texts else np.zeros((0, self.n))


def grep_scores(corpus: Corpus, texts: Sequence[str]) -> np.ndarray:
    base = GrepBaseline(corpus.notes)
    index = {nid: i for i, nid in enumerate(corpus.ids)}
    out = np.full((len(texts), len(corpus.notes)), NEG)
    for qi, text in enumerate(texts):
        for h in base.rank(text, k=len(corpus.notes)):
            out[qi, index[h.note["id"]]] = h.score
    return out


def top_depth(row: np.ndarray, depth: int = 50) -> np.ndarray:
    """Indices of the ``depth`` best finite scores, best first (stable on ties)."""
    finite = np.flatnonzero(np.isfinite(row))
    order = finite[np.argsort(-row[finite], kind="stable")]
    return order[:depth]


@dataclass
class Bench:
    """One collection and its questions, with the folds pipelines are tuned and tested on."""

    name: str
    corpus: Corpus
    questions: list[Question]
    folds: list[tuple[str, np.ndarray, np.ndarray]]  # (held-out name, train rows, test rows)
    split: str
