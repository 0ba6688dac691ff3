"""A note with questions ordered by the mean of its best rows, for the order only (``[search]
best_rows``): a note one of whose questions happens to echo a message no longer outranks a note
several of whose questions answer it, while the scores the gate sees, and so whether recall
speaks, stay the best rows'."""

import numpy as np

from helpers.notes import write_note_with_questions
from helpers.ranking import ask_once
from recall.ranking.seconds import with_best_rows

MESSAGE = "rotate the staging database password before the release"


def _note(folder, stem: str, questions: list[str], body: str) -> None:
    write_note_with_questions(folder, stem, stem, body[:40], body, questions)


def _notes(tmp_path):
    folder = tmp_path / "notes"
    # one question echoes the message word for word; the others are about something else
    _note(folder, "echo", [MESSAGE, "zebra feeding times", "tabs or spaces in yaml"],
          "Zebras eat hay at seven.")
    # every question answers the message, none word for word
    _note(folder, "runbook", ["how to rotate the staging database password",
                              "staging database password rotation before release",
                              "database password rotation on staging before the release"],
          "Passwords rotate through the vault; staging first, then production.")
    _note(folder, "tabs", ["editor indentation settings"], "Use four spaces.")
    return folder


def _ask(home, notes, rows: int):
    return ask_once(home, notes, MESSAGE, best_rows=rows, prototype_weight=0.0)


def test_a_note_several_rows_answer_outranks_one_a_single_row_echoes_and_the_gate_sees_the_same(tmp_path):
    notes = _notes(tmp_path)
    off, on = _ask(tmp_path / "off", notes, 1), _ask(tmp_path / "on", notes, 2)
    assert [h.note["id"] for h in off.hits][:2] == ["echo", "runbook"]
    assert [h.note["id"] for h in on.hits][:2] == ["runbook", "echo"]
    assert [h.score for h in on.hits] == [h.score for h in off.hits]
    assert (on.decision.kind, on.decision.top, on.decision.gap) == (off.decision.kind, off.decision.top,
                                                                     off.decision.gap)


def test_the_best_rows_are_averaged_and_a_note_with_one_row_or_no_questions_keeps_its_best():
    chunk_note = np.array([0, 0, 0, 1, 1, 2])  # note 2 has one row in the index
    COUNTS = np.bincount(chunk_note)  # noqa: N806 - as the search caches it per generation
    asked = np.array([True, True, True])
    dense = np.array([0.9, 0.7, 0.6])
    # a scan's first row, best first: note 0's rows 0.9, 0.5 and 0.3; note 1's 0.7 and (not reached)
    scanned = (np.array([[0.9, 0.7, 0.6, 0.5, 0.3, 0.2]]), np.array([[0, 3, 5, 1, 2, -1]]), False)
    assert np.allclose(with_best_rows(dense, chunk_note, COUNTS, scanned, 2, asked), [0.7, 0.5, 0.6])
    # three rows: note 0 all three; note 1 has two in the index, the second not reached (at most 0.3)
    assert np.allclose(with_best_rows(dense, chunk_note, COUNTS, scanned, 3, asked), [(0.9 + 0.5 + 0.3) / 3, 0.5, 0.6])
    assert np.allclose(with_best_rows(dense, chunk_note, COUNTS, scanned, 1, asked), dense)
    missing = with_best_rows(np.array([0.9, -np.inf, 0.6]), chunk_note, COUNTS, scanned, 2, asked)
    assert np.isneginf(missing[1])
    # note 0 without questions of its own: its few chunks say different things; it keeps its best
    assert np.allclose(with_best_rows(dense, chunk_note, COUNTS, scanned, 2, np.array([False, True, True])),
                       [0.9, 0.5, 0.6])
