"""A note with questions ordered also by its prototype, the mean of its questions (``[search]
prototype_weight``): a note whose questions together are near a message outranks one a single
question of which echoes it, while the scores the gate sees, and so whether recall speaks, stay
the best rows'. The prototypes are built with the index, one row per note."""

import numpy as np
import pytest

from helpers.notes import write_note, write_note_with_questions
from helpers.ranking import ask_once, order_app
from recall.errors import IndexDamaged
from recall.indexing.indexer import SourceSpec
from recall.store.vectors import index_dir, load_index

MESSAGE = "rotate the staging database password before the release"


def _notes(tmp_path):
    folder = tmp_path / "notes"
    # one question echoes the message word for word; the others are about something else
    write_note_with_questions(folder, "echo", "echo", "Zebras", "Zebras eat hay at seven.",
                              [MESSAGE, "zebra feeding times", "tabs or spaces in yaml"])
    # every question is near the message, none word for word
    write_note_with_questions(folder, "runbook", "runbook", "Passwords",
                              "Passwords rotate through the vault; staging first, then production.",
                              ["rotate the staging database password", "staging database password before release",
                               "rotate the database password before the release"])
    write_note(folder, "tabs", "tabs", "Editor settings", "Use four spaces.")  # no questions
    return folder


def _ask(home, notes, weight: float):
    return ask_once(home, notes, MESSAGE, best_rows=1, prototype_weight=weight, lexical_weight_with_questions=0.0)


def test_a_note_whose_questions_together_answer_outranks_one_a_single_question_echoes(tmp_path):
    notes = _notes(tmp_path)
    off, on = _ask(tmp_path / "off", notes, 0.0), _ask(tmp_path / "on", notes, 0.5)
    assert [h.note["id"] for h in off.hits][:2] == ["echo", "runbook"]
    assert [h.note["id"] for h in on.hits][:2] == ["runbook", "echo"]
    assert [h.score for h in on.hits] == [h.score for h in off.hits]  # the gate's scores: the best rows'
    assert (on.decision.kind, on.decision.top, on.decision.gap) == (off.decision.kind, off.decision.top,
                                                                     off.decision.gap)


def test_each_note_with_questions_has_a_unit_prototype_and_a_damaged_file_is_one_line(tmp_path):
    home = tmp_path / "home"
    app = order_app(home, prototype_weight=0.3)
    app.index([SourceSpec("dir", _notes(tmp_path))])
    app.store.close()
    idx = load_index("hash-256", home)
    assert idx is not None and idx.prototypes is not None
    norms = {n["id"]: float(np.linalg.norm(row)) for n, row in zip(idx.notes, idx.prototypes, strict=True)}
    assert norms["echo"] == pytest.approx(1.0, abs=1e-5) and norms["runbook"] == pytest.approx(1.0, abs=1e-5)
    assert norms["tabs"] == 0.0  # no questions: no prototype, ordered as before

    root = index_dir("hash-256", home)
    gen = root / (root / "current").read_text().strip()
    data = bytearray((gen / "prototypes.npy").read_bytes())
    data[-5] ^= 0x10  # one bit of a vector: it still reads, and meta.json's checksum finds it
    (gen / "prototypes.npy").write_bytes(bytes(data))
    with pytest.raises(IndexDamaged, match="prototypes.npy"):
        load_index("hash-256", home)


def test_an_index_from_before_prototypes_loads_and_orders_without_them(tmp_path):
    home, notes = tmp_path / "home", _notes(tmp_path)
    app = order_app(home, prototype_weight=0.5)
    app.index([SourceSpec("dir", notes)])
    app.store.close()
    root = index_dir("hash-256", home)
    (root / (root / "current").read_text().strip() / "prototypes.npy").unlink()  # as a generation from before
    older = order_app(home, best_rows=1, prototype_weight=0.5, lexical_weight_with_questions=0.0)
    assert older.searcher.index is not None and older.searcher.index.prototypes is None
    assert [h.note["id"] for h in older.query(MESSAGE).hits][:2] == ["echo", "runbook"]  # the best row's order
    older.store.close()
