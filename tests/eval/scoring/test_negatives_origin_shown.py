"""A folder's negatives are counted per origin in a run's calibration (``negatives_by_origin``),
keyed by where they came from: that key is an id the harness shows and stores, so it is the
shown form (``recall_eval.files.shown_id``: masked, with a short hash where masking changed it),
as every other id; it was the negatives file's path as it is, a secret in a folder's name
carried into the results a run returns."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from helpers.paths import EVAL_NOTES as NOTES
from helpers.paths import EVAL_QUESTIONS as QUESTIONS
from recall_eval.cli import main
from recall_eval.datasets.collections import load_questions
from recall_eval.files import shown_id
from recall_eval.scoring.score import score_collection

SECRET = "AKIA" + "QX7RZ2KD9WLM4TPB"  # an AWS key id, in a folder's name


def _notes_with_negatives(tmp_path):
    notes = tmp_path / f"proj-{SECRET}" / "notes"
    shutil.copytree(NOTES, notes)
    lines = ["what's the weather like on mars today", "recommend a good pizza place nearby",
             "how tall is the eiffel tower", "write me a haiku about autumn leaves"]
    (notes / "negatives.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines), encoding="utf-8")
    return notes


def test_a_secret_in_a_negatives_files_path_never_reaches_a_run_or_its_report(tmp_path):
    notes = _notes_with_negatives(tmp_path)
    res = score_collection(notes, load_questions(QUESTIONS), model="hash", baselines=False)
    by = res["calibration"]["negatives_by_origin"]
    assert SECRET not in json.dumps(by), by
    origin = str((notes / "negatives.jsonl").resolve())
    assert by == {"bank": by["bank"], shown_id(origin): 4}  # the shown form, as every id the harness keeps
    out = CliRunner().invoke(main, ["score", "--notes", str(notes), "--questions", str(QUESTIONS),
                                    "--model", "hash", "--json"])
    assert out.exit_code == 0, out.output
    assert SECRET not in out.stdout and SECRET not in out.stderr
    assert json.loads(out.stdout)["calibration"]["negatives_by_origin"] == by
