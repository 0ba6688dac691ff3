"""CLINC150 adapter on a tiny synthetic data_full.json, the threshold search by hand,
and (slow, skipped where absent) a limited run on the real file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.models import DEFAULT_ID
from recall_eval.cli import main
from recall_eval.datasets.clinc150 import DEFAULT_PATH, subsample, write_notes
from recall_eval.scoring.clinc150 import at_published_accuracy, curve

INTENTS = {
    "transfer": ["move money to my savings account", "send fifty dollars to my checking account",
                 "transfer money between my accounts", "wire cash from checking to savings",
                 "move funds into savings now", "put money from checking into savings",
                 "transfer two hundred dollars to savings", "shift money over to my savings account"],
    "weather": ["what is the weather like today", "will it rain tomorrow in boston",
                "how hot is it outside right now", "weather forecast for this weekend",
                "is it going to snow tonight", "tell me the temperature outside",
                "do i need an umbrella today", "how cold will it be tomorrow morning"],
    "alarm": ["set an alarm for seven am", "wake me up at six thirty tomorrow",
              "create an alarm for noon", "alarm at five in the morning please",
              "set my alarm clock for eight", "i need an alarm at nine pm",
              "schedule a wake up alarm for six", "put an alarm on for seven fifteen"],
}


def synthetic(tmp_path: Path) -> Path:
    data = {
        "train": [[t, i] for i, ts in INTENTS.items() for t in ts],
        "val": [["move some money into savings", "transfer"], ["is it raining outside today", "weather"],
                ["set an alarm for six am", "alarm"]],
        "test": [["transfer fifty dollars to savings", "transfer"],
                 ["what is the weather tomorrow", "weather"],
                 ["wake me up at seven", "alarm"], ["ok", "alarm"]],
        "oos_val": [["who wrote the odyssey", "oos"], ["recommend a good sci-fi novel", "oos"]],
        "oos_test": [["what is the capital of peru", "oos"], ["how do i bake sourdough bread", "oos"]],
        "oos_train": [["play some jazz music", "oos"], ["who is the president of france", "oos"]],
    }
    path = tmp_path / "data_full.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_notes_one_per_intent(tmp_path):
    ids = write_notes([[t, i] for i, ts in INTENTS.items() for t in ts], tmp_path / "n")
    assert ids == ["alarm", "transfer", "weather"]
    text = (tmp_path / "n" / "transfer.md").read_text()
    assert 'name: "transfer"' in text
    assert "move money to my savings account; send fifty dollars" in text  # description
    assert "transfer two hundred dollars to savings" in text.split("---")[-1]  # body


def test_curve_and_reading_at_equal_accuracy_by_hand():
    rows = [{"top": t, "negative": None, "top_id": i, "long_enough": True}
            for t, i in [(0.9, "a"), (0.8, "x"), (0.85, "b"), (0.6, None), (0.7, None)]]
    labels = ["a", "b", "b", None, None]  # the second in-scope answer is wrong
    c = curve(rows, labels, neg_weight=0.0)
    # floor 0.85: speaks on 0.9 and 0.85 (both right), silent on both out-of-scope
    i = c["floor"].index(0.85)
    assert c["in_scope_accuracy"][i] == pytest.approx(2 / 3, abs=1e-4) and c["oos_recall"][i] == 1.0
    # at a published in-scope accuracy above anything we reach, no reading
    read = at_published_accuracy(c)
    assert read["BERT"]["our_oos_recall"] is None and read["SVM"]["our_oos_recall"] is None


def test_subsample_is_seeded_and_keeps_train():
    data = {"train": list(range(50)), "val": list(range(100)), "test": list(range(100)),
            "oos_val": list(range(10)), "oos_test": list(range(10))}
    a, b = subsample(data, 5, 1), subsample(data, 5, 1)
    assert a == b and len(a["val"]) == 5 and len(a["oos_val"]) == 5 and a["train"] == data["train"]
    assert subsample(data, 5, 2)["val"] != a["val"]


def test_clinc150_command_on_synthetic_data(tmp_path):
    data_file = synthetic(tmp_path)
    res = CliRunner().invoke(main, ["clinc150", "--data", str(data_file), "--model", "hash", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    for key in ("in_scope_accuracy", "oos_recall", "hit_rate@1", "hit_rate@3"):
        assert 0.0 <= data[key] <= 1.0
    assert data["n"] == {"intents": 3, "val": 3, "oos_val": 2, "test": 4, "oos_test": 2, "oos_train": 2}
    assert set(data["thresholds"]) == {"gap_floor", "top_floor", "neg_weight"}
    assert data["tuning"]["on"].startswith("oos_train as the collection's negatives")
    assert len(data["curve"]["floor"]) == len(data["curve"]["oos_recall"]) > 2
    assert data["published"]["BERT"] == {"in_scope_accuracy": 0.962, "oos_recall": 0.523}
    assert data["model"]["model_id"] == "hash-256"
    # three intents: every searched answer is in the top 3; "ok" is too short to be searched
    assert data["hit_rate@3"] == 0.75
    res = CliRunner().invoke(main, ["clinc150", "--data", str(data_file), "--model", "hash"])
    assert "BERT" in res.output and "96.2" in res.output and "52.3" in res.output
    assert "self-calibrated on oos_train" in res.output


def test_absent_file_is_a_clean_skip(tmp_path):
    res = CliRunner().invoke(main, ["clinc150", "--data", str(tmp_path / "nope.json"), "--json"])
    assert res.exit_code == 0
    assert "not found" in res.output and "skipped" in res.output


@pytest.mark.slow
@pytest.mark.skipif(not DEFAULT_PATH.exists(), reason=f"CLINC150 not at {DEFAULT_PATH}")
def test_real_clinc150_limited():
    res = CliRunner().invoke(main, ["clinc150", "--limit", "60", "--train-per-intent", "20", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["n"]["intents"] == 150 and data["n"]["test"] == 60
    assert data["model"]["model_id"] == DEFAULT_ID
    assert data["hit_rate@1"] >= 0.5  # 150 intents: chance is 0.7%
    assert 0.0 <= data["oos_recall"] <= 1.0


@pytest.mark.parametrize("data", [
    {"train": [["hi", "greet"]], "test": [], "oos_test": [], "oos_train": []},  # nothing to score
    {"train": [], "test": [["hi", "greet"]], "oos_test": [["x", "oos"]]},  # no note to score against
])
def test_a_file_with_nothing_to_score_is_one_line(tmp_path, data):
    """An outside tester's empty splits ended in numpy's IndexError, and no intents printed
    figures for 0 notes (stop 44)."""
    path = tmp_path / "data_full.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = CliRunner().invoke(main, ["clinc150", "--data", str(path), "--model", "hash", "--quiet"])
    said = res.output
    assert res.exit_code == 1 and "Traceback" not in said and ("nothing to score" in said or "no intent" in said), said
