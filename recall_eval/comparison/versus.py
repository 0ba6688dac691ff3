"""Whole pipelines side by side: two or more ``recall-eval run`` results on the same questions.

``recall-eval compare`` measures components (dense per model, BM25, fusion) on one index it
builds itself; this compares what ``recall-eval run`` measured end to end (chunks, the
notes' questions and restatements, BM25 fusion, self-calibration on the collection's own
negatives), one run per model. The first run is the reference. For every question set the
runs share (the main sets, then each held-out set), each run's figures carry their
bootstrap intervals (from the run), and every other run is tested against the first on
the *same questions*, paired, with ``recall_eval.comparison.significance`` (ranx's Fisher
randomization test for the ranking metrics, the same test in numpy for injected hits and
silence), Holm-corrected over the runs compared. Runs whose question ids differ are
refused: a paired test needs the same questions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recall_eval.comparison.significance import SIGNIFICANCE, significance
from recall_eval.datasets.collections import DatasetError
from recall_eval.reports.report import blocks
from recall_eval.scoring import metrics as M
from recall_eval.scoring import stats

SHOWN = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "headline_precision",
         "balanced_accuracy")
PIPELINE = "default"
SEPARATION = "separation"
SEPARATION_RESAMPLES = 2000


def _records(block: dict, what: str) -> list[M.Record]:
    rows = (block.get("pipelines") or {}).get(PIPELINE, {}).get("records")
    if not rows:
        raise DatasetError(f"{what}: no per-question records (rerun it with this version of `recall-eval run`)")
    fields = set(M.Record.__dataclass_fields__)
    return [M.Record(**{k: v for k, v in r.items() if k in fields}) for r in rows]


def evidence(r: M.Record, neg_weight: float) -> float:
    """What the gate compares with its floor (``recall.ranking.selector``): the top score plus
    ``neg_weight`` times its margin over the nearest known unrelated message; -inf for a
    related question whose note is not in the top 3 (no floor makes it an injected hit)."""
    if r.top is None or (r.kind == "paraphrase" and not M.hit_at(r.ranked, r.expected, 3)):
        return float("-inf")
    return r.top + (neg_weight * (r.top - r.negative) if r.negative is not None else 0.0)


def _auc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """P(a related question's evidence > an unrelated one's), ties half; rows of ``pos``
    and ``neg`` are resamples (the last axis is the questions)."""
    gt = (pos[..., :, None] > neg[..., None, :]).mean(axis=(-1, -2))
    eq = (pos[..., :, None] == neg[..., None, :]).mean(axis=(-1, -2))
    return gt + 0.5 * eq


def separation(recs: dict[str, list[M.Record]], weights: dict[str, float], reference: str) -> dict:
    """Separation of each run: the area under its trade-off curve (injected hits against
    silence as the floor moves), so independent of where calibration put the floor, with a
    bootstrap interval over questions; against ``reference``, a paired bootstrap p-value
    (the same resampled questions for both), Holm-corrected over the runs."""
    rng = np.random.default_rng(stats.SEED)
    ids = {k: sorted(rs, key=lambda r: r.id) for k, rs in recs.items()}
    ev = {k: np.array([evidence(r, weights[k]) for r in rs]) for k, rs in ids.items()}
    related = np.array([r.kind == "paraphrase" for r in ids[reference]])
    pi, ni = np.flatnonzero(related), np.flatnonzero(~related)
    if not pi.size or not ni.size:
        return {}
    bp = rng.integers(0, pi.size, (SEPARATION_RESAMPLES, pi.size))
    bn = rng.integers(0, ni.size, (SEPARATION_RESAMPLES, ni.size))
    boot = {k: _auc(e[pi][bp], e[ni][bn]) for k, e in ev.items()}
    out: dict = {"values": {}, "p_values": {}}
    for k, e in ev.items():
        value = float(_auc(e[pi], e[ni]))
        lo, hi = (float(x) for x in np.percentile(boot[k], [2.5, 97.5]))
        if hi - lo < 1e-12:  # every resample alike (all separated): what the fewer side's n can tell
            least = int(min(pi.size, ni.size))
            lo, hi = stats.hull((lo, hi), stats.wilson(round(value * least), least))
        out["values"][k] = {"value": value, "ci95": [lo, hi], "n": int(e.size)}
    raw = {}
    for k in ev:
        if k != reference:
            diff = boot[k] - boot[reference]
            raw[k] = min(1.0, 2 * min(float(np.mean(diff <= 0)), float(np.mean(diff >= 0))))
    out["p_values"] = stats.holm(raw) if raw else {}
    return out


def _neg_weight(run: dict, block: dict) -> float:
    t = block.get("thresholds") or run.get("thresholds") or {}
    return float(t.get("neg_weight") or 0.0)


def label(run: dict) -> str:
    return run["model"]["spec"]


def compare_runs(runs: Sequence[dict], names: Sequence[str]) -> dict:
    """Per question set: each run's metrics and its Holm-adjusted p-values against the first."""
    if len(runs) < 2:
        raise DatasetError("give two runs or more")
    keys = [label(r) for r in runs]
    if len(set(keys)) != len(keys):
        keys = [f"{k} ({n})" for k, n in zip(keys, names, strict=True)]
    shared = [s for s in blocks(runs[0]) if all(s in blocks(r) for r in runs[1:])]
    out: dict = {"reference": keys[0], "significance": SIGNIFICANCE, "sets": {}, "skipped": []}
    for s in shared:
        if not all((blocks(r)[s].get("pipelines") or {}).get(PIPELINE, {}).get("records") for r in runs):
            out["skipped"].append(s)  # a run made before held-out records were kept
            continue
        recs = {k: _records(blocks(r)[s], f"{n}: {s}") for k, r, n in zip(keys, runs, names, strict=True)}
        ids = [sorted(x.id for x in rs) for rs in recs.values()]
        asked = [sorted((x.id, x.text, tuple(x.expected)) for x in rs) for rs in recs.values()]
        if any(i != ids[0] for i in ids[1:]) or any(a != asked[0] for a in asked[1:]):
            raise DatasetError(f"{s}: the runs asked different questions (ids, texts or the notes they expect); "
                               "a paired test needs the same ones")
        if len({r.get("notes_dir") for r in runs}) > 1 and len({_notes_key(r) for r in runs}) > 1:
            raise DatasetError(f"{s}: the runs searched different notes folders; their figures are not paired")
        by_run = {}
        for k, r in zip(keys, runs, strict=True):
            pipe = blocks(r)[s]["pipelines"][PIPELINE]
            by_run[k] = {"metrics": {m: pipe["metrics"].get(m) for m in SHOWN},
                         "model_id": r["model"]["model_id"],
                         "query_ms_p50": (r.get("timings") or {}).get("query_ms_p50"),
                         "index_s": (r.get("timings") or {}).get("index_s")}
        p_values = significance(recs, keys[0])
        sep = separation(recs, {k: _neg_weight(r, blocks(r)[s]) for k, r in zip(keys, runs, strict=True)}, keys[0])
        for k in keys:
            by_run[k]["metrics"][SEPARATION] = (sep.get("values") or {}).get(k)
            if k in (sep.get("p_values") or {}):
                p_values[k][SEPARATION] = sep["p_values"][k]
        out["sets"][s] = {"n": len(ids[0]), "runs": by_run, "p_values": p_values}
    return out


def _notes_key(run: dict) -> str | None:
    """What says which notes a run searched: their collection's hash where the run kept one."""
    return run.get("collection_hash") or run.get("notes_dir")


def _cell(v: dict | None, p: float | None) -> str:
    if not v or v.get("value") is None:
        return "-"
    lo, hi = v.get("ci95") or (v["value"], v["value"])
    mark = "†" if p is not None and p < SIGNIFICANCE else ""
    return f"{v['value']:.3f} [{lo:.2f},{hi:.2f}]{mark}"


def markdown(result: dict) -> str:
    """The comparison as Markdown: every name a run holds (sets, runs, the reference) through ``md_text``."""
    from recall_eval.reports.markdown import md_table, md_text

    head = ["set", "run", *SHOWN, SEPARATION, "query p50 ms", "index s"]
    rows = []
    for s, block in result["sets"].items():
        for k, row in block["runs"].items():
            ps = block["p_values"].get(k, {})
            cells = [_cell(row["metrics"].get(m), ps.get(m)) for m in (*SHOWN, SEPARATION)]
            rows.append([f"{s} ({block['n']})", k, *cells, str(row["query_ms_p50"] or "-"), str(row["index_s"] or "-")])
    lines = [md_table(head, rows)]
    lines.append("\nvalue [95% CI: bootstrap, Wilson's where every answer is alike]; † = differs from "
                 f"{md_text(result['reference'])} on the same questions, "
                 f"p < {SIGNIFICANCE} (paired randomization test, Holm-corrected over the runs). "
                 f"{SEPARATION}: area under the injected-hits / silence curve as the floor moves (the "
                 "calibrated neg_weight kept), whatever the floor calibration chose; paired bootstrap test. "
                 "query p50 / index s: the run's own timings (main sets' run), on a shared machine.")
    if result.get("skipped"):
        skipped = md_text(", ".join(result["skipped"]))
        lines.append(f"not compared (a run without per-question records; rerun it): {skipped}")
    return "\n".join(lines)
