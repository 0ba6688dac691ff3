"""An incremental ``recall index`` does work in proportion to what changed, not to the
collection (an outside tester at 3,000 notes: an unchanged index took 12.7 s, 8.6 s of it
calibrating again; one edited note built FAISS and BM25 twice).

* nothing changed: no calibration, and its files (``calibration.toml``, ``negatives.npz``,
  ``calibration-cache.npz``) are not written again;
* what calibration reads changed (a note, a negatives file, ``[selector]``): it runs again;
* one edited note publishes one generation, not two.
"""

from __future__ import annotations

import json

from helpers.cli import run_cli
from helpers.daemon import write_config
from helpers.notes import write_note
from recall.store.vectors import index_dir


def _calibration_files(home):
    root = index_dir("hash-256", home)
    return [home / "calibration.toml", root / "negatives.npz", root / "calibration-cache.npz"]


def _stamps(home):
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in _calibration_files(home)}


def _generation(home) -> int:
    return int((index_dir("hash-256", home) / "current").read_text().strip().removeprefix("gen-"))


def test_an_unchanged_index_calibrates_nothing_and_writes_no_calibration_file(recall_home, hash_model, sample_notes):
    run_cli("index", sample_notes, check=True)
    before = _stamps(recall_home)
    again = run_cli("index", sample_notes, check=True)
    assert "calibrated" not in again.stdout + again.stderr, again.stdout
    assert _stamps(recall_home) == before

    # What calibration reads changes: it runs again, each time.
    (sample_notes / "negatives.jsonl").write_text(json.dumps({"text": "what's the weather like in Lisbon"}) + "\n")
    assert "calibrated" in run_cli("index", sample_notes, check=True).stdout
    write_config(recall_home, "\n[selector]\ntarget_silence = 0.8\n")
    assert "calibrated" in run_cli("index", sample_notes, check=True).stdout
    write_note(sample_notes, "brand-new", "Brand new note", "about zebras", "zebra zebra")
    assert "calibrated" in run_cli("index", sample_notes, check=True).stdout
    after = _stamps(recall_home)
    assert "calibrated" not in run_cli("index", sample_notes, check=True).stdout
    assert _stamps(recall_home) == after

    # A calibration file removed (or rewritten by `recall calibrate`) is written again.
    (recall_home / "calibration.toml").unlink()
    assert "calibrated" in run_cli("index", sample_notes, check=True).stdout
    assert (recall_home / "calibration.toml").is_file()


def test_one_edited_note_publishes_one_generation(recall_home, hash_model, sample_notes):
    run_cli("index", sample_notes, check=True)
    first = _generation(recall_home)
    note = max(sample_notes.glob("*.md"), key=lambda p: p.stat().st_size)
    note.write_text(note.read_text() + "\nOne more line at the very end.\n")
    run_cli("index", sample_notes, check=True)
    assert _generation(recall_home) == first + 1
    (sample_notes / "decimal-not-float.md").unlink()
    run_cli("index", sample_notes, check=True)
    assert _generation(recall_home) == first + 2
