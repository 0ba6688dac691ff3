"""A secret named in prose or in a question and its answer never reaches the index (stop 60).

An outside privacy tester's "what is the password? it is X", written by an agent CLI into a note's
questions, was kept in ``questions.jsonl``, ``recall.db`` and the lexical index. Here a note says it in
its body, its description and its questions, ``recall index`` runs as a process, and neither the
store (read with ``sqlite3``) nor any other file under RECALL_HOME holds the value.
"""

from __future__ import annotations

import json
import random
import sqlite3
import string

import pytest

from helpers.cli import run_cli_process
from helpers.leaks import find_leaks
from helpers.notes import write_note
from recall.notes.questions import QUESTIONS_FILE

pytestmark = pytest.mark.process


def _answer(rng: random.Random) -> str:
    """A realistic answer given in prose: ``AnsPw-…-31``, never written out literally."""
    return "AnsPw-" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(10)) \
        + f"-{rng.randint(10, 99)}"


def test_a_password_asked_and_answered_in_prose_is_in_no_file_recall_index_writes(recall_home, hash_model,
                                                                                    tmp_path):
    rng = random.Random(61)
    body, described, asked = _answer(rng), _answer(rng), _answer(rng)
    control = "Controlword" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))
    notes = tmp_path / "notes"
    write_note(notes, "staging-db", "Staging database", f"what's the db password? it's {described}",
               f"Connecting to staging.\n\nwhat is the password? it is {body}\n\nThe word {control} is no secret.")
    (notes / QUESTIONS_FILE).write_text(json.dumps(
        {"note": "staging-db", "questions": [f"what is the password? it is {asked}", "how do I reach staging?"]})
        + "\n", encoding="utf-8")

    out = run_cli_process("index", "-q", str(notes))
    assert out.returncode == 0, out.stderr

    con = sqlite3.connect(recall_home / "recall.db")
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert control in dump  # the note was indexed...
    secrets = [body, described, asked]
    assert [s for s in secrets if s in dump or s.lower() in dump.lower()] == []  # ... with no answer in it
    assert "what is the password? it is [REDACTED]" in dump
    assert any(p.name == "lexical.npz" for p in recall_home.rglob("*")), sorted(recall_home.rglob("*"))
    assert find_leaks(recall_home, [control]) != []  # the scan finds what is there...
    assert find_leaks(recall_home, secrets) == []  # ... and no answer in any file (recall.db, lexical.npz...)
