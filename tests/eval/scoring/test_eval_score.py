"""Scoring through recall itself: the `score --json` contract, the evaluator contract,
and (slow) the real default model on the shipped sample."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.models import DEFAULT_ID
from helpers.paths import EVAL_NOTES as NOTES
from helpers.paths import EVAL_QUESTIONS as QUESTIONS
from helpers.paths import ROOT, SAMPLE_NOTES, committed
from recall_eval.cli import main
from recall_eval.datasets.collections import load_questions
from recall_eval.scoring import metrics as M
from recall_eval.scoring.score import Evaluator, score_collection

SAMPLE_SETS = sorted((ROOT / "datasets" / "sample" / "questions").glob("*.jsonl"))


def check_metric(v: dict, lo: float = 0.0, hi: float = 1.0) -> None:
    assert set(v) == {"value", "ci95", "n"}
    assert lo <= v["value"] <= hi
    assert v["ci95"][0] <= v["value"] + 1e-9 <= v["ci95"][1] + 2e-9


def test_score_json_is_one_object_on_stdout(tmp_path):
    res = CliRunner().invoke(main, ["score", "--notes", str(NOTES), "--questions", str(QUESTIONS),
                                    "--model", "hash", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # progress and notes went to stderr
    assert data["primary_metric"] == "balanced_accuracy" and data["greater_is_better"] is True
    assert data["model"]["model_id"] == "hash-256"
    assert data["n_paraphrase"] == 6 and data["n_unrelated"] == 4
    for name in M.HEADLINE[:-1]:
        check_metric(data["metrics"][name])
    check_metric(data["metrics"]["bytes_p95"], 0, 2048)
    assert set(data["by_lang"]) == {"en", "ja"}
    assert set(data["cross_lang"]) == {"same", "cross"}
    assert "records" not in data["pipelines"]["default"]
    assert list(data["pipelines"]) == ["default"]


def test_score_with_baselines_and_records():
    res = CliRunner().invoke(main, ["score", "--notes", str(NOTES), "--questions", str(QUESTIONS),
                                    "--model", "hash", "--json", "--baselines", "--records"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert list(data["pipelines"]) == ["default", "packaged-thresholds", "original-rule", "grep", "bm25"]
    rows = data["pipelines"]["default"]["records"]
    assert len(rows) == 10 and {"ranked", "scores", "gap", "decision", "injected", "bytes"} <= set(rows[0])
    # No packaged table for hash-256: the packaged-thresholds row runs the original
    # thresholds, so the original-rule baseline decides exactly as it does; the default row
    # runs the thresholds `recall index` calibrated on this folder.
    assert data["thresholds_source"] == "hash-256" and data["thresholds_origin"].endswith("calibration.toml")
    assert data["calibration"]["mode"] == "negatives only" and data["calibration"]["negatives"] > 0
    same = data["pipelines"]["original-rule"]["records"]
    packaged = data["pipelines"]["packaged-thresholds"]["records"]
    assert [r["decision"] for r in same] == [r["decision"] for r in packaged]
    # grep finds the note of the Japanese line by its kanji bigrams.
    grep = {r["id"]: r for r in data["pipelines"]["grep"]["records"]}
    assert grep["fx-05"]["ranked"][0] == "tax-line-rounding"


def test_several_sets_and_ranx_agree_on_real_records(tmp_path):
    other = tmp_path / "other.jsonl"
    lines = QUESTIONS.read_text(encoding="utf-8").replace('"fx-', '"oth-')
    other.write_text(lines, encoding="utf-8")
    qs = load_questions(QUESTIONS) + load_questions(other)
    res = score_collection(NOTES, qs, model="hash", baselines=False)
    assert res["n_questions"] == 20
    records = [M.Record(**r) for r in res["pipelines"]["default"]["records"]]
    oracle = M.ranx_metrics(records)
    for name, value in oracle.items():
        assert res["metrics"][name]["value"] == pytest.approx(value)


def test_given_home_is_a_cache_outside_the_users_index(tmp_path, recall_home):
    qs = load_questions(QUESTIONS)
    score_collection(NOTES, qs, model="hash", home=tmp_path / "cache", baselines=False)
    cached = list((tmp_path / "cache" / "eval").iterdir())
    assert len(cached) == 1 and (cached[0] / "recall.db").exists()
    assert not (tmp_path / "cache" / "recall.db").exists()  # the user's own store is untouched


def test_evaluator_contract():
    ev = Evaluator(NOTES, [QUESTIONS], name="fixture")
    assert ev.primary_metric == "fixture_balanced_accuracy" and ev.greater_is_better
    out = ev("hash")
    assert ev.primary_metric in out
    assert all(k.startswith("fixture_") and isinstance(v, float) for k, v in out.items())
    assert ev.last_result is not None and ev.last_result["model"]["spec"] == "hash"


def test_recall_model_env_picks_the_model(hash_model):
    res = CliRunner().invoke(main, ["score", "--notes", str(NOTES), "--questions", str(QUESTIONS), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["model"]["spec"] == "hash"


def test_missing_inputs_are_one_line_errors(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["score", "--questions", str(QUESTIONS), "--json"])
    assert res.exit_code == 1 and "give --notes DIR" in res.output
    res = runner.invoke(main, ["score", "--notes", str(tmp_path / "nope"), "--questions", str(QUESTIONS)])
    assert res.exit_code == 1 and "no such notes folder" in res.output
    res = runner.invoke(main, ["score", "--notes", str(NOTES), "--questions", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 1 and "no such question set" in res.output


@pytest.mark.slow
def test_real_default_model_on_the_sample(tmp_path):
    """`recall-eval score ... --json` exactly as documented, the default model, one shipped set."""
    committed(ROOT / "datasets" / "sample" / "questions", "*.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("RECALL_HOME", "RECALL_MODEL")}
    exe = Path(sys.executable).with_name("recall-eval")
    cmd = [str(exe), "score", "--notes", str(SAMPLE_NOTES), "--questions", str(SAMPLE_SETS[0]), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["model"]["model_id"] == DEFAULT_ID
    assert data["n_questions"] == 40
    for name in M.HEADLINE[:-1]:
        check_metric(data["metrics"][name])
    # Plausible ranges for a multilingual e5 on its own sample: it must clearly beat
    # chance (1/51 notes) at ranking and stay silent on most unrelated messages.
    assert data["metrics"]["hit_rate@3"]["value"] >= 0.4
    assert data["metrics"]["silence_rate"]["value"] >= 0.5


def _with_questions_file(tmp_path: Path) -> Path:
    import shutil

    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    stems = sorted(p.stem for p in notes.glob("*.md"))
    lines = [json.dumps({"note": s, "questions": [f"what does the note {s} say?"]}) for s in stems]
    (notes / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return notes


def test_score_indexes_the_notes_questions_and_shows_what_each_part_is_worth(tmp_path):
    notes = _with_questions_file(tmp_path)
    args = ["score", "--notes", str(notes), "--questions", str(QUESTIONS), "--model", "hash", "--json"]
    res = CliRunner().invoke(main, [*args, "--baselines"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["pipeline"]["note_questions"] == len(list(notes.glob("*.md")))
    assert data["pipeline"]["questions_file"].endswith("questions.jsonl")
    assert list(data["pipelines"]) == ["default", "no-questions", "dense", "packaged-thresholds", "original-rule",
                                       "grep", "bm25"]

    off = json.loads(CliRunner().invoke(main, [*args, "--baselines", "--no-note-questions"]).stdout)
    assert off["pipeline"]["note_questions"] == 0 and "no-questions" not in off["pipelines"]
    # the text-only row of the first run is exactly the --no-note-questions run
    assert off["pipelines"]["default"]["metrics"] == data["pipelines"]["no-questions"]["metrics"]

    bad = CliRunner().invoke(main, [*args, "--no-note-questions", "--note-questions", str(notes / "questions.jsonl")])
    assert bad.exit_code == 1 and "contradict" in bad.output
    missing = CliRunner().invoke(main, [*args, "--note-questions", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 1 and "no such note_questions file" in missing.output


def test_every_system_is_a_retriever_with_beirs_run_shape(tmp_path):
    """The core (through recall.api only) and the lexical baselines answer one interface:
    search({qid: text}) -> {qid: {note id: score}}, plus the hits and decision the gate saw."""
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall.ranking.scope import Scope
    from recall_eval.datasets.collections import read_notes
    from recall_eval.scoring.baselines import BM25Baseline
    from recall_eval.scoring.retrievers import CoreRetriever, LexicalRetriever
    from recall_eval.scoring.score import effective_config, source_spec

    app = Recall(home=tmp_path / "home", config=effective_config("hash"), embedder=get_embedder("hash"))
    app.index([source_spec(NOTES)])
    queries = {"a": "helm rollback in production", "b": "請求書の税額の丸め", "short": "hi"}
    core = CoreRetriever(app)
    run = core.search(queries)
    assert set(run) == set(queries)
    for qid, text in queries.items():
        res = app.query(text, Scope(everything=True))  # the hook's own answer, asked directly
        assert run[qid] == {h.note["id"]: h.score for h in res.hits}
        assert core.answer(qid).decision.kind == res.decision.kind
    assert run["short"] == {} and core.answer("short").decision.kind == "nothing"
    ranked = CoreRetriever(app, decide=False)  # Recall.rank: the same list, no decision (grids decide)
    assert ranked.search(queries)["a"] == run["a"] and ranked.answer("a").decision is None
    assert ranked.search({"s": "hi"})["s"]  # rank() ranks even a short message: the caller decides
    app.store.close()

    lex = LexicalRetriever(BM25Baseline(read_notes(NOTES)), app.rule(), floor=0.0)
    run = lex.search({"ja": "請求書の税額の丸め方を教えて", "none": "zzzz qqqq zzzz qqqq"})
    assert run["none"] == {} and lex.answer("none").decision.kind == "nothing"
    assert run["ja"] and all(s > 0 for s in run["ja"].values())
    assert lex.answer("ja").decision.kind == "short"
