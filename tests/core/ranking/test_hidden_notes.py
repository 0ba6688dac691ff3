"""The floor fitted on the notes themselves, each hidden in turn (recall.ranking.hidden_notes and
its use by recall.ranking.calibration): through ``choose`` and ``held_out_features``, and through
``Recall.index`` on the sample with the real default model."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest

from helpers.cli import run_cli
from helpers.paths import ROOT, SAMPLE_NOTES
from recall.api import Recall
from recall.config.load import load_config
from recall.indexing.indexer import SourceSpec
from recall.ranking import hidden_notes
from recall.ranking.calibration import Features, choose, held_out_features
from recall.ranking.calibration_file import FILE

USEM3 = "google/universal-sentence-encoder-multilingual-3"


def feats(top, neg, hit=None) -> Features:
    top, neg = np.array(top, float), np.array(neg, float)
    return Features(top, neg, np.array(hit if hit is not None else [False] * len(top)))


def test_the_table_is_read_both_ways_and_only_where_it_was_measured():
    assert hidden_notes.silence_for(USEM3, 0.90) == pytest.approx(0.399)
    between = hidden_notes.silence_for(USEM3, 0.875)
    assert 0.302 < between < 0.399
    assert hidden_notes.estimate(USEM3, between) == pytest.approx(0.875)
    # another model (e5's hidden questions sit near each other: no table), or a target outside it
    assert hidden_notes.silence_for("intfloat/multilingual-e5-small", 0.90) is None
    assert hidden_notes.silence_for(USEM3, 0.99) is None and hidden_notes.silence_for(USEM3, 0.6) is None


def test_the_floor_keeps_the_share_of_the_hidden_notes_questions_not_the_written_negatives():
    pos = feats(list(np.linspace(0.5, 1.0, 40)), [0.0] * 40, [True] * 40)
    # easy written negatives (their floor sits near 0.4), two in each half far up at 0.95
    easy = list(np.linspace(0.0, 0.4, 18))
    written = feats(easy + [0.95, 0.95] + easy + [0.95, 0.95], [0.0] * 40)
    notes = feats(list(np.linspace(0.4, 0.9, 50)), [0.0] * 50)
    plain, _, plain_silence = choose(pos, written, 0.9, weights=(0.0,))
    th, injected, silence = choose(pos, written, 0.9, weights=(0.0,), hidden=(notes, 0.4))
    assert plain["top_floor"] < 0.5 < th["top_floor"] < 0.95
    assert np.mean(notes.top >= th["top_floor"]) == pytest.approx(0.6)  # 0.4 of them kept silent
    assert injected == pytest.approx(np.mean(pos.top >= th["top_floor"])) and injected < 1.0
    assert silence == pytest.approx(0.9) and plain_silence == pytest.approx(0.9)  # on the written negatives
    # notes that answer each other's questions: the floor stops where every written negative is silent
    copies = feats([1.0] * 50, [0.0] * 50)
    capped = choose(pos, written, 0.9, weights=(0.0,), hidden=(copies, 0.4))[0]["top_floor"]
    assert 0.95 < capped < 1.0
    # hidden questions with nothing near them: the floor stops where 0.75 of the written ones are silent
    alone = feats([0.0] * 50, [0.0] * 50)
    th, _, silence = choose(pos, written, 0.9, weights=(0.0,), hidden=(alone, 0.4))
    assert silence == pytest.approx(0.75, abs=0.05) and th["top_floor"] > 0.0
    # the bank's guard still holds when the hidden notes' floor would go under it
    bank = feats(list(np.linspace(0.6, 0.95, 40)), [0.0] * 40)
    guarded = choose(pos, written, 0.9, weights=(0.0,), guard=bank, hidden=(notes, 0.4))[0]["top_floor"]
    assert np.mean(bank.top >= guarded) <= 0.1 and guarded > th["top_floor"]


def test_a_hidden_note_leaves_the_index_whole_not_only_its_questions():
    # note 0: a body chunk and a question chunk, both identical to the message; note 1 farther
    q = np.array([[1.0, 0.0]], np.float32)
    matrix = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]], np.float32)
    chunk_note, is_question = np.array([0, 0, 1]), np.array([False, True, False])
    nv = np.array([[0.0, 1.0]], np.float32)
    held = held_out_features(q, np.array([0]), matrix, chunk_note, is_question, nv)
    hidden = held_out_features(q, np.array([0]), matrix, chunk_note, is_question, nv, whole_note=True)
    assert held.top[0] == pytest.approx(1.0) and held.hit[0]
    assert hidden.top[0] == pytest.approx(0.6)  # note 1: the only one left


def _sample(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    shutil.copytree(SAMPLE_NOTES, folder)
    for name in ("questions.jsonl", "negatives.jsonl"):
        shutil.copy(ROOT / "datasets" / "sample" / name, folder / name)
    return folder


def test_index_fits_the_floor_on_hidden_notes_with_the_default_model(tmp_path, recall_home):
    """The real default model (USE-m3) on the sample with its questions and negatives, through
    `recall index` and `recall status`: the floor keeps the table's share of the hidden notes'
    questions silent and the estimate is the table's; ``fit_on_hidden_notes = false`` fits it on
    the written negatives as before."""
    folder = _sample(tmp_path)
    out = run_cli("index", "-q", str(folder)).stdout
    assert "estimated from the notes each hidden in turn" in out and "on the written negatives" in out
    assert "floor from the notes each hidden in turn" in run_cli("status").stdout
    table = tomllib.loads((recall_home / FILE).read_text(encoding="utf-8"))["thresholds"][USEM3]
    prov = table["provenance"]
    assert prov["hidden_notes_silence"] >= hidden_notes.silence_for(USEM3, 0.9) - 1e-4
    assert prov["calib_silence_rate"] == pytest.approx(hidden_notes.estimate(USEM3, prov["hidden_notes_silence"]),
                                                       abs=1e-3)
    run_cli("stop")
    off_home = tmp_path / "off"
    off_home.mkdir(mode=0o700)
    (off_home / "config.toml").write_text("[selector]\nfit_on_hidden_notes = false\n", encoding="utf-8")
    off = Recall(home=off_home, config=load_config(off_home / "config.toml", calibrated_layer=False))
    assert off.embedder.model_id == USEM3
    off.index([SourceSpec("dir", folder)])
    assert off.calibration.hidden_notes is None and off.calibration.silence >= 0.9
    assert off.calibration.top_floor != pytest.approx(table["top_floor"])
    off.store.close()


def _index(home: Path, *folders: Path):
    app = Recall(home=home, config=load_config(calibrated_layer=False))
    app.index([SourceSpec("dir", f) for f in folders])
    return app


def test_copies_of_a_note_are_one_note_and_near_copies_cannot_silence_everything(tmp_path):
    """A folder indexed twice (a copy of the notes beside them) is one collection: each copy answered
    the other's questions, so no note was ever hidden and the floor rose above anything a message
    scores (recall said nothing, to anyone). Near copies (each note with one line added) are notes
    of their own; the floor then stops where every written negative is silent, not above."""
    folder = _sample(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "negatives.jsonl").unlink()
    once = _index(tmp_path / "once", folder)
    twice = _index(tmp_path / "twice", folder, copy)
    assert twice.calibration.top_floor == pytest.approx(once.calibration.top_floor)
    assert twice.calibration.neg_weight == once.calibration.neg_weight
    near = tmp_path / "near"
    shutil.copytree(copy, near)
    for note in near.glob("*.md"):
        note.write_text(note.read_text(encoding="utf-8") + "\nCopied from the team wiki.\n", encoding="utf-8")
    both = _index(tmp_path / "near-home", folder, near)
    cal = both.calibration
    assert cal.written is not None and cal.written >= 0.99 - 1e-9 and cal.top_floor < 1.0
    assert cal.hidden_notes is None and cal.silence == cal.written  # the estimate is the written negatives'
    assert both.query("how should I name async functions in the FastAPI backend?").decision.chosen
    for app in (once, twice, both):
        app.store.close()


def test_a_few_notes_are_too_few_to_hide(tmp_path):
    """Six notes with questions: a hidden note's questions find nothing near them and, fitted on
    them, the floor let through 0.38 of the written negatives. Under ``MIN_NOTES`` the written
    negatives set the floor, as before."""
    folder = tmp_path / "few"
    folder.mkdir()
    notes = sorted(SAMPLE_NOTES.glob("*.md"))[:6]
    for note in notes:
        shutil.copy(note, folder / note.name)
    stems = {n.stem for n in notes}
    lines = (ROOT / "datasets" / "sample" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "questions.jsonl").write_text("".join(line + "\n" for line in lines
                                                    if json.loads(line)["note"] in stems), encoding="utf-8")
    shutil.copy(ROOT / "datasets" / "sample" / "negatives.jsonl", folder / "negatives.jsonl")
    app = _index(tmp_path / "home", folder)
    assert app.calibration.positives >= 20 and app.calibration.hidden_notes is None
    assert app.calibration.silence >= 0.9
    app.store.close()


def test_the_table_applies_to_enough_notes_with_eight_questions_or_so(tmp_path):
    """The table was measured with about eight questions per note: with three the share that lands
    a target moved (kinopeee 0.38 -> 0.20), so the written negatives set the floor."""
    assert hidden_notes.applies(np.repeat(np.arange(40), 8))
    assert not hidden_notes.applies(np.repeat(np.arange(40), 3))
    assert not hidden_notes.applies(np.repeat(np.arange(10), 8))
    folder = _sample(tmp_path)
    lines = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    (folder / "questions.jsonl").write_text("".join(
        json.dumps({"note": o["note"], "questions": o["questions"][:3]}) + "\n" for o in lines), encoding="utf-8")
    app = _index(tmp_path / "home", folder)
    assert app.calibration.positives >= 100 and app.calibration.hidden_notes is None
    assert app.calibration.silence >= 0.9
    app.store.close()
