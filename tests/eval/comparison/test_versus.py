"""recall-eval versus: two runs' answers compared question by question."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from recall_eval.cli import main
from recall_eval.comparison.versus import compare_runs
from recall_eval.datasets.collections import DatasetError
from recall_eval.scoring import metrics as M


def record(i: int, kind: str, right: bool) -> dict:
    exp = [f"n{i}"] if kind == "paraphrase" else []
    got = exp if right else ["other"]
    return M.Record(id=f"q{i}", set_id="s", kind=kind, lang="en", text=f"q{i}", expected=exp, note_lang="en",
                    ranked=got, injected=got if right or kind == "unrelated" else [],
                    decision="short" if (right and kind == "paraphrase") or (not right and kind == "unrelated")
                    else "nothing").as_dict()


def run(spec: str, right: int, n: int = 40) -> dict:
    recs = [record(i, "paraphrase", i < right) for i in range(n)] + \
        [record(n + i, "unrelated", True) for i in range(n)]
    summary = M.summarize([M.Record(**r) for r in recs])
    metrics = {k: {"value": v.value, "ci95": list(v.ci95 or []), "n": v.n} for k, v in summary.items()}
    return {"model": {"spec": spec, "model_id": spec}, "timings": {"query_ms_p50": 1.0, "index_s": 2.0},
            "pipelines": {"default": {"metrics": metrics, "records": recs}}}


def test_a_clearly_better_run_is_marked_and_an_equal_one_is_not(tmp_path):
    result = compare_runs([run("a", 10), run("b", 38), run("c", 10)], ["a", "b", "c"])
    p = result["sets"]["main"]["p_values"]
    assert p["b"]["hit_rate@1"] < 0.05 and p["c"]["hit_rate@1"] == 1.0
    for name, data in (("a", run("a", 10)), ("b", run("b", 38))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(data))
    out = CliRunner().invoke(main, ["versus", str(tmp_path / "a"), str(tmp_path / "b")])
    assert out.exit_code == 0, out.output
    assert "| main (80) | b | 0.950" in out.output and "†" in out.output


@pytest.mark.parametrize("change", [lambda r: r.clear(), lambda r: r.update(model="x"),
                                    lambda r: r.update(thresholds="x"), lambda r: r.update(timings="x"),
                                    lambda r: r.update(pipelines="x"), lambda r: r.update(heldout=[1]),
                                    lambda r: r["pipelines"].update(default=[])])
def test_a_result_of_another_shape_is_one_line(tmp_path, change):
    """A results.json whose model, thresholds, timings or pipelines had another type was a traceback
    (KeyError, TypeError, AttributeError; an outside tester's, stop 55)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(run("a", 10)))
    bad = run("b", 20)
    change(bad)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.json").write_text(json.dumps(bad))
    out = CliRunner().invoke(main, ["versus", str(tmp_path / "a"), str(tmp_path / "b")])
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "is not a `recall-eval run` result" in out.output, out.output


def test_runs_over_different_questions_are_refused():
    other = run("b", 20)
    other["pipelines"]["default"]["records"][0]["id"] = "elsewhere"
    with pytest.raises(DatasetError, match="different questions"):
        compare_runs([run("a", 10), other], ["a", "b"])


def scored_run(spec: str, related_top: list[float], unrelated_top: list[float], neg_weight: float = 0.0) -> dict:
    """Every related question has its note first; ``*_top``: the gate's top scores."""
    recs = [M.Record(id=f"r{i}", set_id="s", kind="paraphrase", lang="en", text="t", expected=[f"n{i}"],
                     note_lang="en", ranked=[f"n{i}", "x"], top=t, negative=t - 0.1).as_dict()
            for i, t in enumerate(related_top)]
    recs += [M.Record(id=f"u{i}", set_id="s", kind="unrelated", lang="en", text="t", expected=[], note_lang=None,
                      ranked=["x"], top=t, negative=t - 0.1).as_dict() for i, t in enumerate(unrelated_top)]
    summary = M.summarize([M.Record(**r) for r in recs])
    metrics = {k: {"value": v.value, "ci95": list(v.ci95 or []), "n": v.n} for k, v in summary.items()}
    return {"model": {"spec": spec, "model_id": spec}, "thresholds": {"neg_weight": neg_weight},
            "pipelines": {"default": {"metrics": metrics, "records": recs}}}


def test_separation_is_the_trade_off_area_whatever_the_floor_and_is_tested_paired():
    import numpy as np

    rng = np.random.default_rng(0)
    mixed = rng.uniform(0, 1, 40)
    apart = scored_run("apart", list(0.6 + 0.4 * mixed[:20]), list(0.5 * mixed[20:]))  # every related above
    overlap = scored_run("overlap", list(mixed[:20]), list(mixed[20:]))
    result = compare_runs([overlap, apart], ["overlap", "apart"])["sets"]["main"]
    sep = {k: v["metrics"]["separation"] for k, v in result["runs"].items()}
    assert sep["apart"]["value"] == 1.0 and sep["apart"]["ci95"][1] == 1.0 and 0.8 < sep["apart"]["ci95"][0] < 1.0
    assert 0.3 < sep["overlap"]["value"] < 0.7 and sep["overlap"]["ci95"][0] < sep["overlap"]["value"]
    assert result["p_values"]["apart"]["separation"] < 0.05
    # a related question whose note is not in the top 3 can never be handed over: it counts below any unrelated one
    missed = scored_run("missed", [0.9] * 20, [0.1] * 20)
    for r in missed["pipelines"]["default"]["records"][:10]:
        r["ranked"] = ["a", "b", "c", r["expected"][0]]
    got = compare_runs([missed, apart], ["missed", "apart"])["sets"]["main"]["runs"]["missed"]
    assert got["metrics"]["separation"]["value"] == 0.5


def test_out_does_not_replace_a_file_without_force(tmp_path):
    """`versus A B --out mine.md` overwrote mine.md (an outside tester's); export-beir, import-beir,
    generate and expand refuse alike."""
    for name, data in (("a", run("a", 10)), ("b", run("b", 38))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(data))
    mine = tmp_path / "mine.md"
    mine.write_text("my own notes\n")
    args = ["versus", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(mine)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 1 and "exists; give --force to replace it" in out.output, out.output
    assert mine.read_text() == "my own notes\n"
    out = CliRunner().invoke(main, [*args, "--force"])
    assert out.exit_code == 0, out.output
    assert "| main (80) | b |" in mine.read_text()
