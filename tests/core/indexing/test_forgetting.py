"""What a person removes leaves every file recall keeps (stop 48, an outside tester's V01-V04).

A note deleted, a folder taken out of ``[sources]``, a note's generated questions: each was
gone from the answers and still on disk (the store's file while another connection held it,
the previous index generation, the questions file), or, for the folder, still answered.
"""

from __future__ import annotations

import json

from helpers.cli import run_cli
from helpers.leaks import find_leaks
from helpers.notes import write_note
from recall.api import Recall
from recall.indexing.indexer import SourceSpec
from recall.notes.questions import QUESTIONS_FILE
from recall.store.sqlite import Store

CANARY = "zebrafalconcanary"


def test_a_deleted_note_leaves_no_text_while_another_connection_holds_the_store(recall_home, hash_model, tmp_path):
    """The daemon keeps a connection open for hours: until the last one closed, the database
    file held the deleted rows' pages and the log their copies."""
    notes = tmp_path / "notes"
    write_note(notes, "keep", "Test conventions", "how we write tests", "use pytest fixtures")
    doomed = write_note(notes, "doomed", f"Billing {CANARY}", "how billing deploys", f"run the {CANARY} check first")
    Recall().index([SourceSpec("dir", notes)])
    held = Store(recall_home / "recall.db")  # as the daemon holds it
    try:
        assert held.counts()["notes"] == 2
        doomed.unlink()
        app = Recall()
        assert app.index([SourceSpec("dir", notes)]).removed == 1
        app.close()
        assert held.counts()["notes"] == 1
        assert find_leaks(recall_home, [CANARY]) == []
    finally:
        held.close()


def test_the_previous_generation_goes_when_it_holds_a_note_the_new_one_does_not(recall_home, hash_model, tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "keep", "Test conventions", "how we write tests", "use pytest fixtures")
    app = Recall()
    app.index([SourceSpec("dir", notes)])
    write_note(notes, "new", "Rollback", "how we roll back", "keep the previous release")
    app.index([SourceSpec("dir", notes)])  # only added: the previous generation may stay for a reader
    assert len(list((recall_home / "index").glob("*/gen-*"))) == 2
    write_note(notes, "keep", "Test conventions", "how we write tests", f"use {CANARY} fixtures")
    app.index([SourceSpec("dir", notes)])
    (notes / "keep.md").unlink()
    app.index([SourceSpec("dir", notes)])
    assert find_leaks(recall_home / "index", [CANARY]) == []
    assert len(list((recall_home / "index").glob("*/gen-*"))) == 1


def _config(home, rules: list[str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[sources]\nrules = {json.dumps(rules)}\n", encoding="utf-8")


def test_a_folder_taken_out_of_sources_is_dropped_and_one_given_by_hand_stays(recall_home, hash_model, tmp_path):
    rules, own = tmp_path / "rules", tmp_path / "own-rules"
    write_note(rules, "deploy", f"Deploy {CANARY}", "how we deploy billing", "blue green")
    write_note(own, "style", "Style", "how we name things", "snake case")
    project = tmp_path / "project"
    project.mkdir()
    _config(recall_home, [str(rules)])
    assert run_cli("index", "-q", cwd=project).returncode == 0
    assert run_cli("index", "-q", "--kind", "rule", str(own), cwd=project).returncode == 0
    assert Recall().store.counts()["sources"] >= 2
    _config(recall_home, [])
    res = run_cli("index", "-q", cwd=project)
    assert res.returncode == 0, res.stderr
    assert "no longer in [sources] rules: its 1 note(s) were dropped" in res.stderr
    kept = {root for _id, _kind, root, _p in Recall().store.sources()}
    assert str(own.resolve()) in kept and str(rules.resolve()) not in kept
    assert find_leaks(recall_home, [CANARY]) == []
    assert (rules / "deploy.md").exists()  # the folder itself is the user's


def test_generated_questions_of_a_deleted_note_are_forgotten_and_a_new_note_of_its_name_gets_none(
        recall_home, hash_model, tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "a", "Billing", "how billing ships", "run the check first")
    write_note(notes, "b", "Tests", "how we test", "pytest")
    (notes / QUESTIONS_FILE).write_text(
        json.dumps({"note": "a", "questions": [f"when do we run the {CANARY} check"], "note_hash": "0" * 16,
                    "by": "claude"}) + "\n"
        + json.dumps({"note": "b", "questions": ["how do we write a test"]}) + "\n"
        + json.dumps({"note": "gone-by-hand", "questions": ["a line someone wrote"]}) + "\n", encoding="utf-8")
    app = Recall()
    app.index([SourceSpec("dir", notes)])
    (notes / "a.md").unlink()
    app.index([SourceSpec("dir", notes)])
    left = (notes / QUESTIONS_FILE).read_text(encoding="utf-8")
    assert CANARY not in left
    assert '"note": "b"' in left and "gone-by-hand" in left  # lines written by hand stay as written
    write_note(notes, "a", "Lunch", "where we eat", "the cafe downstairs")
    app.index([SourceSpec("dir", notes)])
    assert find_leaks(recall_home, [CANARY]) == []


def test_a_questions_file_named_elsewhere_is_never_rewritten(recall_home, hash_model, tmp_path):
    """Only the folder's own questions file, where the background step writes, is pruned: a
    file passed as ``note_questions`` (a dataset, another folder's) is read, never changed."""
    notes = tmp_path / "notes"
    write_note(notes, "b", "Tests", "how we test", "pytest")
    elsewhere = tmp_path / "datasets" / "questions.jsonl"
    elsewhere.parent.mkdir()
    text = json.dumps({"note": "a", "questions": ["q"], "note_hash": "0" * 16, "by": "claude"}) + "\n"
    elsewhere.write_text(text, encoding="utf-8")
    Recall().index([SourceSpec("dir", notes, note_questions=elsewhere)])
    assert elsewhere.read_text(encoding="utf-8") == text
