"""The pipelines ``recall-eval compare`` measures: the core (through ``recall.api``) in its
configurations, the lexical baselines, and the rerankers of ``recall_eval.comparison.rerank``
(max-sim, cross-encoder) over the core's dense list.

``Parts`` computes each component on first use; ``make_specs`` lists every pipeline. BM25's
weight in the core's fusion is read from the core's settings when the pipelines are made
(``[search] lexical_weight``), and the rows that use it are labelled with its value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recall.config.settings import Settings
from recall_eval.comparison.components import (
    K_NOTES,
    NEG,
    Bench,
    CoreIndex,
    EmbeddingCache,
    QueryMemo,
    Ranked,
    bm25_scores,
    grep_scores,
    top_depth,
)
from recall_eval.comparison.rerank import CrossReranker, MaxSim, combine, mrr, sentences, tune_alpha
from recall_eval.scoring.baselines import BM25Baseline

# BM25's weights tried when the core's fusion is tuned on a fold (the 0.1 grid ranx's
# optimize_fusion searched for two lists).
WEIGHTS = tuple(round(w * 0.1, 1) for w in range(11))


def by_reciprocal_rank(orders: Sequence[np.ndarray], depth: int = K_NOTES, k: int = 60) -> np.ndarray:
    """Several rankings (questions x notes, decreasing values) fused by reciprocal rank: each of
    a list's ``depth`` best notes scores 1 / (k + its rank), summed over the lists; -inf where no
    list holds the note. (Not ``ranx.fuse``: it requires every question in every list, and a
    question one model retrieves nothing for is one it leaves out.)"""
    out = np.zeros(orders[0].shape)
    held = np.zeros(orders[0].shape, dtype=bool)
    for o in orders:
        for qi in range(o.shape[0]):
            top = top_depth(o[qi], depth)
            out[qi, top] += 1.0 / (k + np.arange(1, top.size + 1))
            held[qi, top] = True
    return np.where(held, out, NEG)


def weight_label(w: float) -> str:
    """Dense/BM25 shares, from BM25's weight: 0.4 -> "0.6/0.4"."""
    return f"{1 - w:g}/{w:g}"


# --- components and pipelines ------------------------------------------------------------


class Parts:
    """Components by key, each computed on first use, so a run restricted with --pipelines
    indexes and embeds only what its pipelines read.

        core:VARIANT:M@W   the core (``CoreIndex``), VARIANT text or questions, BM25 weight W
        sentence:M  sentence-ctx:M  bm25  grep  cross:PATH
    """

    def __init__(self, bench: Bench, models: Sequence[str], cache: EmbeddingCache,
                 log: Callable[[str], None] = lambda _m: None, home: Path | None = None,
                 configs: dict[str, Settings] | None = None) -> None:
        self.bench, self.models, self.cache, self.log = bench, list(models), cache, log
        self.home = home or cache.path.parent / "core"
        self.configs = dict(configs or {})
        self.texts = [q.text for q in bench.questions]
        self.M: dict[str, np.ndarray] = {}
        self.R: dict[str, Ranked] = {}
        self.embedders: dict = {}
        self.cores: dict[tuple[str, str], CoreIndex] = {}
        self.memos: dict[str, QueryMemo] = {}
        self.maxsim: dict[str, MaxSim] = {}
        self.crosses: dict[str, CrossReranker] = {}
        self.sizes: dict[str, int] = {}  # texts embedded per build step
        self.bm25: BM25Baseline | None = None
        self.bm25_build_s = 0.0

    def config(self, m: str) -> Settings:
        if m not in self.configs:
            from recall_eval.scoring.score import effective_config

            self.configs[m] = effective_config(m)
        return self.configs[m]

    def embedder(self, m: str):
        if m not in self.embedders:
            from recall.embedding.models import get_embedder

            self.log(f"{self.bench.name}: loading {m}")
            self.embedders[m] = get_embedder(m, gemini=self.config(m).gemini)
        return self.embedders[m]

    def core(self, m: str, variant: str = "text") -> CoreIndex:
        """The collection indexed by recall with model ``m``: its text only, or with its questions."""
        if (m, variant) not in self.cores:
            import hashlib

            b = self.bench
            key = hashlib.sha256(f"{b.notes_dir.resolve()}|{b.questions_file}".encode()).hexdigest()[:12]
            self.log(f"{b.name}: recall indexes the notes ({m}, {variant})")
            if m not in self.memos:  # one per model: both variants ask the same questions
                self.memos[m] = QueryMemo(self.embedder(m))
            self.cores[m, variant] = CoreIndex(self.home / key / f"{m}-{variant}", b.notes_dir, self.config(m),
                                               self.memos[m], b.questions_file, variant == "questions")
        return self.cores[m, variant]

    def ranked(self, m: str, variant: str = "text", weight: float | None = 0.0) -> Ranked:
        """The core's ranking; ``weight``: BM25's share for every note, None: as configured."""
        key = f"core:{variant}:{m}@{'configured' if weight is None else format(weight, 'g')}"
        if key not in self.R:
            self.log(f"{self.bench.name}: ranking with {key}")
            self.R[key] = self.core(m, variant).with_weight(weight).ranked(self.texts, self.bench.corpus.ids)
        return self.R[key]

    def qv(self, m: str) -> np.ndarray:
        return self.cache.embed(self.embedder(m), self.texts, "query", "query")

    def sentences(self, key: str) -> MaxSim:
        if key not in self.maxsim:
            kind, m = key.split(":", 1)
            self.maxsim[key] = MaxSim.build(self.bench.corpus, self.embedder(m), self.cache, kind == "sentence-ctx")
            self.sizes[key] = len(sentences(self.bench.corpus, kind == "sentence-ctx")[0])
        return self.maxsim[key]

    def cross(self, path: str) -> CrossReranker:
        if path not in self.crosses:
            self.crosses[path] = CrossReranker(path)
        return self.crosses[path]

    def lexical(self) -> BM25Baseline:
        if self.bm25 is None:
            import time

            t0 = time.perf_counter()
            self.bm25 = BM25Baseline(self.bench.corpus.notes)
            self.bm25_build_s = time.perf_counter() - t0
        return self.bm25

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.M:
            self.M[key] = self._compute(key)
        return self.M[key]

    def _compute(self, key: str) -> np.ndarray:
        c = self.bench.corpus
        kind, _, m = key.partition(":")
        self.log(f"{self.bench.name}: scoring {key}")
        if kind in ("sentence", "sentence-ctx"):
            return self.sentences(key).sentence_scores(self.qv(m))
        if key == "bm25":
            return bm25_scores(self.lexical(), len(c.notes), self.texts, c.ids)
        if key == "grep":
            return grep_scores(c, self.texts)
        if kind == "cross":  # reorders the default model's dense top (the core's)
            R = self.ranked(self.models[0])
            return np.stack([self.cross(m).rerank_one(t, R.order[i], R.chunk[i], c)
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
    # Long because: the catalogue of every pipeline compared, in table order; read top to bottom, it is one
    # list, and the small closures build the rows.
    """Every pipeline compared, in table order. Each ``run(train rows)`` returns (ranking,
    gate, parameters tuned on those rows)."""
    ids = bench.corpus.ids
    d = models[0]
    # [search] lexical_weight (notes without questions) and lexical_weight_with_questions, read
    # now, through the core's settings
    search = P.config(d).search
    w, wq = search.lexical_weight, search.lexical_weight_with_questions
    shipped, shipped_q = weight_label(w), weight_label(wq)

    def train_para(tr: np.ndarray) -> tuple[np.ndarray, list[list[str]]]:
        rows = np.array([i for i in tr if bench.questions[i].kind == "paraphrase"], dtype=np.int64)
        return rows, [bench.questions[i].expected for i in rows]

    def single(key: str, gate: bool = True):
        return lambda tr: (P[key], P[key] if gate else None, {})

    def core(m: str, variant: str, weight: float | None = 0.0):
        """The core as it ranks: its order, its gate scores (``weight`` None: as configured)."""
        def run(tr):
            R = P.ranked(m, variant, weight)
            return R.order, R.gate, {}
        return run

    def tuned(m: str, variant: str):
        """The core's fusion with BM25's weight tuned on the fold's training questions (best MRR;
        on ties the weight nearest the configured one)."""
        def run(tr):
            rows, exp = train_para(tr)
            now = P.config(m).search.lexical_weight
            best = max(WEIGHTS, key=lambda x: (round(mrr(P.ranked(m, variant, x).order[rows], ids, exp), 9),
                                               -abs(x - now)))
            R = P.ranked(m, variant, best)
            return R.order, R.gate, {"lexical_weight": best}
        return run

    def maxsim(m: str, ctx: bool = False):
        def run(tr):
            rows, exp = train_para(tr)
            dense, fine = P.ranked(m).gate, P[f"sentence{'-ctx' if ctx else ''}:{m}"]
            alpha = tune_alpha(dense[rows], fine[rows], ids, exp)
            ranked = combine(dense, fine, alpha)
            return ranked, ranked, {"alpha": alpha}
        return run

    def rank(m: str, variant: str = "text") -> tuple[str, ...]:
        return (f"rank:{variant}:{m}",)

    text, quest = ("core:text",), ("core:questions",)
    specs = [Spec(m, f"recall {m} without BM25: best chunk, the header's share as configured", (m,), rank(m),
                  tuple(f"{p}:{m}" for p in text), core(m, "text")) for m in models]
    specs += [Spec("bm25", "BM25 (bm25s), CJK bigrams (top 3 when anything matched)", (), ("bm25",), ("bm25",),
                   single("bm25", gate=False)),
              Spec("grep", "text search: content words (top 3 when anything matched)", (), ("grep",), (),
                   single("grep", gate=False))]
    for m in models:
        specs.append(Spec(f"{m}+bm25 wsum", f"recall {m}, its fusion with BM25, the weight tuned per fold", (m,),
                          rank(m), (f"core:text:{m}",), tuned(m, "text")))
        if m == d:
            specs.append(Spec(f"{m}+bm25 {shipped}", f"recall {m}, its fusion with BM25 at [search] lexical_weight "
                              f"{w:g} (dense/BM25 {shipped}, not tuned on this collection)", (m,), rank(m),
                              (f"core:text:{m}",), core(m, "text", None)))
    for m in models:
        specs.append(Spec(f"{m} maxsim", f"recall {m} without BM25, top {K_NOTES} rescored by best sentence", (m,),
                          (*rank(m), f"embed:{m}", f"maxsim:{m}"), (f"core:text:{m}", f"sentence:{m}"), maxsim(m)))
    specs.append(Spec(f"{d} maxsim-ctx", "max-sim over sentences prefixed with the note's name", (d,),
                      (*rank(d), f"embed:{d}", f"maxsim:{d}"), (f"core:text:{d}", f"sentence-ctx:{d}"),
                      maxsim(d, True)))
    if bench.corpus.note_questions:
        specs += [Spec(f"{m} +exp", f"recall {m} without BM25, the notes' questions as extra chunks", (m,),
                       rank(m, "questions"), tuple(f"{p}:{m}" for p in quest), core(m, "questions"))
                  for m in models]
        specs.append(Spec(f"{d} +exp+bm25 wsum", "recall with the notes' questions, its fusion with BM25, the weight "
                          "tuned per fold", (d,), rank(d, "questions"), (f"core:questions:{d}",),
                          tuned(d, "questions")))
        specs += [Spec(f"{m} +exp+bm25 {shipped_q}", f"recall {m} with the notes' questions and its fusion with BM25 "
                       f"at [search] lexical_weight_with_questions {wq:g}: the shipped pipeline", (m,),
                       rank(m, "questions"),
                       (f"core:questions:{m}",), core(m, "questions", None)) for m in models]
    if bench.corpus.note_questions and len(models) > 1:
        both = tuple(models[:2])
        specs.append(Spec(f"{'+'.join(both)} +exp+bm25 rrf", f"the shipped pipeline with {both[0]} and with "
                          f"{both[1]}, their orders fused by reciprocal rank (k 60); the gate reads "
                          f"{both[0]}'s scores", both, tuple(o for m in both for o in rank(m, "questions")),
                          tuple(f"core:questions:{m}" for m in both),
                          lambda tr: (by_reciprocal_rank([P.ranked(m, "questions", None).order for m in both]),
                                      P.ranked(both[0], "questions", None).gate, {})))
    for path in crosses:
        name = Path(path).name or path
        specs.append(Spec(f"{d} ce:{name}", f"recall {d} without BM25, top {K_NOTES} reordered by cross-encoder "
                          f"{path}", (d, f"cross:{path}"), (*rank(d), f"cross:{path}"), (f"core:text:{d}",),
                          lambda tr, k=f"cross:{path}": (P[k], P.ranked(d).gate, {})))
    return specs
