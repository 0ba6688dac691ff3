"""The kinopeee collection is built from ../shared at run time, and its shipped questions and
negatives (written by a context-free helper) fit the notes it builds."""

import json

import pytest

from recall.notes.files import read_folder
from recall_eval.datasets import kinopeee
from recall_eval.datasets.collections import PROJECT_ROOT, collection_paths

pytestmark = pytest.mark.skipif(not kinopeee.SOURCE.is_file(),
                                reason=f"{kinopeee.SOURCE} absent (../shared/benchmarks is not on this machine)")


def test_collection_builds_one_note_per_section_and_its_questions_name_them():
    notes_dir = collection_paths("kinopeee").notes_dir
    notes, problems = read_folder(notes_dir)
    assert not problems
    stems = {p.stem for p in notes_dir.glob("*.md")}
    assert len(stems) == 46
    assert {"ja", "en"} == {s.rsplit("-", 1)[1] for s in stems}  # both languages, one per section
    shipped = PROJECT_ROOT / "datasets" / "kinopeee"
    lines = [json.loads(x) for x in (shipped / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {line["note"] for line in lines} == stems
    for path in (shipped / "audit").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert set(json.loads(line)["expected"]) <= stems, path
