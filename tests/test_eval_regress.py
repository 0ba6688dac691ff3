"""recall-eval regress: the committed config passes its own baseline, a deliberately
worse config fails with a message naming metric, value, baseline and tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval.cli import main
from eval.regress import GATED, Check, check

ROOT = Path(__file__).resolve().parent.parent
SILENT = """
[thresholds."hash-256"]
gap_floor = 0.025
top_floor = 0.99    # nothing scores this high: the selector never speaks
full_gap = 0.11
full_margin = 0.05
"""


def regress(*args: str):
    return CliRunner().invoke(main, ["regress", "--collection", "sample", "--model", "hash", *args])


@pytest.fixture
def baseline(tmp_path) -> Path:
    path = tmp_path / "baseline.json"
    res = regress("--update", "--baseline", str(path))
    assert res.exit_code == 0, res.output
    return path


def test_committed_config_passes_its_baseline(baseline):
    data = json.loads(baseline.read_text())
    assert data["model"]["model_id"] == "hash-256" and len(data["per_question"]["silence_rate"]) == 80
    res = regress("--baseline", str(baseline))
    assert res.exit_code == 0, res.output
    assert "regression gate passed" in res.output
    for m in GATED:
        assert m in res.output


def test_a_config_that_silences_everything_fails(baseline, tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text(SILENT, encoding="utf-8")
    monkeypatch.setenv("RECALL_CONFIG", str(bad))
    res = regress("--baseline", str(baseline))
    assert res.exit_code == 1, res.output
    assert "FAIL" in res.output
    assert "regression: injected_hit_rate 0.000 < baseline" in res.output and "tolerance" in res.output


def test_missing_baseline_and_wrong_model_are_one_line_errors(tmp_path, baseline):
    res = regress("--baseline", str(tmp_path / "none.json"))
    assert res.exit_code == 1 and "--update" in res.output
    data = json.loads(baseline.read_text())
    data["model"]["model_id"] = "other/model"
    baseline.write_text(json.dumps(data))
    res = regress("--baseline", str(baseline))
    assert res.exit_code == 1 and "other/model" in res.output


def records(hits: list[int], silent: list[int]) -> dict:
    rows = [{"id": f"p{i}", "kind": "paraphrase", "ranked": ["a"], "expected": ["a" if h else "b"],
             "injected": ["a"] if h else [], "decision": "short"} for i, h in enumerate(hits)]
    rows += [{"id": f"u{i}", "kind": "unrelated", "ranked": [], "expected": [], "injected": [],
              "decision": "nothing" if s else "short"} for i, s in enumerate(silent)]
    return {"pipelines": {"default": {"records": rows}}}


def fake_baseline(hits: list[int], silent: list[int], ids_suffix: str = "") -> dict:
    from eval.regress import per_question

    pq = per_question(records(hits, silent)["pipelines"]["default"]["records"])
    pq = {m: {k + ids_suffix: v for k, v in d.items()} for m, d in pq.items()}
    mean = {m: sum(d.values()) / len(d) for m, d in pq.items()}
    return {"per_question": pq, "metrics": {m: {"value": mean[m], "ci95": [mean[m] - 0.1, mean[m] + 0.1]}
                                            for m in GATED}}


def by_metric(checks: list[Check]) -> dict[str, Check]:
    return {c.metric: c for c in checks}


def test_paired_tolerance_allows_noise_and_catches_a_real_drop():
    base = fake_baseline([1] * 40, [1] * 40)
    few = by_metric(check(base, records([0] * 2 + [1] * 38, [1] * 40)))  # two flips: noise
    assert few["injected_hit_rate"].ok and few["injected_hit_rate"].paired
    many = by_metric(check(base, records([0] * 8 + [1] * 32, [1] * 40)))  # eight flips: a regression
    assert not many["injected_hit_rate"].ok and many["silence_rate"].ok
    same = by_metric(check(base, records([1] * 40, [1] * 40)))
    assert all(c.ok and c.tolerance == 0 for c in same.values())


def test_unpaired_questions_fall_back_to_the_baseline_interval():
    base = fake_baseline([1] * 40, [1] * 40, ids_suffix="-old")
    c = by_metric(check(base, records([0] * 8 + [1] * 32, [1] * 40)))["injected_hit_rate"]
    assert not c.paired and c.tolerance == pytest.approx(0.1) and not c.ok  # 0.8 < 1.0 - 0.1


@pytest.mark.slow
def test_the_real_gate_passes_with_the_committed_config_and_baseline():
    committed = ROOT / "reports" / "baseline" / "sample.json"
    if not committed.is_file():
        pytest.skip("no committed baseline")
    res = CliRunner().invoke(main, ["regress", "--collection", "sample"])
    assert res.exit_code == 0, res.output
