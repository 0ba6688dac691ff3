"""First stages for ``recall-eval compare``: the collection as every pipeline sees it, and
the components that score it.

A component scores every question against every note of a collection: a matrix
``(questions x notes)``, ``-inf`` = not retrieved, so metrics and tuning are array
operations and one matrix feeds every pipeline built from it:

    core       recall itself, only through ``recall.api`` (``CoreIndex``: the collection indexed
               by ``Recall.index`` in a home of its own per model, each question ranked by
               ``Recall.rank`` through ``recall_eval.scoring.retrievers.CoreRetriever``): an
               *order* (the core's, best first) and the *gate* scores the selector reads. Its
               configurations (BM25's weight in the fusion, the notes' questions on or off) are
               the core's settings, never a copy of its ranking or fusion
    bm25       the bm25s baseline (``recall_eval.scoring.baselines.BM25Baseline``)
    grep       ``recall_eval.scoring.baselines.GrepBaseline`` (content words found in the note)

Embeddings the rerankers need (sentences, query vectors) go through ``EmbeddingCache`` (SQLite):
a re-run embeds only texts it has not seen for that model and role, and keeps the seconds each
kind of text took to embed, so a reranker's index build time can be reported from cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from recall.config.load import packaged_settings
from recall.config.settings import ChunkConfig, Settings
from recall.indexing.texts import note_chunks
from recall.notes.files import Note
from recall.privacy.masking import mask_secrets
from recall.privacy.paths import make_missing_dirs
from recall_eval.datasets.collections import DatasetError, Question
from recall_eval.scoring.baselines import BM25Baseline, GrepBaseline
from recall_eval.scoring.retrievers import CoreRetriever

EMBED_BATCH = 32
NEG = -np.inf
K_NOTES = 20  # notes a ranking keeps: what recall's search returns


# --- embedding cache -------------------------------------------------------------------


class EmbeddingCache:
    """Vectors keyed by (model id, role, sha256 of the text); timings per (model, kind)."""

    def __init__(self, path: Path) -> None:
        make_missing_dirs(path.parent)
        self.path = path
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
            mine = [text for text, _hash in note_chunks(note, cfg)]  # the core's chunks of this note
            chunks += mine
            owner += [i] * len(mine)
            name, desc, body = (mask_secrets(x) for x in (note.name, note.description, note.body))
            header = f"{name}\n{desc}\n\n"
            end = len(mine[0])
            for c in mine[1:]:  # replay the chunker's stride to find where the last chunk ends
                end = max(end - cfg.overlap, len(header)) + len(c) - len(name) - 1
            covered.append((header + body)[:end])
        return cls(list(notes), chunks, np.asarray(owner, dtype=np.int64), covered, dict(note_questions or {}))


def load_note_questions(path: Path, note_ids: Sequence[str]) -> dict[str, list[str]]:
    """The core's questions file reader (``recall.notes.questions.read_questions_file``, so eval measures the
    questions the core would index), strict: any bad line or unknown note is an error (a
    mismatched file would silently measure nothing)."""
    from recall.notes.questions import read_questions_file

    out, problems = read_questions_file(path, known=list(note_ids))
    if problems:  # refused, not ignored as the core would: the core's "its questions are ignored" is dropped
        said = "; ".join(p.message.removesuffix("; its questions are ignored") for p in problems[:3])
        raise DatasetError(f"{problems[0].path}: {said}{' ...' if len(problems) > 3 else ''}: a questions file "
                           "that does not fit the notes is refused; fix it, or give --no-note-questions")
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
class Ranked:
    """A component's answers as matrices (questions x notes): ``order`` (the rank order, best
    first, as decreasing values), ``gate`` (the score the selector reads at that note), and
    ``chunk`` (the best chunk's place among the note's chunks, -1 where unknown)."""

    order: np.ndarray
    gate: np.ndarray
    chunk: np.ndarray


class QueryMemo:
    """An embedder (``inner``) that remembers its query vectors while ``on``: a grid asks the core
    the same questions at every BM25 weight, and a question's vector does not depend on the
    weight. Off (indexing, timing a question), every query is embedded live."""

    def __init__(self, inner) -> None:
        self.inner, self.on, self.memo = inner, False, {}

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not self.on:
            return self.inner.embed_queries(texts)
        key = tuple(texts)
        if key not in self.memo:
            self.memo[key] = self.inner.embed_queries(texts)
        return self.memo[key]


class CoreIndex:
    """The collection indexed by recall (``Recall.index``) in ``home``, with one model, its
    notes' questions on or off: every number read from it comes from ``recall.api``."""

    def __init__(self, home: Path, notes_dir: Path, config: Settings, embedder, note_questions: Path | None,
                 questions: bool) -> None:
        from recall.api import Recall
        from recall_eval.scoring.score import source_spec

        self.app = Recall(home=home, config=config, embedder=embedder)
        t0 = time.perf_counter()
        self.app.index([source_spec(notes_dir, note_questions, use_questions=questions)])
        self.build_s = time.perf_counter() - t0
        self.config = config

    def with_weight(self, lexical_weight: float | None) -> CoreIndex:
        """BM25's share in the core's fusion, for every note (``[search] lexical_weight`` and
        ``lexical_weight_with_questions``); None: as configured."""
        search = self.config.search
        if lexical_weight is not None:
            search = search.with_lexical_weight(lexical_weight)
        if self.app.config.search != search:
            self.app.replace_settings(replace(self.config, search=search))
        return self

    def ranked(self, texts: Sequence[str], ids: Sequence[str], k_notes: int = K_NOTES) -> Ranked:
        core = CoreRetriever(self.app, decide=False, k_notes=k_notes)
        memo = self.app.embedder if isinstance(self.app.embedder, QueryMemo) else None
        if memo is not None:
            memo.on = True
        try:
            core.search({str(i): t for i, t in enumerate(texts)})
        finally:
            if memo is not None:
                memo.on = False
        col = {nid: j for j, nid in enumerate(ids)}
        shape = (len(texts), len(ids))
        order, gate, chunk = np.full(shape, NEG), np.full(shape, NEG), np.full(shape, -1, dtype=np.int64)
        for qi in range(len(texts)):
            hits = core.answer(str(qi)).hits
            for r, h in enumerate(hits):
                j = col[h.note["id"]]
                order[qi, j], gate[qi, j] = len(hits) - r, h.score
                chunk[qi, j] = -1 if h.chunk is None else h.chunk
        return Ranked(order, gate, chunk)

    def rank_one(self, text: str, k_notes: int = K_NOTES):
        return self.app.rank(text, k_notes=k_notes)

    def close(self) -> None:
        self.app.store.close()


def bm25_scores(base: BM25Baseline, n_notes: int, texts: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """The bm25s baseline's scores (questions x notes); -inf where no token matched."""
    col = {nid: j for j, nid in enumerate(ids)}
    out = np.full((len(texts), n_notes), NEG)
    for qi, text in enumerate(texts):
        for h in base.rank(text, k=n_notes):
            out[qi, col[h.note["id"]]] = h.score
    return out


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
    notes_dir: Path  # what the core indexes
    questions_file: Path | None = None  # the notes' questions file (None: the folder's own, if any)
