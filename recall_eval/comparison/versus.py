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

import json
from collections.abc import Sequence
from pathlib import Path

from recall_eval.comparison.significance import SIGNIFICANCE, significance
from recall_eval.datasets.collections import DatasetError
from recall_eval.scoring import metrics as M

SHOWN = ("hit_rate@1", "hit_rate@3", "mrr", "injected_hit_rate", "silence_rate", "headline_precision",
         "balanced_accuracy")
PIPELINE = "default"


def load_run(path: Path) -> dict:
    """A run's results.json (``path`` is the file or its run folder)."""
    f = path / "results.json" if path.is_dir() else path
    if not f.is_file():
        raise DatasetError(f"{path}: no results.json (make one with `recall-eval run`)")
    return json.loads(f.read_text(encoding="utf-8"))


def _records(block: dict, what: str) -> list[M.Record]:
    rows = (block.get("pipelines") or {}).get(PIPELINE, {}).get("records")
    if not rows:
        raise DatasetError(f"{what}: no per-question records (rerun it with this version of `recall-eval run`)")
    fields = set(M.Record.__dataclass_fields__)
    return [M.Record(**{k: v for k, v in r.items() if k in fields}) for r in rows]


def blocks(run: dict) -> dict[str, dict]:
    """The question sets of one run: ``main`` (the shipped sets), then each held-out set."""
    return {"main": run, **(run.get("heldout") or {})}


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
        if any(i != ids[0] for i in ids[1:]):
            raise DatasetError(f"{s}: the runs asked different questions; a paired test needs the same ones")
        by_run = {}
        for k, r in zip(keys, runs, strict=True):
            pipe = blocks(r)[s]["pipelines"][PIPELINE]
            by_run[k] = {"metrics": {m: pipe["metrics"].get(m) for m in SHOWN},
                         "model_id": r["model"]["model_id"],
                         "query_ms_p50": (r.get("timings") or {}).get("query_ms_p50"),
                         "index_s": (r.get("timings") or {}).get("index_s")}
        out["sets"][s] = {"n": len(ids[0]), "runs": by_run, "p_values": significance(recs, keys[0])}
    return out


def _cell(v: dict | None, p: float | None) -> str:
    if not v or v.get("value") is None:
        return "-"
    lo, hi = v.get("ci95") or (v["value"], v["value"])
    mark = "†" if p is not None and p < SIGNIFICANCE else ""
    return f"{v['value']:.3f} [{lo:.2f},{hi:.2f}]{mark}"


def markdown(result: dict) -> str:
    head = ["set", "run", *SHOWN, "query p50 ms", "index s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s, block in result["sets"].items():
        for k, row in block["runs"].items():
            ps = block["p_values"].get(k, {})
            cells = [_cell(row["metrics"].get(m), ps.get(m)) for m in SHOWN]
            speed = [str(row["query_ms_p50"] or "-"), str(row["index_s"] or "-")]
            lines.append("| " + " | ".join([f"{s} ({block['n']})", k, *cells, *speed]) + " |")
    lines.append(f"\nvalue [95% bootstrap CI]; † = differs from {result['reference']} on the same questions, "
                 f"p < {SIGNIFICANCE} (paired randomization test, Holm-corrected over the runs). "
                 "query p50 / index s: the run's own timings (main sets' run), on a shared machine.")
    if result.get("skipped"):
        lines.append(f"not compared (a run without per-question records; rerun it): {', '.join(result['skipped'])}")
    return "\n".join(lines)
