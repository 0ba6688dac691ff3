"""The tuning protocol: never tuned and reported on the same questions.

    folds      leave-one-set-out over the tuning sets (each set was written by a
               separate, context-free session, so a held-out set is new wording, not
               just new questions); with a single tuning set, stratified 5-fold over
               its questions instead
    CV         each fold tunes on the other sets (grid built from their scores only)
               and decides the held-out set with the real selector; the held-out
               answers are pooled (every tuning question answered exactly once by
               thresholds that never saw it) and summarised with 95% bootstrap intervals
    test       thresholds tuned on ALL tuning sets, applied to the test sets, which
               no step of tuning saw
    before     the original design's thresholds (or, with ``--before config``, those in
               force for the model), on the same questions

The learned selector is fitted in the same folds and compared with the gap rule on
the same held-out questions: exact McNemar on per-question correctness (a paraphrase's
note injected / an unrelated message silent) and a paired bootstrap of the difference
in each rate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recall.config.settings import Rule
from recall_eval.scoring import metrics as M
from recall_eval.scoring.stats import bootstrap_ci, paired_bootstrap
from recall_eval.tuning.tune import (
    KEYS,
    Objective,
    Outcomes,
    Ranked,
    correct,
    decide_all,
    margin_grid,
    per_question,
    rates,
    search,
    to_config,
)

TABLE = ("injected_hit_rate", "silence_rate", "hit_rate@3", "short_rate", "full_rate")
K_FOLDS = 5


def folds(ranked: Sequence[Ranked], tune_sets: Sequence[str], seed: int = M.SEED
          ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, train indices, held-out indices) over the tuning questions' positions."""
    sets = np.array([r.question.set_id for r in ranked])
    if len(tune_sets) >= 2:
        return [(s, np.nonzero(np.isin(sets, tune_sets) & (sets != s))[0], np.nonzero(sets == s)[0])
                for s in tune_sets]
    from sklearn.model_selection import StratifiedKFold

    idx = np.nonzero(np.isin(sets, tune_sets))[0]
    kinds = np.array([ranked[i].question.kind for i in idx])
    split = StratifiedKFold(K_FOLDS, shuffle=True, random_state=seed).split(idx, kinds)
    return [(f"fold-{k + 1}", idx[tr], idx[te]) for k, (tr, te) in enumerate(split)]


def summary(values: dict[str, np.ndarray], seed: int = M.SEED) -> dict[str, dict]:
    out = {}
    for name in TABLE:
        v = np.asarray(values[name], float)
        out[name] = {"value": float(v.mean()) if v.size else None,
                     "ci95": list(bootstrap_ci(v, seed=seed) or ()), "n": int(v.size)}
    return out


def assess(ranked: Sequence[Ranked], kind: np.ndarray, hit: np.ndarray, seed: int = M.SEED) -> dict:
    kinds = np.array([r.question.kind for r in ranked])
    return summary(per_question(kind, hit, kinds, ranked), seed)


def tune_on(ranked: Sequence[Ranked], base: Rule, objective: Objective,
            keep: bool = False) -> tuple[Outcomes, dict, dict]:
    """(outcomes of the training questions, config-ready thresholds, training metrics).
    ``keep``: no search, the thresholds in force (to fit only the learned selector)."""
    out = Outcomes(list(ranked), base, margin_grid(ranked, base))
    if keep:
        thr = {k: getattr(base.thresholds, k) for k in KEYS}
        kind, hit = out.gap_rule({k: np.array([v]) for k, v in thr.items()})
        return out, thr, {m: float(v[0]) for m, v in rates(kind, hit, out.kinds).items()}
    raw, train = search(out, objective)
    return out, to_config(raw), train


# --- paired comparison -----------------------------------------------------------------


def mcnemar(a: np.ndarray, b: np.ndarray, names: tuple[str, str] = ("gap", "learned")) -> dict:
    """Exact McNemar test on paired 0/1 correctness (two-sided binomial on discordant pairs)."""
    from scipy.stats import binomtest

    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    p = 1.0 if only_a + only_b == 0 else float(binomtest(only_b, only_a + only_b, 0.5).pvalue)
    return {f"only_{names[0]}_correct": only_a, f"only_{names[1]}_correct": only_b, "p_value": p}


def compare(ranked: Sequence[Ranked], a: tuple, b: tuple, seed: int = M.SEED,
            names: tuple[str, str] = ("gap", "learned")) -> dict:
    """Paired comparison of two selectors' (kind, hit) on the same questions (b - a)."""
    kinds = np.array([r.question.kind for r in ranked])
    pa, pb = per_question(*a, kinds, ranked), per_question(*b, kinds, ranked)
    return {"mcnemar": mcnemar(correct(*a, kinds), correct(*b, kinds), names),
            "paired_bootstrap": {m: paired_bootstrap(pa[m], pb[m], seed)
                                 for m in ("injected_hit_rate", "silence_rate")},
            names[0]: assess(ranked, *a, seed), names[1]: assess(ranked, *b, seed)}


# --- the whole protocol -----------------------------------------------------------------


def run_protocol(ranked: Sequence[Ranked], base: Rule, objective: Objective, tune_sets: Sequence[str],
                 test_sets: Sequence[str], learned: bool = False, seed: int = M.SEED,
                 keep_thresholds: bool = False, before: Rule | None = None) -> dict:
    # Long because: the tuning protocol in order (folds, per-fold search, learned fit, held-out test,
    # comparison); each step is a helper, this is the sequence the report documents.
    """The whole protocol on rankings of every set; ``base`` holds the thresholds in force
    (kept with ``keep_thresholds``), ``before`` what the tuned ones are compared with."""
    ranked = list(ranked)
    sets = np.array([r.question.set_id for r in ranked])
    n = len(ranked)
    cv_kind, cv_hit = np.zeros(n, np.int8), np.zeros(n, bool)
    lv_kind, lv_hit = np.zeros(n, np.int8), np.zeros(n, bool)
    fold_rows = []
    for name, tr, te in folds(ranked, tune_sets, seed):
        train = [ranked[i] for i in tr]
        held = [ranked[i] for i in te]
        out, thr, train_m = tune_on(train, base, objective, keep_thresholds)
        s = base.replace(**thr, learned=None, source="tuned")
        cv_kind[te], cv_hit[te] = decide_all(held, s)
        row = {"held_out": name, "n_train": len(tr), "n_held_out": len(te), "thresholds": thr,
               "train": train_m, "held_out_metrics": assess(held, cv_kind[te], cv_hit[te], seed)}
        if learned:
            from recall_eval.tuning.selector_fit import fit_learned, learned_settings

            sel, info = fit_learned(out, base, thr["full_margin"], objective, seed)
            lv_kind[te], lv_hit[te] = decide_all(held, learned_settings(base, thr, sel))
            row["learned"] = info
        fold_rows.append(row)

    tune_ix = np.nonzero(np.isin(sets, tune_sets))[0]
    test_ix = np.nonzero(np.isin(sets, test_sets))[0]
    tune_q = [ranked[i] for i in tune_ix]
    test_q = [ranked[i] for i in test_ix]
    out_all, final, final_train = tune_on(tune_q, base, objective, keep_thresholds)
    tuned = base.replace(**final, learned=None, source="tuned")
    before = (before or base).replace(learned=None)
    report: dict = {
        "objective": objective.describe(),
        "protocol": "leave-one-set-out" if len(tune_sets) >= 2 else f"stratified {K_FOLDS}-fold over questions",
        "thresholds_kept": keep_thresholds,
        "tune_sets": list(tune_sets), "test_sets": list(test_sets),
        "n_tune": len(tune_q), "n_test": len(test_q),
        "before": {"thresholds": {k: getattr(before.thresholds, k) for k in KEYS}, "source": before.thresholds.source,
                   "tune": assess(tune_q, *decide_all(tune_q, before), seed)},
        # the rule the tuned thresholds would replace, on the same questions (fitted on none of them)
        "in_force": {"source": base.thresholds.source, "tune": assess(tune_q, *decide_all(tune_q, base), seed)},
        "cv": assess(tune_q, cv_kind[tune_ix], cv_hit[tune_ix], seed),
        "tuned_vs_before": {"cv": compare(tune_q, decide_all(tune_q, before), (cv_kind[tune_ix], cv_hit[tune_ix]),
                                          seed, ("before", "tuned"))},
        "cv_by_set": {s: assess([ranked[i] for i in np.nonzero(sets == s)[0]], cv_kind[sets == s],
                                cv_hit[sets == s], seed) for s in tune_sets},
        "folds": fold_rows,
        "tuned": {"thresholds": final, "train": final_train},
    }
    if test_q:
        report["before"]["test"] = assess(test_q, *decide_all(test_q, before), seed)
        report["tuned"]["test"] = assess(test_q, *decide_all(test_q, tuned), seed)
        report["tuned_vs_before"]["test"] = compare(test_q, decide_all(test_q, before), decide_all(test_q, tuned),
                                                    seed, ("before", "tuned"))
        if len(test_sets) > 1:
            for key, settings in (("before", before), ("tuned", tuned)):
                by = {}
                for s in test_sets:
                    qs = [ranked[i] for i in np.nonzero(sets == s)[0]]
                    by[s] = assess(qs, *decide_all(qs, settings), seed)
                report[key]["test_by_set"] = by
    if learned:
        from recall_eval.tuning.selector_fit import fit_learned, learned_settings

        sel, info = fit_learned(out_all, base, final["full_margin"], objective, seed)
        lset = learned_settings(base, final, sel)
        gap_cv = (cv_kind[tune_ix], cv_hit[tune_ix])
        report["learned"] = {
            "selector": sel.to_dict(), "fit": info,
            "cv": compare(tune_q, gap_cv, (lv_kind[tune_ix], lv_hit[tune_ix]), seed),
        }
        if test_q:
            report["learned"]["test"] = compare(test_q, decide_all(test_q, tuned), decide_all(test_q, lset), seed)
    return report


def beats(report: dict, alpha: float = 0.05) -> bool:
    """The learned selector replaces the gap rule only if it is significantly better on
    the pooled held-out folds (McNemar) and not worse on the test sets."""
    lr = report.get("learned")
    if not lr:
        return False
    cv = lr["cv"]["mcnemar"]
    better = cv["only_learned_correct"] > cv["only_gap_correct"] and cv["p_value"] < alpha
    test = lr.get("test", {}).get("mcnemar")
    return better and (test is None or test["only_learned_correct"] >= test["only_gap_correct"])


# --- text ---------------------------------------------------------------------------------


def cell(v: dict | None) -> str:
    if not v or v.get("value") is None:
        return "–"
    lo, hi = v["ci95"] or (v["value"], v["value"])
    return f"{v['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def table(report: dict) -> str:
    tune = ",".join(report["tune_sets"])
    test = ",".join(report["test_sets"])
    cols = [("before (tune sets)", report["before"]["tune"]), ("tuned, CV held-out", report["cv"])]
    if "test" in report["tuned"]:
        cols += [("before (test sets)", report["before"]["test"]), ("tuned (test sets)", report["tuned"]["test"])]
    w = 24
    lines = [f"tune sets: {tune} ({report['n_tune']} questions); test sets: {test or 'none'} "
             f"({report['n_test']} questions)"]
    lines.append(f"{'metric':<18}" + "".join(f"{c[0]:>{w}}" for c in cols))
    lines += [f"{m:<18}" + "".join(f"{cell(c[1].get(m)):>{w}}" for c in cols) for m in TABLE]
    for s in report["tuned"].get("test_by_set", {}):
        b, t = report["before"]["test_by_set"][s], report["tuned"]["test_by_set"][s]
        lines.append(f"  test {s}: " + "; ".join(f"{m} before {cell(b[m])} tuned {cell(t[m])}"
                                                 for m in ("injected_hit_rate", "silence_rate")))
    for s, v in report["cv_by_set"].items():
        lines.append(f"  CV held-out {s}: " + "; ".join(f"{m} {cell(v[m])}"
                                                      for m in ("injected_hit_rate", "silence_rate")))
    b, t = report["before"]["thresholds"], report["tuned"]["thresholds"]
    lines.append("")
    lines.append(f"thresholds before [{report['before']['source']}]: " + ", ".join(f"{k}={b[k]:g}" for k in KEYS))
    lines.append("thresholds tuned on all tuning sets:  " + ", ".join(f"{k}={t[k]:g}" for k in KEYS))
    for row in report["folds"]:
        lines.append(f"  fold held out {row['held_out']}: " + ", ".join(f"{k}={row['thresholds'][k]:g}" for k in KEYS))
    return "\n".join(lines)


def comparison_text(report: dict, c_by_where: dict, names: tuple[str, str]) -> list[str]:
    a, b = names
    lines = []
    for where in ("cv", "test"):
        c = c_by_where.get(where)
        if not c:
            continue
        label = "CV held-out" if where == "cv" else "test " + ",".join(report["test_sets"])
        lines.append(f"  {label}: injected_hit_rate {a} {cell(c[a]['injected_hit_rate'])} vs {b} "
                     f"{cell(c[b]['injected_hit_rate'])}; silence_rate {a} {cell(c[a]['silence_rate'])}"
                     f" vs {b} {cell(c[b]['silence_rate'])}")
        mc = c["mcnemar"]
        lines.append(f"    McNemar on per-question correctness: only {a} right {mc[f'only_{a}_correct']}, "
                     f"only {b} right {mc[f'only_{b}_correct']}, p = {mc['p_value']:.3f}")
        for m, pb in c["paired_bootstrap"].items():
            if pb["diff"] is not None:
                p = "< 0.001" if pb["p_value"] < 0.001 else f"= {pb['p_value']:.3f}"
                lines.append(f"    paired bootstrap {m} {b} - {a}: {pb['diff']:+.3f} "
                             f"[{pb['ci95'][0]:+.3f}, {pb['ci95'][1]:+.3f}], p {p}")
    return lines


def tuned_text(report: dict) -> str:
    return "\n".join(["tuned vs before (same questions):",
                      *comparison_text(report, report["tuned_vs_before"], ("before", "tuned"))])


def learned_text(report: dict) -> str:
    lr = report.get("learned")
    if not lr:
        return ""
    lines = ["learned selector vs gap rule with the 'tuned' thresholds (same folds, same questions):",
             *comparison_text(report, lr, ("gap", "learned"))]
    lines.append(f"  P(inject) threshold {lr['fit']['threshold']:.3f}; trained on {lr['fit']['n_train']} questions "
                 f"{lr['fit']['labels']}")
    return "\n".join(lines)
