"""Threshold search for the gap rule over cached rankings.

Scoring is the slow part (embedding), deciding is cheap, so each question is ranked
ONCE per model (``rank_questions``: recall itself, temp home, ``Scope(everything=True)``,
as ``recall-eval score`` does) and every threshold combination is then evaluated on
the cached rankings.

Exactness: the selector's outcome for a question depends on the thresholds only
through two comparisons and one branch, so ``Outcomes`` asks the real
``recall.ranking.selector.decide`` once per question for each branch it could take ("short",
and "full" for each candidate full_margin, floors switched off), and the sweep then
combines those answers with numpy:

    inject = top >= top_floor and gap >= gap_floor      (decide: "<" means nothing)
    kind   = full if gap >= full_gap else short
    result = the branch's precomputed answer (which may be "nothing fits")

tests/eval/tuning/test_eval_tune.py checks this agrees with ``decide`` on random thresholds.

Grid: candidate thresholds are midpoints between consecutive quantiles of the tuning
questions' own tops and gaps (plus "no floor" / "never full"), so the same code works
for any model's score scale, and a chosen threshold never sits exactly on a training
question's score. Ties in the objective (common: many grid points classify the
training questions identically) go to the point whose grid neighbourhood scores best,
i.e. the middle of a plateau, which moves least on unseen questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from recall.config.settings import Rule, Settings
from recall.ranking.selector import Hit, decide, evidence
from recall_eval.datasets.collections import Question
from recall_eval.scoring import metrics as M

KEYS = ("gap_floor", "top_floor", "full_gap", "full_margin")
METRICS = ("injected_hit_rate", "silence_rate", "short_rate", "full_rate")
N_FLOOR = 16  # candidates per floor; 17 x 17 x 13 x ~6 combos: a few million cells, well under a second
N_FULL_GAP = 12
N_MARGIN = 4
ROUND = 4  # thresholds are written with 4 decimals; the grid is rounded the same, so what is tuned is shipped


@dataclass
class Ranked:
    """One question and the notes recall ranked for it (best first)."""

    question: Question
    hits: list[Hit]

    @property
    def scores(self) -> list[float]:
        return [h.score for h in self.hits if not h.is_conversation]


def gap_settings(config: Settings, model_id: str) -> Rule:
    """The config's settings for ``model_id`` as the gap rule (never the learned selector)."""
    return config.rule(model_id, kind="gap")


def rank_questions(notes_dir: Path, questions: Sequence[Question], config: Settings, home: Path | None = None,
                   embedder=None, log: Callable[[str], None] = lambda _m: None,
                   note_questions: Path | None = None, use_questions: bool = True) -> tuple[str, list[Ranked], Rule]:
    """Index ``notes_dir`` (with its questions: ``note_questions`` or the folder's questions file) with
    the config's model and rank every question once. Also the gap rule in force once indexed:
    the collection's own calibration, as `recall-eval score` applies it (tune compared with the
    packaged table, and wrote one that turned a better calibrated rule off: an outside tester's AH02)."""
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall_eval.datasets.collections import check_expected, read_notes
    from recall_eval.scoring.retrievers import CoreRetriever
    from recall_eval.scoring.score import eval_home, source_spec

    check_expected(questions, [n.id for n in read_notes(notes_dir)], str(notes_dir))
    with eval_home(notes_dir, home) as where:
        app = Recall(home=where, config=config, embedder=embedder or get_embedder(config.model, gemini=config.gemini))
        log(f"indexing {notes_dir} with {app.embedder.model_id}")
        app.index([source_spec(notes_dir, note_questions, use_questions)])
        # rank(), not query(): query() would apply the configured selector, which may be a
        # learned one that does not exist yet; the grid applies its own rules to these lists.
        core = CoreRetriever(app, decide=False)
        core.search({str(i): q.text for i, q in enumerate(questions)})
        out = [Ranked(q, core.answer(str(i)).hits) for i, q in enumerate(questions)]
        model_id = app.embedder.model_id
        in_force = app.config.rule(model_id, kind="gap")
        app.store.close()
    return model_id, out, in_force


# --- exact, vectorised outcomes ------------------------------------------------------


def _answer(q: Question, hits: list[Hit], s: Rule) -> tuple[bool, bool, float, float, float]:
    """(something injected, expected note among it, top, gap, hit floor) of one forced branch.

    The hit floor is the highest ``top_floor`` under which the hit stays: a headline after
    the first is kept only if its own evidence reaches ``top_floor`` (the selector's
    per-headline test), so an expected note found only there needs that much; the first
    headline needs nothing more (inf), and no hit needs -inf."""
    d = decide(q.text, hits, s)
    negative = getattr(hits, "negative", None)
    floor = -math.inf
    for i, h in enumerate(d.chosen):
        if h.note.get("id") in set(q.expected):
            floor = max(floor, math.inf if i == 0 else evidence(h.score, negative, s.thresholds.neg_weight))
    top = math.nan if d.top is None else d.top
    gap = math.nan if d.gap is None else d.gap
    return d.kind != "nothing", floor > -math.inf, top, gap, floor


@dataclass
class Outcomes:
    """Per-question answers of every branch the selector can take, for a margin grid."""

    ranked: list[Ranked]
    base: Rule
    margins: list[float]
    top: np.ndarray = field(init=False)
    gap: np.ndarray = field(init=False)
    short_ok: np.ndarray = field(init=False)
    short_hit: np.ndarray = field(init=False)
    short_floor: np.ndarray = field(init=False)  # the hit floor (``_answer``) per question
    full_ok: np.ndarray = field(init=False)  # (margins, questions)
    full_hit: np.ndarray = field(init=False)
    full_floor: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        inf = math.inf
        short = self.base.replace(gap_floor=-inf, top_floor=-inf, full_gap=inf, learned=None)
        rows = [_answer(r.question, r.hits, short) for r in self.ranked]
        self.short_ok = np.array([r[0] for r in rows], bool)
        self.short_hit = np.array([r[1] for r in rows], bool)
        self.top = np.array([r[2] for r in rows], float)
        self.gap = np.array([r[3] for r in rows], float)
        self.short_floor = np.array([r[4] for r in rows], float)
        full_ok, full_hit, full_floor = [], [], []
        for m in self.margins:
            full = self.base.replace(gap_floor=-inf, top_floor=-inf, full_gap=-inf, full_margin=m, learned=None)
            ans = [_answer(r.question, r.hits, full) for r in self.ranked]
            full_ok.append([a[0] for a in ans])
            full_hit.append([a[1] for a in ans])
            full_floor.append([a[4] for a in ans])
        self.full_ok = np.array(full_ok, bool).reshape(len(self.margins), len(self.ranked))
        self.full_hit = np.array(full_hit, bool).reshape(len(self.margins), len(self.ranked))
        self.full_floor = np.array(full_floor, float).reshape(len(self.margins), len(self.ranked))

    @property
    def kinds(self) -> np.ndarray:
        return np.array([r.question.kind for r in self.ranked])

    def combine(self, inject: np.ndarray, full: np.ndarray, margin_ix: np.ndarray,
                top_floor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(kind code 0 nothing / 1 short / 2 full, injected hit) for masks of shape (C, n);
        ``top_floor`` (C,): the per-headline test of the gap rule (None: a learned selector,
        whose later headlines pass on the margin alone)."""
        f_ok, f_hit = self.full_ok[margin_ix], self.full_hit[margin_ix]  # (C, n)
        s_hit = self.short_hit[None]
        if top_floor is not None:
            floor = np.asarray(top_floor, float)[:, None]
            f_hit = f_hit & (self.full_floor[margin_ix] >= floor)
            s_hit = s_hit & (self.short_floor[None] >= floor)
        is_full = inject & full & f_ok
        is_short = inject & ~full & self.short_ok
        kind = is_short.astype(np.int8) + 2 * is_full.astype(np.int8)
        hit = (is_full & f_hit) | (is_short & s_hit)
        return kind, hit

    def gap_rule(self, t: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Outcomes for thresholds given as equal-length arrays (one entry per combination)."""
        col = {k: np.asarray(t[k], float)[:, None] for k in ("gap_floor", "top_floor", "full_gap")}
        with np.errstate(invalid="ignore"):  # nan top/gap (message not searched): compares False
            inject = (self.top[None] >= col["top_floor"]) & (self.gap[None] >= col["gap_floor"])
            full = self.gap[None] >= col["full_gap"]
        return self.combine(inject, full, self.margin_index(t["full_margin"]), t["top_floor"])

    def margin_index(self, values) -> np.ndarray:
        vals = np.atleast_1d(np.asarray(values, float))
        lookup = {m: i for i, m in enumerate(self.margins)}
        missing = [v for v in vals if float(v) not in lookup]
        if missing:
            raise ValueError(f"full_margin {missing[0]} is not in this Outcomes' margin grid")
        return np.array([lookup[float(v)] for v in vals], int)


def rates(kind: np.ndarray, hit: np.ndarray, kinds: np.ndarray) -> dict[str, np.ndarray]:
    """The tunable metrics per combination (rows of ``kind``/``hit``)."""
    para, unrel = kinds == "paraphrase", kinds == "unrelated"
    n = max(1, kind.shape[1])
    return {
        "injected_hit_rate": hit[:, para].sum(1) / max(1, int(para.sum())),
        "silence_rate": (kind[:, unrel] == 0).sum(1) / max(1, int(unrel.sum())),
        "short_rate": (kind == 1).sum(1) / n,
        "full_rate": (kind == 2).sum(1) / n,
    }


# --- objective -----------------------------------------------------------------------


@dataclass
class Objective:
    """What tuning maximises. ``constrained``: ``target`` subject to every ``minimums``
    (infeasible points rank below all feasible ones, by their worst shortfall, so with no
    feasible point the search still returns the least-bad one); ``weighted``: sum of
    ``weights[m] * m``."""

    kind: str = "constrained"
    target: str = "injected_hit_rate"
    minimums: dict[str, float] = field(default_factory=lambda: {"silence_rate": 0.85})
    weights: dict[str, float] = field(default_factory=lambda: {"injected_hit_rate": 1.0, "silence_rate": 1.0})

    def __post_init__(self) -> None:
        names = [self.target, *self.minimums, *self.weights]
        bad = [n for n in names if n not in METRICS]
        if bad:
            raise ValueError(f"unknown metric {bad[0]!r}; tunable metrics: {', '.join(METRICS)}")
        if self.kind not in ("constrained", "weighted"):
            raise ValueError(f"objective must be 'constrained' or 'weighted', not {self.kind!r}")
        # Every tunable metric is a rate: a minimum outside [0, 1] is met by anything or nothing,
        # and a negative or NaN weight turns the search upside down (floors of -3, speaking on all).
        for m, lo in self.minimums.items():
            if not 0.0 <= lo <= 1.0:
                raise ValueError(f"--min {m}={lo:g}: a rate's minimum lies between 0 and 1")
        for m, w in self.weights.items():
            if not (math.isfinite(w) and w >= 0):
                raise ValueError(f"--weights {m}={w:g}: a weight is a number of 0 or more")
        if self.kind == "weighted" and not any(w > 0 for w in self.weights.values()):
            raise ValueError("--weights: at least one weight must be above 0")

    def misses(self, rates: dict) -> list[str]:
        """The minimums ``rates`` (metric -> value, or -> {"value": v}) fall short of, as
        ``metric value < minimum`` ([] for the weighted objective)."""
        if self.kind == "weighted":
            return []
        out = []
        for m, lo in self.minimums.items():
            v = rates.get(m)
            v = v.get("value") if isinstance(v, dict) else v
            if v is not None and v < lo - 1e-12:
                out.append(f"{m} {v:.3f} < {lo:g}")
        return out

    def score(self, r: dict[str, np.ndarray]) -> np.ndarray:
        if self.kind == "weighted":
            return sum(w * np.asarray(r[m], float) for m, w in self.weights.items())
        value = np.asarray(r[self.target], float)
        shortfall = np.zeros_like(value)
        for m, lo in self.minimums.items():
            shortfall = np.maximum(shortfall, lo - np.asarray(r[m], float))
        return np.where(shortfall <= 1e-12, value, -1.0 - shortfall)

    def describe(self) -> str:
        if self.kind == "weighted":
            return "maximise " + " + ".join(f"{w:g}*{m}" for m, w in self.weights.items())
        cons = " and ".join(f"{m} >= {v:g}" for m, v in self.minimums.items())
        return f"maximise {self.target}" + (f" subject to {cons}" if cons else "")


# --- grid search ---------------------------------------------------------------------


def midpoints(values: np.ndarray, n: int) -> list[float]:
    """Midpoints between consecutive distinct quantiles (n+1 levels) of ``values``."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return []
    qs = np.unique(np.quantile(v, np.linspace(0, 1, n + 1)))
    return sorted({round(float(a + b) / 2, ROUND) for a, b in zip(qs[:-1], qs[1:], strict=True)})


def margin_grid(ranked: Sequence[Ranked], base: Rule) -> list[float]:
    """full_margin candidates: 0, the configured one, and midpoints of the observed
    distances from the top to ranks 2 and 3 (what decides who joins a full list)."""
    d = [s[0] - s[k] for r in ranked for s in [r.scores] for k in (1, 2) if len(s) > k]
    return sorted({0.0, round(base.thresholds.full_margin, ROUND), *midpoints(np.array(d, float), N_MARGIN)})


def grid_axes(out: Outcomes) -> dict[str, list[float]]:
    return {
        "gap_floor": [-math.inf, *midpoints(out.gap, N_FLOOR)],
        "top_floor": [-math.inf, *midpoints(out.top, N_FLOOR)],
        "full_gap": [*midpoints(out.gap, N_FULL_GAP), math.inf],
        "full_margin": list(out.margins),
    }


def _neighbourhood_mean(a: np.ndarray) -> np.ndarray:
    """Mean of each cell and its neighbours (+-1 along every axis, edges repeated)."""
    padded = np.pad(a, 1, mode="edge")
    total = np.zeros_like(a)
    offsets = np.stack(np.meshgrid(*[[0, 1, 2]] * a.ndim, indexing="ij"), -1).reshape(-1, a.ndim)
    for off in offsets:
        total += padded[tuple(slice(o, o + n) for o, n in zip(off, a.shape, strict=True))]
    return total / len(offsets)


def search(out: Outcomes, objective: Objective) -> tuple[dict[str, float], dict[str, float]]:
    """Best thresholds on ``out``'s questions, and their training metrics."""
    axes = grid_axes(out)
    mesh = np.meshgrid(*(np.array(axes[k], float) for k in KEYS), indexing="ij")
    shape = mesh[0].shape
    flat = {k: m.ravel() for k, m in zip(KEYS, mesh, strict=True)}
    kind, hit = out.gap_rule(flat)
    r = rates(kind, hit, out.kinds)
    score = objective.score(r)
    smooth = _neighbourhood_mean(score.reshape(shape)).ravel()
    best = int(np.lexsort((smooth, score))[-1])  # last key is primary
    chosen = {k: float(flat[k][best]) for k in KEYS}
    return chosen, {m: float(r[m][best]) for m in METRICS}


def to_config(t: dict[str, float]) -> dict[str, float]:
    """Finite numbers for the TOML file: "no floor" becomes a floor below every score,
    "never full" one above every gap (scores are cosines in [-1, 1], so gaps lie in [-2, 2])."""
    sub = {"gap_floor": -3.0, "top_floor": -3.0, "full_gap": 3.0}
    return {k: (sub[k] if not math.isfinite(v) else round(v, ROUND)) for k, v in t.items()}


def per_question(kind: np.ndarray, hit: np.ndarray, kinds: np.ndarray, ranked: Sequence[Ranked]) -> dict:
    """Per-question 0/1 values of each reported metric, for bootstrap intervals."""
    para, unrel = kinds == "paraphrase", kinds == "unrelated"
    hit3 = np.array([M.hit_at([h.note.get("id") for h in r.hits], r.question.expected, 3) for r in ranked])
    return {"hit_rate@3": hit3[para], "injected_hit_rate": hit[para].astype(float),
            "silence_rate": (kind[unrel] == 0).astype(float), "short_rate": (kind == 1).astype(float),
            "full_rate": (kind == 2).astype(float)}


def correct(kind: np.ndarray, hit: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Per-question correctness: a paraphrase's note was injected; an unrelated got nothing."""
    return np.where(kinds == "paraphrase", hit, kind == 0).astype(int)


def decide_all(ranked: Sequence[Ranked], s: Rule) -> tuple[np.ndarray, np.ndarray]:
    """(kind code, injected hit) of the real selector, for the numbers that get reported."""
    codes = {"nothing": 0, "short": 1, "full": 2}
    kind, hit = [], []
    for r in ranked:
        d = decide(r.question.text, r.hits, s)
        kind.append(codes[d.kind])
        hit.append(bool(set(r.question.expected) & {h.note.get("id") for h in d.chosen}))
    return np.array(kind, np.int8), np.array(hit, bool)
