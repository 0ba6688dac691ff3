"""The learned selector, applied without scikit-learn.

``recall-eval tune --learned`` fits a multinomial logistic regression on score-shape
features and stores it as plain JSON (no pickle: nothing executable comes from a
config file). Here the daemon evaluates it with a few dot products:

    z_c = b_c + sum_i w_ci * (x_i - mean_i) / scale_i      for c in nothing/short/full
    p   = softmax(z);  inject if 1 - p[nothing] >= threshold, then short vs full by p

Features (score-shape, message shape; all cheap):
    top            best note score
    gap            top - mean of ranks 2..11 (the gap rule's number)
    gap2           top - second score
    spread         standard deviation of the top 11 scores
    near_top       how many notes lie within 0.02 of the top
    log_chars      log(1 + message length)
    is_question    ends with ? / ？ or opens with a question word
    cjk_share      share of CJK characters in the message
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

FEATURES = ("top", "gap", "gap2", "spread", "near_top", "log_chars", "is_question", "cjk_share")
CLASSES = ("nothing", "short", "full")
NEAR_TOP_MARGIN = 0.02  # "close to the top": within typical noise between paraphrases
_QWORDS = re.compile(r"^\s*(how|what|why|when|where|which|who|can|could|should|is|are|do|does|did)\b", re.I)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def features(prompt: str, scores: list[float]) -> list[float]:
    """Feature vector for a message and its note scores (best first)."""
    top = scores[0] if scores else 0.0
    rest = scores[1:11]
    gap = top - sum(rest) / len(rest) if rest else top
    gap2 = top - scores[1] if len(scores) > 1 else top
    head = scores[:11] or [0.0]
    mean = sum(head) / len(head)
    spread = math.sqrt(sum((s - mean) ** 2 for s in head) / len(head))
    near_top = sum(1 for s in scores[1:] if s >= top - NEAR_TOP_MARGIN)
    text = prompt.strip()
    is_q = 1.0 if text.endswith(("?", "？")) or _QWORDS.match(text) or text.endswith("か") else 0.0
    cjk = len(_CJK.findall(text)) / max(1, len(text))
    return [top, gap, gap2, spread, float(near_top), math.log1p(len(text)), is_q, cjk]


@dataclass
class LearnedSelector:
    mean: list[float]
    scale: list[float]
    coef: list[list[float]]  # one row per class in CLASSES order
    intercept: list[float]
    threshold: float  # on P(inject) = 1 - P(nothing)

    @classmethod
    def from_dict(cls, d: dict) -> LearnedSelector:
        if list(d.get("features", FEATURES)) != list(FEATURES):
            raise ValueError("learned selector was fitted on other features; re-run recall-eval tune")
        return cls(list(d["mean"]), list(d["scale"]), [list(r) for r in d["coef"]],
                   list(d["intercept"]), float(d["threshold"]))

    def to_dict(self) -> dict:
        return {"features": list(FEATURES), "classes": list(CLASSES), "mean": self.mean, "scale": self.scale,
                "coef": self.coef, "intercept": self.intercept, "threshold": self.threshold}

    def proba(self, x: list[float]) -> list[float]:
        z = [(xi - m) / (s or 1.0) for xi, m, s in zip(x, self.mean, self.scale, strict=True)]
        logits = [b + sum(w * zi for w, zi in zip(row, z, strict=True))
                  for row, b in zip(self.coef, self.intercept, strict=True)]
        hi = max(logits)
        exps = [math.exp(v - hi) for v in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def decide(self, prompt: str, scores: list[float]) -> tuple[str, float]:
        """(decision, P(inject))."""
        p = self.proba(features(prompt, scores))
        inject = 1.0 - p[0]
        if inject < self.threshold:
            return "nothing", inject
        return ("full" if p[2] >= p[1] else "short"), inject
