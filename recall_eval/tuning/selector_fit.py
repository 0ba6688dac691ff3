"""Fit the learned selector (recall/ranking/learned.py applies it, without scikit-learn).

Model: StandardScaler + multinomial LogisticRegression on ``recall.ranking.learned.features``
(score shape and message shape). Labels, from what the right answer would have been:

    unrelated                                  -> nothing
    paraphrase, expected note ranked 1st       -> full
    paraphrase, expected note ranked 2nd-3rd   -> short
    paraphrase, expected note not in the top 3 -> nothing (nothing useful to inject)

Threshold on P(inject) = 1 - P(nothing): chosen for the SAME objective as the gap rule
(e.g. injected_hit_rate subject to silence_rate >= 0.85), on out-of-fold probabilities
(5-fold over the training questions, stratified on inject vs nothing), scored exactly through
``recall_eval.tuning.tune.Outcomes``. This is what ``TunedThresholdClassifierCV`` does, written out:
that class needs a binary target and a scorer of (y_true, y_pred) alone, while this
objective needs each question's kind and whether the injected list held its note.
The final model is refitted on all training questions and keeps that threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recall.config.settings import Rule
from recall.ranking.learned import CLASSES, FEATURES, LearnedSelector, features
from recall_eval.scoring import metrics as M
from recall_eval.tuning.tune import Objective, Outcomes, Ranked, _neighbourhood_mean, rates

C_REG = 1.0  # sklearn's default; 8 standardised features, ~100 questions: mild shrinkage is enough
INNER_FOLDS = 5
NO_CLASS_LOGIT = -50.0  # intercept of a class never seen in training: softmax weight ~e-22


def usable(r: Ranked, s: Rule) -> bool:
    """decide() consults the learned model only for messages it searches and that have notes."""
    return len(r.question.text.strip()) >= s.selector.min_prompt_chars and bool(r.scores)


def label(r: Ranked) -> int:
    if r.question.kind != "paraphrase":
        return 0
    ids = [h.note.get("id") for h in r.hits if not h.is_conversation]
    expected = set(r.question.expected)
    if ids[:1] and ids[0] in expected:
        return 2
    return 1 if expected & set(ids[:3]) else 0


def matrix(ranked: Sequence[Ranked], s: Rule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, usable mask); rows of unusable questions are zeros and never used."""
    ok = np.array([usable(r, s) for r in ranked], bool)
    X = np.array([features(r.question.text, r.scores) if u else [0.0] * len(FEATURES)
                  for r, u in zip(ranked, ok, strict=True)], float).reshape(len(ranked), len(FEATURES))
    return X, np.array([label(r) for r in ranked], int), ok


def fit_pipeline(X: np.ndarray, y: np.ndarray, seed: int = M.SEED):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C_REG, max_iter=5000, random_state=seed)).fit(X, y)


def export(pipe, threshold: float) -> LearnedSelector:
    """Plain numbers, one coefficient row per class of CLASSES (absent classes padded)."""
    scaler, lr = pipe[0], pipe[-1]
    n = len(FEATURES)
    coef = [[0.0] * n for _ in CLASSES]
    intercept = [NO_CLASS_LOGIT] * len(CLASSES)
    classes = [int(c) for c in lr.classes_]
    if len(classes) == 2:  # binary LR: P(c1) = sigmoid(z) = softmax([0, z])
        coef[classes[0]], intercept[classes[0]] = [0.0] * n, 0.0
        coef[classes[1]], intercept[classes[1]] = [float(w) for w in lr.coef_[0]], float(lr.intercept_[0])
    else:
        for row, c in enumerate(classes):
            coef[c], intercept[c] = [float(w) for w in lr.coef_[row]], float(lr.intercept_[row])
    return LearnedSelector([float(v) for v in scaler.mean_], [float(v) for v in scaler.scale_], coef, intercept,
                           float(threshold))


def proba3(pipe, X: np.ndarray) -> np.ndarray:
    """predict_proba widened to the three classes (columns in CLASSES order)."""
    p = np.zeros((len(X), len(CLASSES)))
    p[:, [int(c) for c in pipe[-1].classes_]] = pipe.predict_proba(X)
    return p


def oof_proba(X: np.ndarray, y: np.ndarray, seed: int = M.SEED) -> np.ndarray:
    from sklearn.model_selection import StratifiedKFold

    # Stratified on inject vs nothing (what the threshold acts on): "short" can be too
    # rare to spread over the folds, and a fold without it is handled by proba3.
    inject = (y > 0).astype(int)
    counts = np.bincount(inject, minlength=2)
    k = int(min(INNER_FOLDS, max(2, counts.min())))
    out = np.zeros((len(X), len(CLASSES)))
    for tr, te in StratifiedKFold(k, shuffle=True, random_state=seed).split(X, inject):
        if len(set(y[tr])) < 2:  # a fold with one class cannot be fitted: predict the prior
            out[te] = np.bincount(y[tr], minlength=len(CLASSES)) / len(tr)
            continue
        out[te] = proba3(fit_pipeline(X[tr], y[tr], seed), X[te])
    return out


def best_threshold(out: Outcomes, p: np.ndarray, ok: np.ndarray, margin: float, objective: Objective) -> float:
    """Threshold on P(inject) maximising ``objective`` over ``out``'s questions."""
    inject_p = 1.0 - p[:, 0]
    vals = np.unique(inject_p[ok])
    cands = np.unique(np.round(np.concatenate([[0.0, 1.0 + 1e-9], (vals[:-1] + vals[1:]) / 2]), 9))
    inject = ok[None] & (inject_p[None] >= cands[:, None])
    full = np.broadcast_to(p[:, 2] >= p[:, 1], inject.shape)
    kind, hit = out.combine(inject, full, out.margin_index([margin] * len(cands)))
    score = objective.score(rates(kind, hit, out.kinds))
    smooth = _neighbourhood_mean(score)
    return float(cands[int(np.lexsort((smooth, score))[-1])])


def fit_learned(out: Outcomes, base: Rule, margin: float, objective: Objective,
                seed: int = M.SEED) -> tuple[LearnedSelector, dict]:
    """Fit on ``out``'s questions; the threshold from out-of-fold probabilities."""
    X, y, ok = matrix(out.ranked, base)
    if len(set(y[ok])) < 2:
        raise ValueError("the learned selector needs questions of at least two labels to fit")
    threshold = best_threshold(out, _oof_masked(X, y, ok, seed), ok, margin, objective)
    pipe = fit_pipeline(X[ok], y[ok], seed)
    sel = export(pipe, threshold)
    return sel, {"n_train": int(ok.sum()), "labels": {c: int((y[ok] == i).sum()) for i, c in enumerate(CLASSES)},
                 "threshold": threshold, "C": C_REG}


def _oof_masked(X: np.ndarray, y: np.ndarray, ok: np.ndarray, seed: int) -> np.ndarray:
    p = np.zeros((len(X), len(CLASSES)))
    p[:, 0] = 1.0  # unusable questions: decide() says nothing before the model is asked
    p[ok] = oof_proba(X[ok], y[ok], seed)
    return p


def learned_settings(base: Rule, thresholds: dict[str, float], sel: LearnedSelector) -> Rule:
    """The settings the daemon would run with: the gap table (for full_margin) plus the model."""
    return base.replace(**thresholds, learned=sel.to_dict(), source="tuned")
