"""recall-eval tune: the vectorised sweep agrees with decide(), cross-validation never
reports on questions it tuned on, the objective means what it says, and the write-back
keeps the config's comments and records provenance."""

from __future__ import annotations

import json
import math
import os
import random
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from recall.config.load import load_config, packaged_config_text, packaged_settings
from recall.ranking.selector import Hit
from recall_eval.cli import main
from recall_eval.datasets.collections import Question, collection_paths, load_sets
from recall_eval.scoring.stats import paired_bootstrap
from recall_eval.tuning.config_file import packaged_path, set_learned, set_thresholds, target_path
from recall_eval.tuning.cv import folds, mcnemar, run_protocol
from recall_eval.tuning.tune import (
    KEYS,
    Objective,
    Outcomes,
    Ranked,
    decide_all,
    gap_settings,
    margin_grid,
    rank_questions,
    rates,
    search,
    to_config,
)

SAMPLE = collection_paths("sample")


def synthetic(n: int = 200, seed: int = 0) -> list[Ranked]:
    """Random rankings, long descriptions (so byte caps drop notes), some short prompts."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.choice([0, 1, 2, 5, 12, 15])
        scores = sorted((rng.uniform(0.3, 0.95) for _ in range(k)), reverse=True)
        ranked = [Hit({"id": f"n{j}", "name": f"note {j}", "description": "x" * rng.choice([10, 300, 900]),
                       "path": f"/n{j}.md", "kind": "dir"}, s) for j, s in enumerate(scores)]
        para = rng.random() < 0.5
        text = rng.choice(["ok", "how do I run the migrations again?", "thanks, go on please"])
        q = Question(f"q{i}", "paraphrase" if para else "unrelated", text,
                     [f"n{rng.randrange(5)}"] if para else [], "en", f"set-{i % 3}")
        out.append(Ranked(q, ranked))
    return out


def test_vectorised_outcomes_agree_with_decide():
    ranked = synthetic()
    base = packaged_settings().rule("default")  # the [thresholds.default] table
    out = Outcomes(ranked, base, margin_grid(ranked, base))
    rng = np.random.default_rng(1)
    C = 300
    t = {"gap_floor": rng.uniform(-0.05, 0.4, C), "top_floor": rng.uniform(0.2, 1.0, C),
         "full_gap": rng.uniform(0.0, 0.5, C), "full_margin": rng.choice(out.margins, C)}
    t["gap_floor"][:10], t["full_gap"][10:20] = -math.inf, math.inf
    kind, hit = out.gap_rule(t)
    for c in range(C):
        s = base.replace(**{k: float(t[k][c]) for k in KEYS})
        k2, h2 = decide_all(ranked, s)
        assert (kind[c] == k2).all() and (hit[c] == h2).all(), c


def test_objective_constrained_prefers_any_feasible_point():
    obj = Objective()
    r = {"injected_hit_rate": np.array([0.9, 0.5, 0.4]), "silence_rate": np.array([0.80, 0.85, 0.95])}
    s = obj.score(r)
    assert s.argmax() == 1 and s[0] < 0 < s[2]
    assert "subject to silence_rate >= 0.85" in obj.describe()
    w = Objective("weighted", weights={"injected_hit_rate": 1, "silence_rate": 5})
    assert w.score(r).argmax() == 2
    with pytest.raises(ValueError, match="unknown metric"):
        Objective(target="mrr")


def test_search_reports_what_the_written_thresholds_do():
    ranked = synthetic(seed=3)
    base = packaged_settings().rule("default")  # the [thresholds.default] table
    out = Outcomes(ranked, base, margin_grid(ranked, base))
    raw, train = search(out, Objective())
    kind, hit = decide_all(ranked, base.replace(**to_config(raw)))
    got = rates(kind[None], hit[None], out.kinds)
    for m in train:
        assert got[m][0] == pytest.approx(train[m])
    assert train["silence_rate"] >= 0.85


def test_leave_one_set_out_never_reports_on_tuned_questions():
    ranked = synthetic(90)
    seen = []
    for name, tr, te in folds(ranked, ["set-0", "set-1"]):
        assert not set(tr) & set(te)
        assert {ranked[i].question.set_id for i in te} == {name}
        assert {ranked[i].question.set_id for i in tr} == {"set-0", "set-1"} - {name}
        seen += list(te)
    assert sorted(seen) == [i for i, r in enumerate(ranked) if r.question.set_id in ("set-0", "set-1")]
    one = folds(ranked, ["set-2"])  # one tuning set: 5 folds over its questions
    assert len(one) == 5 and sorted(i for _n, _tr, te in one for i in te) == \
        [i for i, r in enumerate(ranked) if r.question.set_id == "set-2"]


def test_paired_tests():
    a = np.array([1] * 30 + [0] * 10)
    assert mcnemar(a, a)["p_value"] == 1.0
    b = np.array([1] * 40)
    res = mcnemar(a, b)
    assert res["only_learned_correct"] == 10 and res["p_value"] < 0.01
    pb = paired_bootstrap(a, b)
    assert pb["diff"] == pytest.approx(0.25) and pb["ci95"][0] > 0 and pb["p_value"] < 0.05


@pytest.fixture(scope="module")
def hash_ranked(tmp_path_factory):
    config = load_config(tmp_path_factory.mktemp("cfg") / "none.toml")
    config = config.with_model("hash", "test")
    qs = load_sets(SAMPLE.question_files[:3])
    model_id, ranked, _rule = rank_questions(SAMPLE.notes_dir, qs, config, home=tmp_path_factory.mktemp("home"))
    return model_id, ranked, gap_settings(config, model_id)


def test_protocol_on_the_sample_with_the_test_model(hash_ranked):
    model_id, ranked, base = hash_ranked
    assert model_id == "hash-256" and len(ranked) == 120
    rep = run_protocol(ranked, base, Objective(), ["sample-a", "sample-b"], ["sample-c"], learned=True)
    assert rep["protocol"] == "leave-one-set-out" and rep["n_tune"] == 80 and rep["n_test"] == 40
    assert [f["held_out"] for f in rep["folds"]] == ["sample-a", "sample-b"]
    assert all(f["n_train"] == 40 for f in rep["folds"])
    for block in (rep["cv"], rep["tuned"]["test"], rep["before"]["test"]):
        assert set(block) >= {"injected_hit_rate", "silence_rate", "hit_rate@3", "short_rate", "full_rate"}
    lr = rep["learned"]
    assert 0 <= lr["cv"]["mcnemar"]["p_value"] <= 1 and "learned" in lr["test"]
    json.dumps(rep)  # the report is plain JSON


def test_write_back_keeps_comments_and_records_provenance():
    old = packaged_config_text()
    prov = {"tuned": "2026-01-01", "collections": ["sample:abc"], "tune_sets": ["a", "b"], "objective": "x"}
    values = {"gap_floor": 0.02, "top_floor": 0.84, "full_gap": 3.0, "full_margin": 0.05}
    new = set_thresholds(old, "test/model", values, prov)
    new = set_learned(new, "test/model", {"threshold": 0.3, "coef": [[1.0, 2.0]]}, prov, "gap")
    for line in old.splitlines():
        if line.strip():
            assert line in new, line  # every original line (comments, keys) survives
    data = tomllib.loads(new)
    t = data["thresholds"]["test/model"]
    assert {k: t[k] for k in KEYS} == values and t["provenance"]["tune_sets"] == ["a", "b"]
    # writing again replaces, not duplicates
    again = set_thresholds(new, "test/model", {**values, "gap_floor": 0.03}, prov)
    assert tomllib.loads(again)["thresholds"]["test/model"]["gap_floor"] == 0.03
    assert again.count('[thresholds."test/model"]') == 1
    # the same values written twice give the same file (no drifting blank lines)
    twice = set_learned(set_thresholds(new, "test/model", values, prov),
                        "test/model", {"threshold": 0.3, "coef": [[1.0, 2.0]]}, prov, "gap")
    assert twice == new


def test_targets(monkeypatch, tmp_path):
    monkeypatch.setenv("RECALL_CONFIG", str(tmp_path / "mine.toml"))
    assert target_path() == tmp_path / "mine.toml"
    assert target_path(packaged=True) == packaged_path()
    assert packaged_path().read_text(encoding="utf-8") == packaged_config_text()


def test_cli_dry_run_writes_nothing_and_a_real_run_feeds_score(monkeypatch, tmp_path):
    cfg = tmp_path / "user.toml"
    monkeypatch.setenv("RECALL_CONFIG", str(cfg))
    # written whether or not it beats the rule in force (that refusal has its own test): what is
    # written is what score then applies
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--accept-no-gain"]
    res = CliRunner().invoke(main, [*args, "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "+[thresholds.hash-256]" in res.output and "tuned, CV held-out" in res.output
    assert not cfg.exists()
    assert list((tmp_path / "reports" / "sample").glob("tune-*.json"))
    assert list((tmp_path / "reports" / "sample").glob("tune-*.md"))

    res = CliRunner().invoke(main, [*args, "--learned"])
    assert res.exit_code == 0, res.output
    data = tomllib.loads(cfg.read_text(encoding="utf-8"))
    prov = data["thresholds"]["hash-256"]["provenance"]
    assert prov["tune_sets"] == ["sample-a", "sample-b"] and prov["test_sets"] == ["sample-c"]
    assert prov["collections"][0].startswith("sample:") and "silence_rate >= 0.85" in prov["objective"]
    assert "cv_injected_hit_rate" in prov and "learned" in data

    # recall-eval score reads the effective config: the tuned table is what it applies
    from recall_eval.scoring.score import score_collection

    res = score_collection(SAMPLE.notes_dir, load_sets(SAMPLE.question_files[:1]), model="hash", baselines=False)
    assert res["thresholds_source"] == "hash-256"
    assert {k: res["thresholds"][k] for k in KEYS} == {k: data["thresholds"]["hash-256"][k] for k in KEYS}
    # the user's own table wins over the collection's self-calibration, as a unit: it carries the
    # neg_weight the thresholds were searched with, the calibrated rule's (it kept the packaged 0: AH09)
    assert res["thresholds"]["neg_weight"] == data["thresholds"]["hash-256"]["neg_weight"] > 0


def test_keep_thresholds_writes_only_the_learned_table_and_before_config_compares_with_it(tmp_path):
    cfg = tmp_path / "user.toml"
    cfg.write_text('[thresholds."hash-256"]\ngap_floor = 0.05\ntop_floor = 0.3\nfull_gap = 3.0\nfull_margin = 0.05\n')
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--config", str(cfg)]
    res = CliRunner().invoke(main, [*args, "--learned", "--keep-thresholds", "--json"],
                             env={"RECALL_CONFIG": str(cfg)})
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    kept = {"gap_floor": 0.05, "top_floor": 0.3, "full_gap": 3.0, "full_margin": 0.05}
    assert rep["before"]["thresholds"] == kept and rep["tuned"]["thresholds"] == kept
    assert all(f["thresholds"] == kept for f in rep["folds"])
    data = tomllib.loads(cfg.read_text())
    assert "provenance" not in data["thresholds"]["hash-256"] and "hash-256" in data["learned"]
    res = CliRunner().invoke(main, [*args, "--no-write", "--json"], env={"RECALL_CONFIG": str(cfg)})
    assert json.loads(res.stdout)["before"]["source"] == "hash-256"  # by default the rule in force (AH02)
    res = CliRunner().invoke(main, [*args, "--no-write", "--json", "--before", "original"],
                             env={"RECALL_CONFIG": str(cfg)})
    assert json.loads(res.stdout)["before"]["source"] == "original"


def test_cli_rejects_bad_splits_and_objectives():
    base = ["tune", "--collection", "sample", "--model", "hash", "--no-write"]
    res = CliRunner().invoke(main, [*base, "--test-sets", "sample-z"])
    assert res.exit_code == 1 and "unknown set 'sample-z'" in res.output
    res = CliRunner().invoke(main, [*base, "--tune-sets", "sample-a", "--test-sets", "sample-a"])
    assert res.exit_code == 1 and "both" in res.output
    res = CliRunner().invoke(main, [*base, "--min", "mrr=0.5"])
    assert res.exit_code == 1 and "unknown metric" in res.output


def test_unknown_benchmark_collection_is_one_line(tmp_path):
    res = CliRunner().invoke(main, ["tune", "--collection", "no-such-bench", "--model", "hash", "--no-write"])
    assert res.exit_code == 1 and "no notes" in res.output


def test_rules_120_skips_cleanly_when_absent():
    from helpers.paths import RULES_120

    if not RULES_120.is_dir():
        pytest.skip("rules-120 notes not present")
    qs = collection_paths("rules-120").question_files
    assert [Path(q).stem for q in qs] == ["rules-a", "rules-b", "rules-c"]


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--min", "silence_rate=-5", "between 0 and 1"), ("--min", "silence_rate=2", "between 0 and 1"),
    ("--min", "silence_rate=nan", "between 0 and 1"),
    ("--weights", "injected_hit_rate=-1,silence_rate=-1", "0 or more"),
    ("--weights", "injected_hit_rate=nan", "0 or more"), ("--weights", "injected_hit_rate=0,silence_rate=0", "above 0"),
])
def test_an_objective_no_rate_can_mean_is_refused_before_anything_runs(flag, value, said, tmp_path):
    """An outside tester's `--min silence_rate=-5` wrote floors of -3 into the live config:
    recall then spoke on "thanks, go on"."""
    cfg = tmp_path / "config.toml"
    extra = ["--objective", "weighted"] if flag == "--weights" else []
    res = CliRunner().invoke(main, ["tune", "--collection", "sample", "--model", "hash", "--config", str(cfg),
                                    *extra, flag, value], env={"RECALL_CONFIG": str(cfg)})
    assert res.exit_code == 1 and said in res.output and not cfg.exists(), res.output


def test_a_config_tune_rewrites_is_replaced_whole_in_its_own_line_endings(tmp_path):
    """tune truncated config.toml in place: a failed write (a full disk) left it empty."""
    from recall_eval.tuning.config_file import update

    cfg = tmp_path / "config.toml"
    cfg.write_bytes(b'# precious\r\nmodel = "hash"\r\n[thresholds]\r\n"hash-256" = { top_floor = 0.4 }\r\n')
    inode, mode = cfg.stat().st_ino, cfg.stat().st_mode & 0o777
    update(cfg, lambda t: set_thresholds(t, "hash-256", {"gap_floor": 0.1}, {"tuned": "today"}))
    data = cfg.read_bytes()
    assert data.startswith(b"# precious\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    table = tomllib.loads(data.decode())["thresholds"]["hash-256"]
    assert table["top_floor"] == 0.4 and table["gap_floor"] == 0.1 and table["provenance"]["tuned"] == "today"
    assert cfg.stat().st_ino != inode and cfg.stat().st_mode & 0o777 == mode  # a new file, its mode kept
    assert not [p for p in tmp_path.iterdir() if p.name != "config.toml"]


def test_a_failed_write_leaves_the_config_as_it_was(tmp_path):
    from recall_eval.tuning.config_file import update

    cfg = tmp_path / "config.toml"
    cfg.write_text('# precious\nmodel = "hash"\n')
    blocker = tmp_path / f".config.toml.{os.getpid()}.tmp"
    blocker.mkdir()  # where the new file is written first: the write fails, as on a full disk
    with pytest.raises(OSError):
        update(cfg, lambda t: set_thresholds(t, "hash-256", {"gap_floor": 0.1}, {}))
    assert cfg.read_text() == '# precious\nmodel = "hash"\n'


USE = "google/universal-sentence-encoder-multilingual-3"
SHAPES = {  # valid configs recall reads, each holding the model's thresholds in another form
    "dotted keys under [thresholds]": f'[thresholds]\n"{USE}".top_floor = 0.3\n[selector]\nmax_notes = 2\n',
    "dotted keys at the root": (f'# my settings\nmodel = "usem3"\nthresholds."{USE}".top_floor = 0.3  # mine\n'
                                'selector.max_notes = 2\ndaemon.hook_budget_ms = 250\n'),
    "an inline table at the root": f'thresholds = {{ "{USE}" = {{ top_floor = 0.3 }} }}\n[selector]\nmax_notes = 2\n',
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_tune_writes_into_any_form_of_the_thresholds_and_changes_nothing_else(tmp_path, text):
    """tune wrote dotted keys' provenance as a table of the root (every recall command then
    refused the file), moved the user's later root settings under its provenance (their hook
    budget silently back to the default), and ended in a traceback on an inline table (an
    outside tester's AH11, AH12, AH13). Whatever the form, the model's table gets the values
    and every other setting means what it meant."""
    from recall_eval.tuning.config_file import update

    cfg = tmp_path / "config.toml"
    cfg.write_text(text)
    update(cfg, lambda t: set_thresholds(t, USE, {"gap_floor": 0.1}, {"tuned": "today"}))
    before, after = tomllib.loads(text), tomllib.loads(cfg.read_text())
    table = after["thresholds"].pop(USE)
    assert table["top_floor"] == 0.3 and table["gap_floor"] == 0.1 and table["provenance"] == {"tuned": "today"}
    before["thresholds"].pop(USE)
    assert {k: v for k, v in after.items() if v} == {k: v for k, v in before.items() if v}
    assert load_config(cfg).thresholds[USE].gap_floor == 0.1


def test_a_rewrite_that_would_change_another_setting_is_refused_and_nothing_written(tmp_path):
    from recall.config.settings import ConfigError
    from recall_eval.tuning.config_file import update

    cfg = tmp_path / "config.toml"
    cfg.write_text('[selector]\nmax_notes = 2\n')
    with pytest.raises(ConfigError, match="was not changed: .* would also have changed selector.max_notes"):
        update(cfg, lambda t: set_thresholds(t.replace("max_notes = 2", ""), USE, {"gap_floor": 0.1}, {}))
    assert cfg.read_text() == '[selector]\nmax_notes = 2\n'


def test_thresholds_no_better_than_the_rule_in_force_are_not_written(tmp_path):
    """tune compared its thresholds with the packaged table, not with the collection's own
    calibration that `recall-eval score` applies, reported a gain, and wrote a table that turned
    the better calibrated rule off: held-out silence fell from 0.96 to 0.70 (an outside tester's
    AH02). What does no better than the rule in force on the held-out folds is not written."""
    cfg = tmp_path / "config.toml"
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--config", str(cfg),
            "--maximise", "silence_rate", "--min", "injected_hit_rate=0"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1 and "do no better than the rule in force" in res.output, res.output
    assert not cfg.exists()
    res = CliRunner().invoke(main, [*args, "--accept-no-gain"])
    assert res.exit_code == 0 and "hash-256" in tomllib.loads(cfg.read_text())["thresholds"], res.output


def test_a_dry_run_under_the_defaults_alone_shows_what_it_would_write(tmp_path):
    """`RECALL_CONFIG=/dev/null` (the packaged defaults alone): tune --dry-run, which writes
    nothing, was refused with a repair that moved the device (an outside tester's AH10)."""
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--dry-run", "--accept-no-gain"]
    res = CliRunner().invoke(main, args, env={"RECALL_CONFIG": os.devnull})
    assert res.exit_code == 0 and "+[thresholds.hash-256]" in res.output, res.output
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
