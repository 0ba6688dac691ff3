"""Typed results (recall_eval.results): the JSON they write keeps the shape reports and the
regression gate read, and the committed baseline loads and round-trips unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.paths import committed
from recall_eval.reports.regress import load_baseline
from recall_eval.results import Baseline, Metric, Metrics, PipelineResult, from_json, to_json
from recall_eval.scoring import metrics as M
from recall_eval.scoring.metrics import Record
from recall_eval.scoring.score import pipeline_result

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "reports" / "baseline" / "sample.json"


def rec(qid: str, kind: str = "paraphrase", ranked=("a",), expected=("a",), lang: str = "en") -> Record:
    return Record(qid, "set", kind, lang, qid, list(expected) if kind == "paraphrase" else [],
                  lang if kind == "paraphrase" else None, ranked=list(ranked),
                  decision="short" if kind == "paraphrase" else "nothing",
                  injected=list(ranked[:1]) if kind == "paraphrase" else [], bytes=100)


def test_a_metric_is_written_as_value_ci95_n():
    assert to_json(Metric(0.5, (0.25, 0.75), 8)) == {"value": 0.5, "ci95": [0.25, 0.75], "n": 8}
    assert to_json(Metric.empty()) == {"value": None, "ci95": None, "n": 0}
    assert from_json(Metric, {"value": 0.5, "ci95": [0.25, 0.75], "n": 8}) == Metric(0.5, (0.25, 0.75), 8)
    # a dict of metrics (how summarize returns them) serialises the same way
    assert to_json({"mrr": Metric(1.0, (1.0, 1.0), 2)}) == {"mrr": {"value": 1.0, "ci95": [1.0, 1.0], "n": 2}}


def test_a_pipeline_result_keeps_the_results_json_shape():
    records = [rec("q1"), rec("q2", ranked=("b", "a")), rec("u1", kind="unrelated", lang="ja")]
    result = pipeline_result("the default", records, seed=1)
    data = to_json(result)
    assert list(data) == ["label", "metrics", "by_lang", "cross_lang", "by_style", "records"]
    assert list(data["metrics"]) == list(M.HEADLINE)
    assert data["metrics"]["hit_rate@1"] == {"value": 0.5, "ci95": data["metrics"]["hit_rate@1"]["ci95"], "n": 2}
    assert data["by_lang"]["ja"]["silence_rate"]["value"] == 1.0
    assert data["records"][0]["id"] == "q1"
    json.dumps(data)  # plain JSON all the way down
    assert from_json(PipelineResult, json.loads(json.dumps(data))) == result


def test_the_committed_baseline_loads_and_round_trips_unchanged():
    committed(COMMITTED)
    data = json.loads(COMMITTED.read_text(encoding="utf-8"))
    baseline = load_baseline(COMMITTED)
    assert isinstance(baseline, Baseline) and baseline.collection == "sample"
    assert isinstance(baseline.metrics["mrr"], Metric) and 0 < baseline.metrics["mrr"].value <= 1
    assert to_json(baseline) == data
    assert json.dumps(to_json(baseline)) == json.dumps(data)  # same keys, same order


def test_a_broken_baseline_is_one_line_with_the_repair(tmp_path):
    from recall_eval.datasets.collections import DatasetError

    bad = tmp_path / "sample.json"
    bad.write_text(json.dumps({"collection": "sample"}), encoding="utf-8")
    with pytest.raises(DatasetError, match=f"recall-eval regress --collection sample --baseline {bad} --update"):
        load_baseline(bad)
    assert from_json(Metrics, {}) == {}


def test_a_score_report_is_what_results_json_holds(tmp_path):
    from recall_eval.datasets.collections import collection_paths, load_sets
    from recall_eval.results import ScoreReport
    from recall_eval.scoring.score import score_collection

    sample = collection_paths("sample")
    questions = load_sets(sample.question_files)[:24]
    results = score_collection(sample.notes_dir, questions, model="hash", home=tmp_path, baselines=False)
    report = from_json(ScoreReport, json.loads(json.dumps(results)))
    assert isinstance(report.pipelines["default"], PipelineResult)
    assert report.metrics == report.pipelines["default"].metrics and report.n_questions == 24
    assert to_json(report) == results
    assert json.dumps(to_json(report)) == json.dumps(results)  # same keys, same order
