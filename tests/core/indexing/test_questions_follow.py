"""A generated questions line belongs to the note whose bytes it was written for (an outside
tester's 3 and 4): a note renamed keeps its questions whether ``recall index`` or the watcher
sees the rename first, and a note saved later under the old name does not get them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.env import env_with
from helpers.notes import write_note
from helpers.paths import PY
from recall.authoring import notegen
from recall.notes.questions import QUESTIONS_FILE

QUESTION = "how do I fizzbuzz the gronk"


def _line(path: Path, questions: list[str]) -> str:
    """A line as recall's background step writes it (recall.authoring.notegen.write_questions)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return json.dumps({"note": path.stem, "questions": questions, "note_hash": digest, "by": "claude"}) + "\n"


def _folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    for i in (1, 2, 3):
        write_note(notes, f"n{i}", f"note{i}", f"description {i}", f"body of note {i}")
    (notes / QUESTIONS_FILE).write_text(_line(notes / "n1.md", [QUESTION]), encoding="utf-8")
    return notes


def _holders(question: str = QUESTION) -> list[str]:
    """The notes whose indexed text includes ``question`` (a question chunk shows as the snippet)."""
    out = run_cli("search", "-k", "5", "--json", question)
    assert out.returncode == 0, out.stderr
    return [r["id"] for r in json.loads(out.stdout)["results"] if r["snippet"] == question]


def _index(notes: Path, *flags: str) -> str:
    out = run_cli("index", *flags, str(notes))
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_a_note_renamed_and_its_old_name_reused_keeps_its_questions(recall_home, hash_model, tmp_path):
    """`mv n1.md archived1.md` and a new note at n1.md: the questions went to the new,
    unrelated note, and archived1 (exactly the bytes the line was written for) lost them."""
    notes = _folder(tmp_path)
    _index(notes)
    assert _holders() == ["n1"]
    (notes / "n1.md").rename(notes / "archived1.md")
    write_note(notes, "n1", "shopping", "an unrelated new note", "buy milk", type_="user")
    # the background step agrees: the new note is asked for, the renamed one is not
    pending = [p.name for p in notegen.folder_state(notes).pending]
    assert "n1.md" in pending and "archived1.md" not in pending, pending
    _index(notes)
    assert _holders() == ["archived1"]
    # the line now names the note it belongs to: an edit of archived1 keeps them, as any edited note's
    assert json.loads((notes / QUESTIONS_FILE).read_text(encoding="utf-8"))["note"] == "archived1"
    with open(notes / "archived1.md", "a", encoding="utf-8") as fh:
        fh.write("and one more line\n")
    _index(notes)
    assert _holders() == ["archived1"]
    _index(notes, "--rebuild")
    assert _holders() == ["archived1"]


def test_two_notes_that_swap_names_keep_their_own_questions(recall_home, hash_model, tmp_path):
    notes = _folder(tmp_path)
    with open(notes / QUESTIONS_FILE, "a", encoding="utf-8") as fh:
        fh.write(_line(notes / "n2.md", ["where is the wibble flange"]))
    _index(notes)
    (notes / "n1.md").rename(notes / "tmp.md")
    (notes / "n2.md").rename(notes / "n1.md")
    (notes / "tmp.md").rename(notes / "n2.md")
    _index(notes)
    assert _holders() == ["n2"]
    assert _holders("where is the wibble flange") == ["n1"]


def test_a_note_moved_over_another_takes_its_own_questions_not_the_replaced_notes(recall_home, hash_model,
                                                                                    tmp_path):
    notes = _folder(tmp_path)
    with open(notes / QUESTIONS_FILE, "a", encoding="utf-8") as fh:
        fh.write(_line(notes / "n2.md", ["where is the wibble flange"]))
    _index(notes)
    (notes / "n2.md").replace(notes / "n1.md")  # `mv n2.md n1.md`: the note n1 was is gone
    _index(notes)
    assert _holders() == []
    assert _holders("where is the wibble flange") == ["n1"]
    lines = [json.loads(line) for line in (notes / QUESTIONS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [(obj["note"], obj["questions"]) for obj in lines] == [("n1", ["where is the wibble flange"])]


def test_a_renamed_note_indexed_without_its_questions_gets_them_back(recall_home, hash_model, tmp_path):
    """A note indexed under its new name before its line was there (a watcher's save, a questions
    file restored from git): `recall index` and `--rebuild` took it for unchanged, for good."""
    notes = _folder(tmp_path)
    line = (notes / QUESTIONS_FILE).read_text(encoding="utf-8")
    (notes / QUESTIONS_FILE).unlink()
    _index(notes)
    (notes / "n1.md").rename(notes / "renamed1.md")
    _index(notes)
    assert _holders() == []
    (notes / QUESTIONS_FILE).write_text(line, encoding="utf-8")
    out = _index(notes)
    assert _holders() == ["renamed1"], out


def _wait(predicate, timeout: float) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.process
@pytest.mark.parametrize("reuse", [False, True], ids=["renamed", "renamed-and-name-reused"])
def test_a_note_renamed_while_recall_watch_runs_keeps_its_questions(recall_home, hash_model, tmp_path, reuse):
    """With the watcher on, a renamed note was indexed without its questions, and `recall index`
    and `--rebuild` then called it unchanged: it lost them until its bytes changed."""
    notes = _folder(tmp_path)
    _index(notes)
    log = tmp_path / "watch.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([PY, "-m", "recall.cli", "watch"], env=env_with(), stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: b"watching " in log.read_bytes(), 60), log.read_text()
        (notes / "n1.md").rename(notes / "renamed1.md")
        if reuse:
            write_note(notes, "n1", "shopping", "an unrelated new note", "buy milk", type_="user")
        assert _wait(lambda: run_cli("search", "-k", "5", "--json", "note1").stdout.count("renamed1.md") > 0, 20)
        assert _wait(lambda: _holders() == ["renamed1"], 10), (_holders(), log.read_text())
    finally:
        proc.terminate()
        proc.wait(10)
    _index(notes)
    assert _holders() == ["renamed1"]
    _index(notes, "--rebuild")
    assert _holders() == ["renamed1"]
