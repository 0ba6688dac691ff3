"""Self-calibration (recall.ranking.calibration) and negatives (recall.ranking.negatives), through the
public API and the CLI: what `recall index` fits, where it writes it, who wins."""

from __future__ import annotations

import json
import stat
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest

from helpers.cli import run_cli
from helpers.models import DEFAULT_ID
from helpers.notes import write_note
from helpers.paths import SAMPLE_NOTES
from recall.api import Recall
from recall.indexing.indexer import SourceSpec
from recall.ranking.calibration import Features, _negative_features, choose
from recall.ranking.calibration_file import FILE
from recall.ranking.negatives import bank, read_negatives_file

ROOT = Path(__file__).resolve().parents[3]


def recall(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run_cli(*args, env={"RECALL_MODEL": "hash"}, check=check)


def feats(top, neg, hit=None) -> Features:
    top, neg = np.array(top, float), np.array(neg, float)
    return Features(top, neg, np.array(hit if hit is not None else [False] * len(top)))


def test_choose_meets_the_target_and_takes_the_most_hits():
    # positives: three hits at top 0.9/0.8/0.7; negatives: 0.75, 0.6, 0.5, 0.4 (nearest negative far)
    pos = feats([0.9, 0.8, 0.7] * 10, [0.0] * 30, [True] * 30)
    neg = feats([0.75, 0.6, 0.5, 0.4] * 10, [0.0] * 40)
    # a quarter may speak: the 0.75 negatives; the floor goes down to just above 0.6
    th, injected, silence = choose(pos, neg, 0.75, weights=(0.0,))
    assert silence >= 0.75 and 0.6 < th["top_floor"] <= 0.7 and injected == 1.0
    # all silent: above 0.75, so the 0.7 positives are lost
    th, injected, silence = choose(pos, neg, 1.0, weights=(0.0,))
    assert silence == 1.0 and th["top_floor"] > 0.75 and injected == pytest.approx(2 / 3)


def test_negatives_that_are_no_messages_cannot_pull_the_floor_below_the_banks():
    """A teammate's negatives.jsonl of nonsense scores near nothing against the notes: met on
    it alone, the target put the floor at the nonsense's level and recall spoke on nearly every
    message. The shipped bank (``guard``) keeps the floor where ordinary messages need it."""
    pos = feats([0.9, 0.8, 0.7] * 10, [0.0] * 30, [True] * 30)
    nonsense = feats(list(np.linspace(0.0, 0.1, 40)), [0.0] * 40)
    bank = feats(list(np.linspace(0.3, 0.6, 40)), [0.0] * 40)
    alone = choose(pos, nonsense, 0.9, weights=(0.0,))[0]["top_floor"]
    guarded = choose(pos, nonsense, 0.9, weights=(0.0,), guard=bank)[0]["top_floor"]
    assert alone < 0.1 < 0.55 < guarded
    assert choose(None, nonsense, 0.9, guard=bank)[0]["top_floor"] == guarded
    # real near misses above the bank: the guard changes nothing
    near = feats(list(np.linspace(0.5, 0.8, 40)), [0.0] * 40)
    assert choose(pos, near, 0.9, weights=(0.0,), guard=bank)[0] == choose(pos, near, 0.9, weights=(0.0,))[0]


def test_the_floor_lands_on_the_target_not_beyond_it():
    """A higher floor that hands over no fewer held-out questions is not taken: silence stops at
    the target, as promised, instead of spending real messages the positives did not show."""
    pos = feats([0.95] * 30, [0.0] * 30, [True] * 30)
    values = np.linspace(0.3, 0.7, 60)
    # both halves of the file alike (every other value): each keeps its target at the same floor
    neg = feats(list(values[0::2]) + list(values[1::2]), [0.0] * 60)
    th, injected, silence = choose(pos, neg, 0.9, weights=(0.0,))
    assert injected == 1.0 and silence == pytest.approx(0.9)
    assert values[53] < th["top_floor"] < values[54]
    # without positives the same floor
    assert choose(None, neg, 0.9)[0]["top_floor"] == th["top_floor"]


def test_the_target_holds_on_each_half_of_the_negatives_not_only_on_all():
    """A batch appended by another writer whose near misses are easy (low scores) cannot carry
    the estimate: the floor keeps the target on the harder half too, in file order."""
    pos = feats([0.95] * 30, [0.0] * 30, [True] * 30)
    hard, easy = list(np.linspace(0.5, 0.7, 30)), list(np.linspace(0.1, 0.3, 30))
    on_all = choose(pos, feats(list(np.r_[hard, easy]), [0.0] * 60), 0.9, weights=(0.0,))
    # On all 60 together six could speak, every one from the hard half (a fifth of it); on
    # each half, three: the floor sits above the hard half's 27th value.
    th, _, silence = on_all
    # the estimate is the harder half's: what the floor was fitted to keep
    assert silence == pytest.approx(0.9) and th["top_floor"] > hard[-4]
    for order in (hard + easy, easy + hard):
        th, _, silence = choose(pos, feats(order, [0.0] * 60), 0.9, weights=(0.0,))
        assert np.mean(np.array(hard) >= th["top_floor"]) <= 0.1 and silence == pytest.approx(0.9)
        assert np.mean(np.r_[hard, easy] >= th["top_floor"]) == pytest.approx(0.05)
        assert choose(None, feats(order, [0.0] * 60), 0.9)[0]["top_floor"] == th["top_floor"]


def test_choose_uses_the_margin_over_the_nearest_negative_when_it_separates():
    # same top scores for both; only the nearest negative tells them apart
    pos = feats([0.8] * 30, [0.5] * 30, [True] * 30)
    neg = feats([0.8] * 30, [0.79] * 30)
    th, injected, silence = choose(pos, neg, 0.9)
    assert th["neg_weight"] > 0 and injected == 1.0 and silence == 1.0


def test_each_negative_sees_every_other_negative_as_known_as_a_message_does():
    """Leave one out: a negative's nearest known negative is the best of all the others (the
    bank's included), never itself; two folds hid half of them and inflated the margin."""
    rng = np.random.default_rng(0)
    nv = rng.normal(size=(9, 6)).astype(np.float32)
    nv[1] = nv[0] + 0.01  # a near-duplicate pair: each is the other's nearest negative
    nv /= np.linalg.norm(nv, axis=1, keepdims=True)
    notes = rng.normal(size=(4, 6)).astype(np.float32)
    notes /= np.linalg.norm(notes, axis=1, keepdims=True)
    asked = [0, 1, 2, 3, 4, 5]  # the collection's own; 6..8 play the bank: known, never asked
    f = _negative_features(nv, asked, notes, np.arange(4))
    sims = nv @ nv.T
    for row, i in enumerate(asked):
        others = np.delete(sims[i], i)
        assert f.neg[row] == pytest.approx(others.max(), abs=1e-6)
        assert f.top[row] == pytest.approx((notes @ nv[i]).max(), abs=1e-6)
    assert f.neg[0] == pytest.approx(sims[0, 1], abs=1e-6) and f.neg[0] > 0.99
    # One negative alone has no other to compare with: -1, the lowest cosine, not -inf.
    alone = _negative_features(nv[:1], [0], notes, np.arange(4))
    assert alone.neg[0] == -1.0 and np.isfinite(alone.margin).all()


def test_without_questions_only_the_negatives_decide():
    neg = feats(list(np.linspace(0.3, 0.7, 50)), [0.0] * 50)
    th, injected, silence = choose(None, neg, 0.9)
    assert injected is None and silence >= 0.9 and th["neg_weight"] == 0.0


def test_negatives_sidecar_bad_lines_and_secrets(tmp_path):
    path = tmp_path / "negatives.jsonl"
    path.write_text('{"text": "how do I rename a git branch?"}\nnot json\n{"text": ""}\n'
                    '{"text": "use PGPASSWORD=hunter2hunter2hunter2x to log in?"}\n', encoding="utf-8")
    found, problems = read_negatives_file(path)
    assert [n.text for n in found][0] == "how do I rename a git branch?" and len(found) == 2
    assert "hunter2hunter2hunter2x" not in found[1].text
    assert len(problems) == 2 and all(":" in p.path for p in problems)
    assert len(bank()) >= 60 and {"en", "ja"} <= {"ja" if any(ord(c) > 0x3000 for c in n.text) else "en"
                                                  for n in bank()}


def _collection(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    for i, (stem, topic) in enumerate([("deploy", "deploys freeze on friday"), ("money", "money is decimal"),
                                       ("tz", "timestamps are utc"), ("flags", "feature flags via unleash"),
                                       ("migrations", "never edit an applied migration")]):
        write_note(folder, stem, topic.title(), topic, f"{topic}. details {i} " * 5)
    lines = [{"note": stem, "questions": [f"{stem} question {k} {w}" for k, w in enumerate(["a", "b", "c", "d",
                                                                                          "e"])]}
             for stem in ("deploy", "money", "tz", "flags", "migrations")]
    (folder / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    # near misses: on the notes' own topics (nearer them than the bank's chit-chat), about something else
    topics = ["deploys on friday", "decimal money", "utc timestamps", "feature flags", "applied migrations"]
    negatives = [f"unrelated near miss number {i} about kubernetes pods and {topics[i % 5]}" for i in range(40)]
    (folder / "negatives.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in negatives),
                                            encoding="utf-8")
    return folder


def _no_set_aside(home: Path) -> None:
    """The hash embedder's cosines put chit-chat as near these one-letter questions as their own
    notes: no question is set aside here (``recall.ranking.muting``: test_set_aside.py)."""
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.toml").write_text("[selector]\nset_aside_questions = false\n", encoding="utf-8")


def test_index_calibrates_writes_its_file_and_explain_names_it(tmp_path, recall_home, hash_model):
    folder = _collection(tmp_path)
    _no_set_aside(recall_home)
    out = recall("index", "-q", str(folder)).stdout
    assert "calibrated on 25 held-out note questions and" in out and "known unrelated messages" in out
    path = recall_home / FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    table = tomllib.loads(path.read_text(encoding="utf-8"))["thresholds"]["hash-256"]
    prov = table["provenance"]
    assert prov["mode"] == "questions+negatives" and prov["positives"] == 25
    assert prov["negatives_by_origin"][str(folder.resolve() / "negatives.jsonl")] == 40
    assert prov["target_silence"] == 0.9 and prov["aimed_silence_on_negatives"] == 0.9
    assert prov["calib_silence_rate"] >= prov["target_silence"]
    explain = recall("query", "--all", "--explain", "feature flags via unleash please").stdout
    assert f"in {path}" in explain and f"top_floor {table['top_floor']:.4f}" in explain
    # negatives.npz holds vectors and hashes, never the text
    npz = next((recall_home / "index").glob("*/negatives.npz"))
    assert b"kubernetes" not in npz.read_bytes()


def test_near_miss_margin_aims_higher_on_the_written_negatives(tmp_path, recall_home, hash_model):
    """``[selector] near_miss_margin``: the fit aims that much above the target on the
    collection's own negatives (real near misses may sit nearer the notes than written ones)."""
    folder = _collection(tmp_path)
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('[selector]\nnear_miss_margin = 0.05\n', encoding="utf-8")
    recall("index", "-q", str(folder))
    prov = tomllib.loads((recall_home / FILE).read_text(encoding="utf-8"))["thresholds"]["hash-256"]["provenance"]
    assert prov["target_silence"] == 0.9 and prov["aimed_silence_on_negatives"] == 0.95
    assert prov["calib_silence_rate"] >= 0.95


def test_a_users_own_table_wins_as_a_unit(tmp_path, recall_home, hash_model):
    folder = _collection(tmp_path)
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('[thresholds."hash-256"]\ntop_floor = 0.123\n', encoding="utf-8")
    recall("index", "-q", str(folder))
    app = Recall()
    t = app.rule().thresholds
    assert t.top_floor == 0.123 and t.neg_weight == 0.0  # nothing of the calibration mixed in
    assert t.origin.endswith("config.toml")
    app.store.close()


def test_a_running_process_takes_a_new_calibration(tmp_path, recall_home, hash_model):
    folder = _collection(tmp_path)
    app = Recall()
    app.index([SourceSpec("dir", folder)])
    before = app.query("feature flags via unleash please").rule.thresholds.top_floor
    other = Recall()  # another process's `recall calibrate`, with another target
    cal = other.calibrate(target=0.5)
    assert cal is not None and cal.top_floor != before
    after = app.query("feature flags via unleash please").rule.thresholds
    assert after.top_floor == pytest.approx(cal.top_floor, abs=1e-6)
    app.store.close()
    other.store.close()


def test_calibrate_command(tmp_path, recall_home, hash_model):
    _no_set_aside(recall_home)
    proc = recall("calibrate", check=False)
    assert proc.returncode == 1 and "recall index" in proc.stderr and "Traceback" not in proc.stderr
    assert "the packaged [default] table (not calibrated yet" in recall("status").stdout
    recall("index", "-q", str(_collection(tmp_path)))
    out = recall("calibrate", "--target-silence", "0.95").stdout
    assert "target 0.95" in out and str(recall_home / FILE) in out
    status = recall("status").stdout
    assert "self-calibrated" in status and "25 held-out note questions" in status and "target silence 0.95" in status
    (recall_home / FILE).write_text("[thresholds\n = damaged")  # not "not calibrated yet": say so
    status = recall("status").stdout
    assert f"{recall_home / FILE} is damaged and ignored: `recall calibrate` writes it again" in status
    recall("calibrate")
    assert "self-calibrated" in recall("status").stdout


@pytest.mark.slow
def test_real_model_calibration_on_the_sample_meets_its_target(recall_home):
    app = Recall()
    sample = ROOT / "datasets" / "sample"
    app.index([SourceSpec("dir", SAMPLE_NOTES, note_questions=sample / "questions.jsonl",
                          negatives=sample / "negatives.jsonl")])
    cal = app.calibration
    assert cal.model_id == DEFAULT_ID and cal.mode == "questions+negatives"
    lines = [json.loads(line) for line in (sample / "questions.jsonl").open(encoding="utf-8")]
    asked = sum(len(obj["questions"]) for obj in lines)
    restated = sum(len(obj.get("restatements", [])) for obj in lines)
    # the questions and restatements a bank message or a generic request would be handed a note
    # through are set aside (recall.ranking.muting): a few of a collection's written ones, never
    # many; the questions left are the positives
    assert asked - cal.muted <= cal.positives <= asked and cal.muted <= (asked + restated) * 0.05
    assert cal.silence >= cal.target_silence
    assert cal.injected is not None and cal.injected > 0.1
    app.store.close()


def test_negatives_about_nothing_near_the_notes_leave_the_packaged_floor(tmp_path, recall_home):
    """A background agent answered 40 well-formed negatives about cooking pasta: they counted as
    the 30 of the folder's own a fit needs, the floor fell from 0.33 to the bank's level (0.21),
    and ordinary coding questions got a note 11 times in 30 (an outside tester's AD01). Negatives
    no nearer the notes than the shipped chit-chat are no near misses: with too few near misses
    the packaged rule decides, as with none; the sample's own near misses still fit (real model)."""
    from recall.config.load import packaged_settings

    sample = ROOT / "datasets" / "sample"
    pasta = tmp_path / "negatives.jsonl"
    pasta.write_text("".join(json.dumps({"text": f"what is a good sauce for pasta number {i} with basil"}) + "\n"
                             for i in range(40)), encoding="utf-8")
    app = Recall()
    app.index([SourceSpec("dir", SAMPLE_NOTES, note_questions=sample / "questions.jsonl", negatives=pasta)])
    packaged = packaged_settings().thresholds_for(DEFAULT_ID)
    cal = app.calibration
    assert (cal.top_floor, cal.gap_floor) == (packaged.top_floor, packaged.gap_floor), cal
    assert cal.near_misses is not None and cal.near_misses < 30, cal
    app.index([SourceSpec("dir", SAMPLE_NOTES, note_questions=sample / "questions.jsonl",
                          negatives=sample / "negatives.jsonl")])
    assert app.calibration.near_misses >= 30 and app.calibration.top_floor != packaged.top_floor
    app.store.close()


def test_bad_negatives_are_one_warning_each_and_the_rest_is_used(tmp_path, recall_home, hash_model):
    folder = _collection(tmp_path)
    with open(folder / "negatives.jsonl", "a", encoding="utf-8") as fh:
        fh.write('not json\n{"text": 42}\n{"negatives": ["x"]}\n')
    proc = recall("index", "-q", str(folder))
    warnings = [line for line in proc.stderr.splitlines() if "negatives.jsonl" in line]
    assert len(warnings) == 3 and all(w.startswith("warning: ") for w in warnings)
    assert "Traceback" not in proc.stderr and "calibrated on 25 held-out note questions" in proc.stdout


def test_a_huge_negatives_file_is_read_only_in_part(tmp_path, recall_home, hash_model):
    folder = _collection(tmp_path)
    line = json.dumps({"text": "an unrelated message about kubernetes pods " + "x" * 200}) + "\n"
    (folder / "negatives.jsonl").write_text(line * 6000, encoding="utf-8")  # ~1.5 MB
    proc = recall("index", "-q", str(folder))
    assert "only its start is read" in proc.stderr and proc.returncode == 0


def test_a_hand_broken_calibration_file_never_breaks_a_command(tmp_path, recall_home, hash_model):
    recall("index", "-q", str(_collection(tmp_path)))
    path = recall_home / FILE
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("top_floor = ", 'top_floor = "high" # was ', 1), encoding="utf-8")
    out = recall("query", "--all", "--explain", "feature flags via unleash please")
    assert out.returncode == 0 and "Traceback" not in out.stderr
    # nan or -inf would switch the silence gate off: ignored, so the message stays unanswered
    for bad in ("nan", "-inf"):
        path.write_text(text.replace("top_floor = ", f"top_floor = {bad} # was ", 1)
                        .replace("gap_floor = ", f"gap_floor = {bad} # was ", 1), encoding="utf-8")
        chat = recall("query", "--json", "please tell me a joke about cats and dogs")
        assert chat.returncode == 0 and json.loads(chat.stdout)["decision"] == "nothing", chat.stdout
    # one bad number costs the whole table, and `recall status` names the file and its repair
    # (an outside tester's -50 neg_weight and -1e300 floor were used beside the packaged values)
    for key, bad in (("neg_weight", "-50.0"), ("top_floor", "-1e300"), ("top_floor", '"abc"')):
        path.write_text(text.replace(f"{key} = ", f"{key} = {bad} # was ", 1), encoding="utf-8")
        chat = recall("query", "--json", "what a lovely sunny day, let's get lunch")
        assert chat.returncode == 0 and json.loads(chat.stdout)["decision"] == "nothing", (bad, chat.stdout)
        status = recall("status")
        assert "damaged and ignored: `recall calibrate` writes it again" in status.stdout, status.stdout
    path.write_bytes(b"\x00\xff garbage [[[")
    assert recall("status").returncode == 0
    assert "calibrated on" in recall("calibrate").stdout  # rewritten
    assert tomllib.loads(path.read_text(encoding="utf-8"))["thresholds"]["hash-256"]["top_floor"]


def test_with_only_the_shipped_bank_the_packaged_rule_decides(tmp_path, recall_home, hash_model):
    """Notes alone (no questions, no negatives of their own): the bank's chit-chat says nothing
    about this collection's near misses, so the packaged rule (tuned on near misses) is the
    calibration, its gap floor included: not a floor fitted on the bank (issue #23)."""
    from recall.config.load import packaged_settings

    folder = _collection(tmp_path)
    (folder / "questions.jsonl").unlink()
    (folder / "negatives.jsonl").unlink()
    recall("index", "-q", str(folder))
    prov = tomllib.loads((recall_home / FILE).read_text(encoding="utf-8"))["thresholds"]["hash-256"]
    packaged = packaged_settings().thresholds_for("hash-256")
    assert prov["provenance"]["mode"] == "negatives only"
    assert (prov["top_floor"], prov["gap_floor"], prov["neg_weight"]) == (packaged.top_floor, packaged.gap_floor, 0.0)
