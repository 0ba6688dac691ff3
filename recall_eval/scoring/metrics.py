"""Metrics over scored questions, named as ranx names them, each with a bootstrap interval.

A ``Record`` is one question as one pipeline handled it. The metrics:

    hit_rate@1, hit_rate@3   share of paraphrases whose expected note is in the top 1 / 3
                             of the ranking (ranx's ``hit_rate@k``)
    mrr                      mean over paraphrases of 1 / rank of the first expected note
                             (0 when it is not in the ranking; ranx's ``mrr``)
    injected_hit_rate        share of paraphrases whose expected note is among the notes
                             actually injected (ranking right AND the selector spoke)
    silence_rate             share of unrelated messages that get nothing
    headline_precision       of the headlines handed over, the share that are the note the
                             message needed (pooled over headlines; an injection of three with
                             one right counts 1/3; every headline handed over on an unrelated
                             message is wrong: it counted related messages' only, which hid
                             the worst errors and reordered pipelines, an outside tester's AH03)
    headlines_per_message    mean number of headlines handed over per message, related and
                             unrelated together (0 for a silent one)
    short_rate, full_rate    share of all messages that get a short / full list
    bytes_p95                95th percentile of the hook line's bytes, over injections
    balanced_accuracy        (injected_hit_rate + silence_rate) / 2: the primary metric,
                             because it cannot be gamed by always or never speaking

Intervals: percentile bootstrap (``recall_eval.scoring.stats``: scipy), 1,000 resamples,
seeded, resampling questions (for balanced_accuracy, paraphrases and unrelated are
resampled separately, as drawn; for headline_precision, messages are resampled with their
headlines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from recall_eval.results import Breakdowns, Metric, Metrics
from recall_eval.scoring.stats import (
    SEED,
    alike,
    bootstrap_ci,
    count_ci,
    hull,
    ratio_ci,
    two_sample_ci,
    wilson_mean_of_two,
)
from recall_eval.scoring.stats import mean as _mean

PRIMARY_METRIC = "balanced_accuracy"
BYTES_PERCENTILE = 95
HEADLINE = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "headline_precision",
            "headlines_per_message", "balanced_accuracy", "short_rate", "full_rate", "bytes_p95")
RANKING = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "headline_precision")


@dataclass
class Record:
    id: str
    set_id: str
    kind: str  # paraphrase | unrelated
    lang: str  # the question's language
    text: str
    expected: list[str]
    note_lang: str | None  # language of the expected note (paraphrases only)
    ranked: list[str] = field(default_factory=list)  # note ids, best first
    scores: list[float] = field(default_factory=list)
    top: float | None = None
    gap: float | None = None
    decision: str = "nothing"  # nothing | short | full
    injected: list[str] = field(default_factory=list)
    bytes: int = 0
    style: str = ""  # the set's optional message style (task-start, near-miss, ...)
    negative: float | None = None  # score of the nearest known unrelated message

    def as_dict(self) -> dict:
        return asdict(self)


# --- per-question values (pure) ------------------------------------------------------


def hit_at(ranked: Sequence[str], expected: Sequence[str], k: int) -> float:
    """1.0 if any expected id is among the first ``k`` of ``ranked``."""
    return 1.0 if set(ranked[:k]) & set(expected) else 0.0


def reciprocal_rank(ranked: Sequence[str], expected: Sequence[str]) -> float:
    wanted = set(expected)
    for rank, note_id in enumerate(ranked, 1):
        if note_id in wanted:
            return 1.0 / rank
    return 0.0


def injected_hit(injected: Sequence[str], expected: Sequence[str]) -> float:
    return 1.0 if set(injected) & set(expected) else 0.0


def right_headlines(injected: Sequence[str], expected: Sequence[str]) -> int:
    """How many of the headlines handed over are an expected note."""
    wanted = set(expected)
    return sum(1 for note_id in injected if note_id in wanted)


def headline_precision(records: Sequence[Record], seed: int = SEED) -> Metric:
    """Right headlines over headlines handed over, for the messages that got any (a headline on
    an unrelated message is never right); ``n`` counts those messages, which the interval
    resamples with their headlines."""
    spoke = [r for r in records if r.injected]
    if not spoke:
        return Metric.empty()
    num = [right_headlines(r.injected, r.expected) for r in spoke]
    den = [len(r.injected) for r in spoke]
    return Metric(sum(num) / sum(den), ratio_ci(num, den, seed), len(spoke))


# --- bootstrap -----------------------------------------------------------------------


def _p95(a: np.ndarray, axis: int | None = -1):
    return np.percentile(a, BYTES_PERCENTILE, axis=axis)


def _result(values: Sequence[float], stat: Callable = _mean, seed: int = SEED) -> Metric:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Metric.empty()
    return Metric(float(stat(arr)), bootstrap_ci(arr, stat, seed), int(arr.size))


def _balanced_stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return (a.mean(axis=axis) + b.mean(axis=axis)) / 2


def _balanced(hits: Sequence[float], silences: Sequence[float], seed: int = SEED) -> Metric:
    a, b = np.asarray(hits, float), np.asarray(silences, float)
    if a.size == 0 or b.size == 0:
        return Metric.empty(int(a.size + b.size))
    ci = two_sample_ci(a, b, _balanced_stat, seed)
    if alike(a) or alike(b):  # a part the resamples cannot vary: its uncertainty was left out
        ci = hull(ci, wilson_mean_of_two(a, b))
    return Metric(float((a.mean() + b.mean()) / 2), ci, int(a.size + b.size))


def _count(values: Sequence[float], seed: int = SEED) -> Metric:
    """A mean count per message (headlines per message, which can exceed 1): the bootstrap's
    interval, or where every count is alike the exact Poisson one; never a proportion's."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Metric.empty()
    ci = count_ci(arr) if alike(arr) else bootstrap_ci(arr, seed=seed, rate=False)
    return Metric(float(arr.mean()), ci, int(arr.size))


# --- summaries -----------------------------------------------------------------------


def _ranking_metrics(para: Sequence[Record], seed: int) -> Metrics:
    return {
        "hit_rate@1": _result([hit_at(r.ranked, r.expected, 1) for r in para], seed=seed),
        "hit_rate@3": _result([hit_at(r.ranked, r.expected, 3) for r in para], seed=seed),
        "mrr": _result([reciprocal_rank(r.ranked, r.expected) for r in para], seed=seed),
        "injected_hit_rate": _result([injected_hit(r.injected, r.expected) for r in para], seed=seed),
        "headline_precision": headline_precision(para, seed),
    }


def summarize(records: Sequence[Record], seed: int = SEED) -> Metrics:
    """Every headline metric, each a ``Metric`` (value, ci95, n)."""
    para = [r for r in records if r.kind == "paraphrase"]
    unrel = [r for r in records if r.kind == "unrelated"]
    out = _ranking_metrics(para, seed)
    silent = [1.0 if r.decision == "nothing" else 0.0 for r in unrel]
    out["silence_rate"] = _result(silent, seed=seed)
    out["balanced_accuracy"] = _balanced([injected_hit(r.injected, r.expected) for r in para], silent, seed)
    out["short_rate"] = _result([1.0 if r.decision == "short" else 0.0 for r in records], seed=seed)
    out["full_rate"] = _result([1.0 if r.decision == "full" else 0.0 for r in records], seed=seed)
    out["bytes_p95"] = _result([r.bytes for r in records if r.decision != "nothing"], _p95, seed)
    out["headline_precision"] = headline_precision(records, seed)
    out["headlines_per_message"] = _count([len(r.injected) for r in records], seed=seed)
    return {name: out[name] for name in HEADLINE}


def breakdowns(records: Sequence[Record], seed: int = SEED) -> Breakdowns:
    """Per question language, and same- vs cross-language (question vs its note)."""
    by_lang: dict[str, Metrics] = {}
    for lang in sorted({r.lang for r in records}):
        mine = [r for r in records if r.lang == lang]
        para = [r for r in mine if r.kind == "paraphrase"]
        silent = [1.0 if r.decision == "nothing" else 0.0 for r in mine if r.kind == "unrelated"]
        by_lang[lang] = {**_ranking_metrics(para, seed), "silence_rate": _result(silent, seed=seed)}
    para = [r for r in records if r.kind == "paraphrase"]
    by_style: dict[str, Metrics] = {}
    for style in sorted({r.style for r in records if r.style}):
        mine = [r for r in records if r.style == style]
        if mine[0].kind == "paraphrase":
            by_style[style] = _ranking_metrics(mine, seed)
        else:
            by_style[style] = {"silence_rate": _result([1.0 if r.decision == "nothing" else 0.0 for r in mine],
                                                       seed=seed)}
    cross = {
        "same": _ranking_metrics([r for r in para if r.note_lang == r.lang], seed),
        "cross": _ranking_metrics([r for r in para if r.note_lang not in (None, r.lang)], seed),
    }
    return Breakdowns(by_lang=by_lang, cross_lang=cross, by_style=by_style)


def flat(metrics: Metrics, prefix: str = "") -> dict[str, float]:
    """{name: value} as the evaluator contract returns it (None values dropped)."""
    pre = f"{prefix}_" if prefix else ""
    return {pre + k: v.value for k, v in metrics.items() if v.value is not None}


# --- ranx as an oracle -----------------------------------------------------------------


def ranx_metrics(records: Sequence[Record], names: Sequence[str] = ("hit_rate@1", "hit_rate@3", "mrr")
                 ) -> dict[str, float]:
    """The same ranking metrics computed by ranx over paraphrases: tests compare the two.

    Scores are replaced by descending rank positions, so ties in the pipeline's scores
    cannot make ranx order notes differently from the pipeline.
    """
    from ranx import Qrels, Run, evaluate

    para = [r for r in records if r.kind == "paraphrase"]
    qrels = Qrels({r.id: {e: 1 for e in r.expected} for r in para})
    run = Run({r.id: {nid: float(len(r.ranked) - i) for i, nid in enumerate(r.ranked)} for r in para})
    result = evaluate(qrels, run, list(names), make_comparable=True)
    return {n: float(result[n]) for n in names} if isinstance(result, dict) else {names[0]: float(result)}


def check_figures(results: dict, source: object) -> None:
    """A ``DatasetError`` when a figure a run's results.json stores is not what its own rows give:
    one edited to read hit@1 0.99 where its rows give 0.75, or silence 1.7, was printed by
    `report` and `versus` as it stood (an outside tester's AH15)."""
    from recall_eval.datasets.collections import DatasetError

    fields = set(Record.__dataclass_fields__)
    for name, block in {"main": results, **(results.get("heldout") or {})}.items():
        for label, pipeline in (block.get("pipelines") or {}).items():
            rows, stored = pipeline.get("records"), pipeline.get("metrics") or {}
            if not rows:
                continue
            for metric, got in summarize([Record(**{k: v for k, v in r.items() if k in fields}) for r in rows]).items():
                value = (stored.get(metric) or {}).get("value")
                if (value is None) != (got.value is None) or (value is not None and abs(value - got.value) > 1e-6):
                    raise DatasetError(f"{source}: {name} {label} {metric} reads {value} where the run's own rows "
                                       f"give {got.value} (the file was edited, or written by another version of "
                                       "recall-eval): run `recall-eval run` again")
