"""The regression gate: the committed config must not score worse than the committed baseline.

``recall-eval regress --collection sample`` scores every shipped set with the effective
config and the default model, and compares five metrics with
``reports/baseline/<collection>.json``:

    hit_rate@1, hit_rate@3, mrr   the ranking (model, chunking, questions, fusion)
    injected_hit_rate             ranking and selector together
    silence_rate                  the selector's restraint on unrelated messages

Tolerance: a net loss of at most ``MAX_NET_LOSS`` questions per metric (2 of 80 on the
sample: the noise of float rounding on another CPU, never a systematic loss). The
baseline stores every question's value, so the loss is counted on the same questions
(losses minus gains; MRR counts reciprocal ranks). Switching off the notes' questions or
BM25 fusion loses more than that, and fails (tests/eval/reports/test_eval_regress.py). When the
question ids, the sets or the notes differ from the baseline's (a set was added or edited),
or a metric has fewer than ``MIN_QUESTIONS`` questions, the gate does not pass: it says so in
one line, and ``--update`` (after checking) writes a new baseline.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recall_eval.datasets.collections import DatasetError
from recall_eval.results import Baseline, Metrics, from_json
from recall_eval.scoring import metrics as M
from recall_eval.scoring.stats import bootstrap_ci

GATED = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate")
MAX_NET_LOSS = 2  # questions
MIN_QUESTIONS = 20  # per gated metric: below it a loss of MAX_NET_LOSS is a tenth of the set or more
RULE = (f"fail when the net loss over the same questions (losses - gains) exceeds {MAX_NET_LOSS} questions "
        "per metric: value < baseline - tolerance, tolerance = 2 / n")


def per_question(records: list[dict]) -> dict[str, dict[str, float]]:
    """{metric: {question id: 0/1}} from score_collection's per-question records."""
    out: dict[str, dict[str, float]] = {m: {} for m in GATED}
    for r in records:
        if r["kind"] == "paraphrase":
            out["hit_rate@1"][r["id"]] = M.hit_at(r["ranked"], r["expected"], 1)
            out["hit_rate@3"][r["id"]] = M.hit_at(r["ranked"], r["expected"], 3)
            out["mrr"][r["id"]] = M.reciprocal_rank(r["ranked"], r["expected"])
            out["injected_hit_rate"][r["id"]] = M.injected_hit(r["injected"], r["expected"])
        else:
            out["silence_rate"][r["id"]] = 1.0 if r["decision"] == "nothing" else 0.0
    return out


def questions_hash(files: list[Path]) -> str:
    """What the sets say, question by question: their files' bytes, in their names' order."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.name):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def make_baseline(results: dict, collection: str, collection_hash: str, sets: list[str],
                  asked: str | None = None) -> Baseline:
    """The baseline of a ``score_collection`` result (its JSON form); ``asked``: ``questions_hash``."""
    default = results["pipelines"]["default"]
    return Baseline(
        collection=collection,
        collection_hash=collection_hash,
        sets=sets,
        created=dt.date.today().isoformat(),
        model=results["model"],
        thresholds=results["thresholds"],
        thresholds_source=results["thresholds_source"],
        pipeline=results.get("pipeline"),
        metrics=from_json(Metrics, {m: results["metrics"][m] for m in M.HEADLINE}),
        tolerance_rule=RULE,
        per_question=per_question(default["records"]),
        questions_hash=asked,
    )


@dataclass
class Check:
    metric: str
    value: float | None  # None: no question of its kind in the sets (not gated)
    baseline: float | None
    tolerance: float
    diff_ci95: list[float]

    @property
    def gated(self) -> bool:
        return self.value is not None and self.baseline is not None

    @property
    def ok(self) -> bool:
        return not self.gated or self.value >= self.baseline - self.tolerance - 1e-12  # type: ignore[operator]

    def as_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "baseline": self.baseline, "tolerance": self.tolerance,
                "gated": self.gated, "diff_ci95": self.diff_ci95, "ok": self.ok}


def paired_diff_ci(now: dict[str, float], then: dict[str, float], seed: int = M.SEED) -> list[float]:
    """95% bootstrap interval of the per-question difference (shown, not gated)."""
    d = np.array([now[i] - then[i] for i in sorted(then)], float)
    lo, hi = bootstrap_ci(d, seed=seed, rate=False) or (0.0, 0.0)
    return [lo, hi]


def same_questions(baseline: Baseline, sets: list[str], collection_hash: str, update: str,
                   asked: str | None = None) -> None:
    """The gate compares question by question, so it runs only on the baseline's own notes and
    sets (a set added, edited or left out would compare other questions): else one line."""
    from recall_eval.files import masked

    if baseline.collection_hash != collection_hash:
        raise DatasetError(f"the notes are not the ones the baseline was made on (collection {collection_hash}, "
                           f"baseline {baseline.collection_hash}): {update}")
    if sorted(baseline.sets) != sorted(masked(sets)):
        raise DatasetError(f"the question sets ({', '.join(sets) or 'none'}) are not the baseline's "
                           f"({', '.join(baseline.sets) or 'none'}): pass the same sets, or {update}")
    if asked is not None and not baseline.questions_hash:  # a baseline from before, or one edited: never "skip"
        raise DatasetError("the baseline has no questions_hash, so it cannot tell whether the question sets were "
                           f"edited since it was made: rewrite it (recall-eval regress --update): {update}")
    if asked is not None and baseline.questions_hash != asked:
        raise DatasetError(f"the question sets were edited since the baseline was made (sets {asked}, baseline "
                           f"{baseline.questions_hash}): the same ids over other questions; {update}")


def check(baseline: Baseline, results: dict, update: str, seed: int = M.SEED) -> list[Check]:
    """Each gated metric against the baseline over the same questions (ids masked as the
    baseline stores them). A metric neither side has questions for is not gated (shown as
    "-"); one with other questions than the baseline's, or too few to tell a loss of
    ``MAX_NET_LOSS`` from the whole set (fewer than ``MIN_QUESTIONS``), is one line naming
    the repair, never a pass."""
    from recall_eval.files import shown_id

    raw = per_question(results["pipelines"]["default"]["records"])
    out = []
    for m in GATED:
        now = {shown_id(k): v for k, v in raw[m].items()}
        then = baseline.per_question.get(m, {})
        _counted(m, now, raw[m], (results.get("metrics") or {}).get(m), "this run", update)
        _counted(m, then, then, baseline.metrics.get(m), f"the baseline ({baseline.collection})", update)
        if not now and not then:
            out.append(Check(m, None, None, 0.0, []))
            continue
        if set(then) != set(now):
            raise DatasetError(f"{m}: {len(set(now) - set(then))} questions of this run are not in the baseline "
                               f"and {len(set(then) - set(now))} of the baseline's are not in this run: {update}")
        if len(now) < MIN_QUESTIONS:
            raise DatasetError(f"{m}: {len(now)} questions; the gate needs at least {MIN_QUESTIONS} to tell a loss "
                               f"of {MAX_NET_LOSS} from noise: add questions, then {update}")
        bad = [k for k, v in then.items() if not (isinstance(v, int | float) and 0.0 <= v <= 1.0)]
        if bad:
            raise DatasetError(f"the baseline's {m} for {bad[0]!r} is {then[bad[0]]!r}, not a value in [0, 1]: "
                               f"{update}")
        value, base_value = float(np.mean(list(now.values()))), float(np.mean(list(then.values())))
        out.append(Check(m, value, base_value, MAX_NET_LOSS / len(now), paired_diff_ci(now, then, seed)))
    if not any(c.gated for c in out):
        raise DatasetError(f"no metric can be gated: the sets hold no questions: {update}")
    return out


def _counted(metric: str, shown_ids: dict, raw: dict, figure: object, whose: str, update: str) -> None:
    """Fail closed when ``whose`` per-question values are not one per question: two ids written
    alike (one replaced the other: a baseline of 21 questions held 20, and a real loss passed), or
    fewer or more than its ``metrics.n`` says (``figure``: a ``Metric`` or its JSON form)."""
    if len(shown_ids) != len(raw):
        raise DatasetError(f"{metric}: {len(raw)} questions of {whose} are written as {len(shown_ids)} ids "
                           f"(two ids read alike once shown): rename them, then {update}")
    n = figure.get("n") if isinstance(figure, dict) else getattr(figure, "n", None)
    if isinstance(n, int) and n != len(raw):
        raise DatasetError(f"{metric}: {whose} holds {len(raw)} per-question values for {n} questions: {update}")


def table(checks: list[Check]) -> str:
    lines = [f"{'metric':<18}{'value':>8}{'baseline':>10}{'tolerance':>11}  {'diff 95% CI':<18}status"]
    for c in checks:
        if not c.gated:
            lines.append(f"{c.metric:<18}{'-':>8}{'-':>10}{'-':>11}  {'':<18}not gated (no such questions)")
            continue
        ci = f"[{c.diff_ci95[0]:+.3f}, {c.diff_ci95[1]:+.3f}]"
        lines.append(f"{c.metric:<18}{c.value:>8.3f}{c.baseline:>10.3f}{c.tolerance:>11.3f}  {ci:<18}"
                     f"{'ok' if c.ok else 'FAIL'}")
    return "\n".join(lines)


def failure_message(checks: list[Check]) -> str:
    bad = [c for c in checks if not c.ok]
    return "regression: " + "; ".join(
        f"{c.metric} {c.value:.3f} < baseline {c.baseline:.3f} - tolerance {c.tolerance:.3f}" for c in bad)


def load_baseline(path: Path, repair: str | None = None) -> Baseline:
    """A committed baseline; a file that does not parse is one line naming the repair (``repair``:
    the command that rewrites it, as the caller was asked)."""
    fix = repair or f"recall-eval regress --collection {path.stem} --baseline {path} --update"
    try:
        baseline = from_json(Baseline, json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, RecursionError) as exc:  # json and pydantic errors are ValueErrors
        raise DatasetError(f"baseline {path} is not a baseline ({(str(exc).splitlines() or [''])[0][:120]}); "
                           f"rewrite it with: {fix}") from exc
    if not isinstance(baseline.model.get("model_id"), str):  # "model": {} was a KeyError's traceback
        raise DatasetError(f"baseline {path} is not a baseline (its model has no model_id); rewrite it with: {fix}")
    if not baseline.questions_hash:  # null skipped the check that the sets are the baseline's, unedited
        raise DatasetError(f"baseline {path} has no questions_hash (it cannot tell whether the question sets were "
                           f"edited since); rewrite it with: {fix}")
    return baseline
