"""A note's questions that read like any request are set aside (``recall.ranking.muting``): a
teammate's note listing generic coding requests as its ``questions:`` was handed over on a third of
ordinary messages it had nothing to do with (stop 43 and stop 44, outside testers).

On the real default model: the test is about where its cosines put generic requests.
"""

from __future__ import annotations

import json
import sqlite3

from helpers.cli import run_cli
from helpers.notes import write_note_with_questions


def _note(folder, stem: str, name: str, description: str, body: str, questions: list[str]) -> None:
    write_note_with_questions(folder, stem, name, description, body, questions, type_="project")


def _folder(tmp_path):
    folder = tmp_path / "notes"
    _note(folder, "money", "Money is Decimal, never float", "Invoice amounts are stored as Decimal and quantized",
          "Use Decimal for every amount; quantize to cents before storing.",
          ["can I keep the invoice total as a float?", "how do we round money amounts?"])
    _note(folder, "freeze", "No deploys on Friday afternoon", "Production deploys stop Friday at noon",
          "After the March outage we froze deploys from Friday noon to Monday.",
          ["can I ship this to production on Friday evening?", "when is the deploy freeze?"])
    _note(folder, "onboarding", "Read the onboarding page first",
          "Run ./scripts/setup-everything.sh before touching anything",
          "The onboarding script installs the hooks.",
          ["write tests for this module", "make this code faster", "explain this error to me",
           "clean up this file", "add comments to the code", "help me debug this"])
    return folder


def _set_aside(home) -> set[str]:
    db = sqlite3.connect(home / "recall.db")
    try:
        return {t for (t,) in db.execute("SELECT DISTINCT c.text FROM chunks c JOIN muted m"
                                         " ON m.text_hash = c.text_hash WHERE c.role = 'question'")}
    finally:
        db.close()


def _handed(message: str) -> str:
    return json.loads(run_cli("query", "--json", "--all", message).stdout).get("text") or ""


def test_generic_front_matter_questions_are_set_aside_and_the_note_stays_quiet(tmp_path, recall_home):
    out = run_cli("index", "-q", str(_folder(tmp_path))).stdout
    aside = _set_aside(recall_home)
    generic = {"write tests for this module", "make this code faster", "explain this error to me",
               "clean up this file", "add comments to the code", "help me debug this"}
    # In a folder this small the packaged rule lets much through: a question that "what is the capital
    # of Australia?" would reach its note by may go too; the note keeps its text and other questions.
    assert "note question(s) set aside" in out and len(aside & generic) >= 4 and len(aside - generic) <= 1, aside
    for message in ("could you write some unit tests for the parser module?", "this loop is slow, speed it up",
                    "what does this stack trace mean?"):
        assert "setup-everything" not in _handed(message), message
    assert "Decimal" in _handed("should the invoice total be a float or something else?")


def test_the_setting_keeps_every_question(tmp_path, recall_home):
    recall_home.mkdir(mode=0o700)
    (recall_home / "config.toml").write_text("[selector]\nset_aside_questions = false\n", encoding="utf-8")
    out = run_cli("index", "-q", str(_folder(tmp_path))).stdout
    assert "set aside" not in out and not _set_aside(recall_home)


def test_an_agents_generic_questions_and_small_talk_restatements_are_set_aside_too(tmp_path, recall_home):
    """What an agent CLI wrote into the questions file (a note's own text can steer it), restatements
    included: an outside tester's writer returned small talk as restatements and generic requests
    as questions, and the note spoke on "looks good, go on" and on "review my PR" (stop 45)."""
    folder = _folder(tmp_path)
    (folder / "onboarding.md").write_text("---\nname: Read the onboarding page first\ndescription: Run "
                                          "./scripts/setup-everything.sh before touching anything\n---\n"
                                          "The onboarding script installs the hooks.\n", encoding="utf-8")
    line = {"note": "onboarding", "by": "claude", "note_hash": "0" * 16,
            "questions": ["why is CI red on main today", "review my PR for the login page",
                          "can you fix the failing test", "refactor this function", "what does this error mean"],
            "restatements": ["ok, what's next?", "looks good, go on", "great, thanks! now commit it"]}
    (folder / "questions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    run_cli("index", "-q", str(folder))
    db = sqlite3.connect(recall_home / "recall.db")
    try:
        aside = {t for (t,) in db.execute("SELECT DISTINCT c.text FROM chunks c JOIN muted m"
                                          " ON m.text_hash = c.text_hash WHERE c.role = 'restatement'")}
    finally:
        db.close()
    assert aside, "no restatement set aside"
    for message in ("looks good, go on", "great, thanks! now commit it", "review my PR for the signup page",
                    "why is CI red on main again?"):
        assert "setup-everything" not in _handed(message), message
    assert "Decimal" in _handed("should the invoice total be a float or something else?")


def test_a_note_given_many_generic_questions_loses_every_one_that_carries_a_request(tmp_path, recall_home):
    """Each request set aside only the nearest of a note's questions, so a note given eight generic
    ones kept speaking through the others (an outside tester's writer, stop 45)."""
    folder = _folder(tmp_path)
    (folder / "onboarding.md").write_text("---\nname: Read the onboarding page first\ndescription: Run "
                                          "./scripts/setup-everything.sh before touching anything\n---\n"
                                          "The onboarding script installs the hooks.\n", encoding="utf-8")
    line = {"note": "onboarding", "by": "claude", "note_hash": "0" * 16,
            "questions": ["fix the failing test", "can you run the tests", "refactor this function",
                          "add a unit test for this", "why is CI red", "review my PR", "write a commit message",
                          "update the README"]}  # the tester's writer's own answer
    (folder / "questions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    run_cli("index", "-q", str(folder))
    for message in ("why is CI red on main today", "review my PR for the login page",
                    "the CI pipeline failed again on main, why?", "draft a commit message for these changes"):
        assert "setup-everything" not in _handed(message), message
    assert "Decimal" in _handed("should the invoice total be a float or something else?")
