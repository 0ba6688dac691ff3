"""The pipelines ``recall-eval compare`` measures, built from the components of
``recall_eval.comparison.components`` and the second stages of ``recall_eval.comparison.rerank``
(fusion, max-sim, cross-encoder).

``Parts`` computes each component's matrix on first use; ``make_specs`` lists every pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recall.config.load import packaged_settings
from recall_eval.comparison.components import (
    K_NOTES,
    Bench,
    BM25Index,
    DenseIndex,
    EmbeddingCache,
    grep_scores,
)
from recall_eval.comparison.rerank import (
    CrossReranker,
    MaxSim,
    combine,
    fuse,
    norm_for,
    optimize,
    sentences,
    tune_alpha,
)

# The fusion weights proposed for recall's core (dense, BM25): between the per-fold optima
# on sample (0.6/0.4) and rules-120 (0.5/0.5); measured as a fixed, untuned pipeline.
_W = packaged_settings().search.lexical_weight  # [search] lexical_weight: BM25's share
SHIPPED = {"weights": [1 - _W, _W]}
SHIPPED_NAME = "0.6/0.4"


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
            from recall.embedding.models import get_embedder

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
            kind, m = key.split(":", 1)
            self.maxsim[key] = MaxSim.build(self.bench.corpus, self.embedder(m), self.cache, kind == "sentence-ctx")
            self.sizes[key] = len(sentences(self.bench.corpus, kind == "sentence-ctx")[0])
        return self.maxsim[key]

    def cross(self, path: str) -> CrossReranker:
        if path not in self.crosses:
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
    # Long because: the catalogue of every pipeline compared, in table order; read top to bottom, it is one
    # list, and the small closures build the rows.
    """Every pipeline compared, in table order. Each ``run(train rows)`` returns (ranking,
    gate, parameters tuned on those rows)."""
    from recall.embedding.models import model_id_of

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
        specs += [Spec(f"{m} +exp+bm25 {SHIPPED_NAME}", "note questions, then fused with BM25 at the core default",
                       (m,), (f"embed:{m}", f"exp:{m}", "bm25", "fuse:wsum"),
                       (f"chunk:{m}", f"questions:{m}", "bm25"), fused([f"exp:{m}", "bm25"], "wsum", SHIPPED))
                  for m in models]
        for m in models[1:]:  # two models' dense scores (note questions in both), fused with BM25
            specs.append(Spec(f"{d}+{m} +exp+bm25 wsum", f"fusion of dense {d} and {m} (note questions in both) "
                              "and BM25", (d, m), (f"embed:{d}", f"exp:{d}", f"embed:{m}", f"exp:{m}", "bm25",
                                                   "fuse:wsum"),
                              (f"chunk:{d}", f"questions:{d}", f"chunk:{m}", f"questions:{m}", "bm25"),
                              fused([f"exp:{d}", f"exp:{m}", "bm25"], "wsum")))
    for path in crosses:
        name = Path(path).name or path
        specs.append(Spec(f"{d} ce:{name}", f"dense {d}, top {K_NOTES} reordered by cross-encoder {path}",
                          (d, f"cross:{path}"), (*dense_ops(d), f"cross:{path}"), (f"chunk:{d}",),
                          lambda tr, k=f"cross:{path}": (P[k], P[f"dense:{d}"], {})))
    return specs
