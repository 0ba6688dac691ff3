"""Collections at the edges of their size (stop 48, an outside tester's X01-X03): the cost of a
calibration grows with the collection, not its square; what is cut is said; every warning is
one line of bounded length."""

from __future__ import annotations

import os

from helpers.cli import run_cli
from helpers.notes import write_note
from recall.api import Recall
from recall.indexing.indexer import SourceSpec
from recall.privacy.safetext import MAX_LINE_CHARS
from recall.ranking.calibration import MAX_POSITIVES


def test_a_calibration_asks_at_most_max_positives_questions_spread_over_the_notes(recall_home, hash_model, tmp_path):
    notes = tmp_path / "notes"
    n = MAX_POSITIVES // 8 + 100
    for i in range(n):
        qs = "".join(f"\n  - how does step {j} of procedure {i} go" for j in range(8))
        (notes / f"n{i:04d}.md").parent.mkdir(parents=True, exist_ok=True)
        (notes / f"n{i:04d}.md").write_text(f"---\nname: Procedure {i}\ndescription: steps of procedure {i}\n"
                                            f"type: project\nquestions:{qs}\n---\n\nprocedure {i} body\n")
    app = Recall()
    app.index([SourceSpec("dir", notes)])
    assert app.store.counts()["questions"] == 8 * n
    assert app.calibration is not None and app.calibration.positives == MAX_POSITIVES


def test_questions_past_those_a_note_keeps_are_said(recall_home, hash_model, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    qs = "".join(f"\n  - how do I deploy change number {j}?" for j in range(12))
    (notes / "deploy.md").write_text(f"---\nname: Deploy\ndescription: how we deploy\ntype: project\n"
                                     f"questions:{qs}\n---\n\nblue green\n")
    res = run_cli("index", "-q", str(notes))
    assert res.returncode == 0, res.stderr
    assert "4 question(s) past the 8 a note keeps left out" in res.stderr, res.stderr
    assert "8 note questions, under the 20 a fit needs" in res.stdout, res.stdout


def test_a_warning_about_a_very_long_path_is_one_bounded_line(recall_home, hash_model, tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "top", "Top", "a note at the top", "fine")
    fd = os.open(notes, os.O_RDONLY)
    for i in range(30):  # made through folder descriptors, past PATH_MAX: the deepest cannot be read
        name = f"level{i:02d}-" + "x" * 240
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    res = run_cli("index", "-q", str(notes))
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings and all(len(line) <= len("warning: ") + MAX_LINE_CHARS for line in warnings), \
        [len(w) for w in warnings]
