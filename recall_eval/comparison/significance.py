"""Is a pipeline's difference from the default real? Per metric, a paired test over the same
questions, Holm-corrected over the pipelines compared:

    ranking metrics (hit_rate@1, hit_rate@3, mrr)   ``ranx.compare``, Fisher's randomization test
    the others (injected hits, silence, balanced)   the same test on per-question values
                                                    (``recall_eval.scoring.stats.randomization_p``)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recall_eval.scoring import metrics as M
from recall_eval.scoring.stats import PERMUTATIONS, holm, randomization_p

SIGNIFICANCE = 0.05
TESTED = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "balanced_accuracy")
RANKING = ("hit_rate@1", "hit_rate@3", "mrr")


def per_question(records: Sequence[M.Record], metric: str) -> np.ndarray:
    para = [r for r in records if r.kind == "paraphrase"]
    if metric == "hit_rate@1":
        return np.array([M.hit_at(r.ranked, r.expected, 1) for r in para])
    if metric == "hit_rate@3":
        return np.array([M.hit_at(r.ranked, r.expected, 3) for r in para])
    if metric == "mrr":
        return np.array([M.reciprocal_rank(r.ranked, r.expected) for r in para])
    if metric == "injected_hit_rate":
        return np.array([M.injected_hit(r.injected, r.expected) for r in para])
    silent = np.array([r.decision == "nothing" for r in records if r.kind == "unrelated"], dtype=float)
    if metric == "silence_rate":
        return silent
    # balanced accuracy as a mean of per-question terms, so a paired test applies to it
    hits = per_question(records, "injected_hit_rate")
    n = hits.size + silent.size
    return np.r_[hits * n / (2 * max(1, hits.size)), silent * n / (2 * max(1, silent.size))]


def ranx_pvalues(base: Sequence[M.Record], other: Sequence[M.Record]) -> dict[str, float]:
    """ranx.compare (Fisher's randomization test) on the ranking metrics."""
    from ranx import Qrels, Run, compare

    para = [r for r in base if r.kind == "paraphrase"]
    qrels = Qrels({r.id: {e: 1 for e in r.expected} for r in para})

    def run(records, name):
        return Run({r.id: {nid: float(len(r.ranked) - k) for k, nid in enumerate(r.ranked)} or {"-": 0.0}
                    for r in records if r.kind == "paraphrase"}, name=name)

    rep = compare(qrels, [run(base, "a"), run(other, "b")], list(RANKING), stat_test="fisher",
                  n_permutations=PERMUTATIONS, max_p=SIGNIFICANCE, random_seed=M.SEED % 2**31,
                  make_comparable=True)
    return {m: float(rep.comparisons[frozenset(("a", "b"))][m]["p_value"]) for m in RANKING}


def significance(records: dict[str, list], default: str) -> dict[str, dict[str, float]]:
    """Holm-adjusted p-value of each pipeline vs ``default``, per metric."""
    raw: dict[str, dict[str, float]] = {m: {} for m in TESTED}
    for name, recs in records.items():
        if name == default:
            continue
        ranks = ranx_pvalues(records[default], recs)
        for m in TESTED:
            raw[m][name] = ranks[m] if m in ranks else randomization_p(
                per_question(recs, m), per_question(records[default], m))
    adjusted = {m: holm(ps) for m, ps in raw.items()}
    return {name: {m: adjusted[m][name] for m in TESTED} for name in records if name != default}
