"""Retrieval pipelines for ``recall-eval compare``: first stages, and the catalogue.

A component scores every question against every note of a collection: a matrix
``(questions x notes)``, ``-inf`` = not retrieved, so metrics, fusion and tuning are array
operations and one matrix feeds every pipeline built from it:

    dense      best-chunk cosine, chunks exactly as recall indexes them (masked, recall's
               chunker): the hook's own ranking (a test checks it against recall's search)
    exp        dense plus note-side note questions: generated questions a note answers, as
               extra chunks of their note (the note still scores by its best chunk)
    bm25       Okapi BM25 (bm25s, Lucene variant) over ``recall_eval.text.bm25_tokens`` (words,
               CJK bigrams), as the BM25 baseline, one document per note from its stored
               chunks; unmatched notes are not retrieved
    grep       ``recall_eval.scoring.baselines.GrepBaseline`` (content words found in the note)

``Parts`` computes each matrix on first use; ``make_specs`` lists every pipeline, built
from components and the second stages of ``recall_eval.comparison.rerank`` (fusion, max-sim, cross-encoder).
Embeddings go through ``EmbeddingCache`` (SQLite): a re-run embeds only texts it has not
seen for that model and role, and keeps the seconds each kind of text took to embed, so an
index build time can be reported from cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from recall.chunking import ChunkConfig, chunk_text
from recall.masking import mask_secrets
from recall.notes import Note
from recall_eval.datasets.collections import DatasetError
from recall_eval.scoring.baselines import GrepBaseline
from recall_eval.text import bm25_tokens

if TYPE_CHECKING:
    from recall_eval.comparison.compare import Bench
    from recall_eval.comparison.rerank import CrossReranker, MaxSim

EMBED_BATCH = 32
NEG = -np.inf
K_NOTES = 20  # notes a ranking keeps: what recall's search returns
# The fusion weights proposed for recall's core (dense, BM25): between the per-fold optima
# on sample (0.6/0.4) and rules-120 (0.5/0.5); measured as a fixed, untuned pipeline.
SHIPPED = {"weights": [0.6, 0.4]}
SHIPPED_NAME = "0.6/0.4"


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
        cfg = chunking or ChunkConfig()
        chunks, owner, covered = [], [], []
        for i, note in enumerate(notes):
            # exactly recall.indexer.note_chunks: masked parts, recall's chunker
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
    """The core's questions file reader (``recall.questions.read_questions_file``, so eval measures the
    questions the core would index), strict: any bad line or unknown note is an error (a
    mismatched file would silently measure nothing)."""
    from recall.questions import read_questions_file

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
    """One model's vectors for a corpus: chunks (+ note questions questions)."""

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


# --- components and pipelines ------------------------------------------------------------


class Parts:
    """Score matrices (questions x notes) by component key, each computed on first use,
    so a run restricted with --pipelines embeds only what its pipelines read.

        dense:M  exp:M  sym:M  sentence:M  sentence-ctx:M  bm25  grep  cross:PATH
    """

    def __init__(self, bench: Bench, models: Sequence[str], cache: EmbeddingCache,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.bench, self.models, self.cache, self.log = bench, list(models), cache, log
        self.texts = [q.text for q in bench.questions]
        self.M: dict[str, np.ndarray] = {}
        self.embedders: dict = {}
        self.dense: dict[str, DenseIndex] = {}
        self.maxsim: dict[str, MaxSim] = {}
        self.crosses: dict[str, CrossReranker] = {}
        self.sizes: dict[str, int] = {}  # texts embedded per build step
        self.bm25: BM25Index | None = None

    def embedder(self, m: str):
        if m not in self.embedders:
            from recall.embedders import get_embedder

            self.log(f"{self.bench.name}: loading {m}")
            self.embedders[m] = get_embedder(m)
        return self.embedders[m]

    def index(self, m: str) -> DenseIndex:
        if m not in self.dense:
            c = self.bench.corpus
            self.dense[m] = DenseIndex.build(c, self.embedder(m), self.cache, note_question=bool(c.note_questions))
            self.sizes[f"chunk:{m}"] = len(c.chunks)
            self.sizes[f"questions:{m}"] = len(c.question_units()[0])
        return self.dense[m]

    def qv(self, m: str, role: str = "query") -> np.ndarray:
        return self.cache.embed(self.embedder(m), self.texts, role, "query")

    def sentences(self, key: str) -> MaxSim:
        if key not in self.maxsim:
            from recall_eval.comparison.rerank import MaxSim, sentences

            kind, m = key.split(":", 1)
            self.maxsim[key] = MaxSim.build(self.bench.corpus, self.embedder(m), self.cache, kind == "sentence-ctx")
            self.sizes[key] = len(sentences(self.bench.corpus, kind == "sentence-ctx")[0])
        return self.maxsim[key]

    def cross(self, path: str) -> CrossReranker:
        if path not in self.crosses:
            from recall_eval.comparison.rerank import CrossReranker

            self.crosses[path] = CrossReranker(path)
        return self.crosses[path]

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.M:
            self.M[key] = self._compute(key)
        return self.M[key]

    def _compute(self, key: str) -> np.ndarray:
        c = self.bench.corpus
        kind, _, m = key.partition(":")
        self.log(f"{self.bench.name}: scoring {key}")
        if kind == "dense":
            return self.index(m).scores(self.qv(m), c)
        if kind == "exp":
            return self.index(m).scores(self.qv(m), c, note_question=True)
        if kind == "sym":  # e5 prompt variant: the question embedded with the passage prompt
            return self.index(m).scores(self.qv(m, "passage"), c)
        if kind in ("sentence", "sentence-ctx"):
            return self.sentences(key).sentence_scores(self.qv(m))
        if key == "bm25":
            self.bm25 = self.bm25 or BM25Index(c)
            return self.bm25.scores(self.texts)
        if key == "grep":
            return grep_scores(c, self.texts)
        if kind == "cross":  # reorders the default model's dense top
            d = self.models[0]
            ce, qv, dense = self.cross(m), self.qv(d), self["dense:" + d]
            return np.stack([ce.rerank_one(t, qv[i], dense[i], self.index(d).chunk_vecs, c)
                             for i, t in enumerate(self.texts)])
        raise KeyError(key)


@dataclass
class Spec:
    name: str
    label: str
    models: tuple[str, ...]  # what must be loaded (memory)
    ops: tuple[str, ...]  # timed steps per question (latency)
    build: tuple[str, ...]  # index parts (build time)
    run: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray | None, dict]]  # train rows -> rank, gate, params


def make_specs(bench: Bench, P: Parts, models: Sequence[str], crosses: Sequence[str] = ()) -> list[Spec]:
    """Every pipeline compared, in table order. Each ``run(train rows)`` returns (ranking,
    gate, parameters tuned on those rows)."""
    from recall.embedders import model_id_of
    from recall_eval.comparison.rerank import combine, fuse, norm_for, optimize, tune_alpha

    ids = bench.corpus.ids
    d = models[0]

    def train_para(tr: np.ndarray) -> tuple[np.ndarray, list[list[str]]]:
        rows = np.array([i for i in tr if bench.questions[i].kind == "paraphrase"], dtype=np.int64)
        return rows, [bench.questions[i].expected for i in rows]

    def single(key: str, gate: bool = True):
        return lambda tr: (P[key], P[key] if gate else None, {})

    def maxsim(m: str, ctx: bool = False):
        def run(tr):
            rows, exp = train_para(tr)
            fine = P[f"sentence{'-ctx' if ctx else ''}:{m}"]
            alpha = tune_alpha(P[f"dense:{m}"][rows], fine[rows], ids, exp)
            ranked = combine(P[f"dense:{m}"], fine, alpha)
            return ranked, ranked, {"alpha": alpha}
        return run

    def fused(parts: Sequence[str | Callable], method: str, fixed: dict | None = None):
        """Fusion of components (keys, or pipelines run per fold); the gate is the first's.
        Parameters tuned per fold, or ``fixed`` (then nothing here is tuned)."""
        norms = [norm_for(p if isinstance(p, str) else "", method) for p in parts]

        def run(tr):
            outs = [(P[p], P[p], {}) if isinstance(p, str) else p(tr) for p in parts]
            rows, exp = train_para(tr)
            params = fixed or optimize([o[0][rows] for o in outs], ids, exp, method, norms)
            inner = {k: v for o in outs for k, v in o[2].items()}
            return fuse([o[0] for o in outs], ids, method, params, norms), outs[0][1], {**inner, **params}
        return run

    def dense_ops(m: str) -> tuple[str, ...]:
        return (f"embed:{m}", f"dense:{m}")

    specs = [Spec(m, f"dense {m}: best chunk", (m,), dense_ops(m), (f"chunk:{m}",), single(f"dense:{m}"))
             for m in models]
    specs += [Spec("bm25", "BM25, CJK bigrams (top 3 when anything matched)", (), ("bm25",), ("bm25",),
                   single("bm25", gate=False)),
              Spec("grep", "text search: content words (top 3 when anything matched)", (), ("grep",), (),
                   single("grep", gate=False))]
    for m in models:
        methods = ("wsum", "rrf", "max", "mnz") if m == d else ("wsum",)
        specs += [Spec(f"{m}+bm25 {k}", f"fusion {k} of dense {m} and BM25", (m,),
                       (*dense_ops(m), "bm25", f"fuse:{k}"), (f"chunk:{m}", "bm25"),
                       fused([f"dense:{m}", "bm25"], k)) for k in methods]
        if m == d:
            specs.append(Spec(f"{m}+bm25 {SHIPPED_NAME}", f"fusion of dense {m} and BM25 with the proposed core "
                              f"default weights {SHIPPED['weights']} (not tuned on this collection)", (m,),
                              (*dense_ops(m), "bm25", "fuse:wsum"), (f"chunk:{m}", "bm25"),
                              fused([f"dense:{m}", "bm25"], "wsum", SHIPPED)))
    for m in models:
        specs.append(Spec(f"{m} maxsim", f"dense {m}, top {K_NOTES} rescored by best sentence", (m,),
                          (*dense_ops(m), f"maxsim:{m}"), (f"chunk:{m}", f"sentence:{m}"), maxsim(m)))
    specs.append(Spec(f"{d} maxsim-ctx", "max-sim over sentences prefixed with the note's name", (d,),
                      (*dense_ops(d), f"maxsim:{d}"), (f"chunk:{d}", f"sentence-ctx:{d}"), maxsim(d, True)))
    specs.append(Spec(f"{d} maxsim+bm25 wsum", f"max-sim {d}, then fused with BM25", (d,),
                      (*dense_ops(d), f"maxsim:{d}", "bm25", "fuse:wsum"), (f"chunk:{d}", f"sentence:{d}", "bm25"),
                      fused([maxsim(d), "bm25"], "wsum")))
    for m in models[1:]:
        for lex in ((), ("bm25",)):
            keys = [f"dense:{d}", f"dense:{m}", *lex]
            specs.append(Spec("+".join([d, m, *lex]) + " wsum", f"fusion of dense {d}, {m}{' and BM25' * bool(lex)}",
                              (d, m), (*dense_ops(d), *dense_ops(m), *lex, "fuse:wsum"),
                              (f"chunk:{d}", f"chunk:{m}", *lex), fused(keys, "wsum")))
    if "e5" in model_id_of(d).lower():
        specs.append(Spec(f"{d} sym", "query embedded with the passage prompt", (d,), (f"embed-sym:{d}", f"dense:{d}"),
                          (f"chunk:{d}",), single(f"sym:{d}")))
    if bench.corpus.note_questions:
        specs += [Spec(f"{m} +exp", f"dense {m}, generated questions as extra chunks", (m,),
                       (f"embed:{m}", f"exp:{m}"), (f"chunk:{m}", f"questions:{m}"), single(f"exp:{m}"))
                  for m in models]
        specs.append(Spec(f"{d} +exp+bm25 wsum", "note questions, then fused with BM25", (d,),
                          (f"embed:{d}", f"exp:{d}", "bm25", "fuse:wsum"), (f"chunk:{d}", f"questions:{d}", "bm25"),
                          fused([f"exp:{d}", "bm25"], "wsum")))
        specs.append(Spec(f"{d} +exp+bm25 {SHIPPED_NAME}", "note questions, then fused with BM25 at the core default",
                          (d,), (f"embed:{d}", f"exp:{d}", "bm25", "fuse:wsum"),
                          (f"chunk:{d}", f"questions:{d}", "bm25"), fused([f"exp:{d}", "bm25"], "wsum", SHIPPED)))
    for path in crosses:
        name = Path(path).name or path
        specs.append(Spec(f"{d} ce:{name}", f"dense {d}, top {K_NOTES} reordered by cross-encoder {path}",
                          (d, f"cross:{path}"), (*dense_ops(d), f"cross:{path}"), (f"chunk:{d}",),
                          lambda tr, k=f"cross:{path}": (P[k], P[f"dense:{d}"], {})))
    return specs
