"""The Quality page against the reports folders it reads and the thresholds' provenance: one
results.json it cannot use is passed over, said as such, never a 500 (an outside tester's, stop 57)."""

from __future__ import annotations

import json

import pytest

from helpers import ui
from helpers.daemon import index_dirs, write_config
from helpers.notes import write_note
from helpers.ui import write_report

PORT = 8126


def page_client(**launch):
    return ui.page_client(PORT, **launch)


@pytest.fixture
def notes(tmp_path, recall_home, hash_model):
    folder = tmp_path / "team-notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated behind flags",
               "Ship dark behind Unleash flags; remove them within 30 days.")
    write_config(recall_home)
    index_dirs(folder)
    return folder


def _bad_run(reports, notes, change) -> None:
    """A second collection's newer run of the same notes, its results.json changed by ``change``."""
    run = write_report(reports / "tmp", notes_dir=notes)  # written as "sample": moved under its own collection
    bad = reports / "other" / run.name
    bad.parent.mkdir(parents=True)
    run.rename(bad)
    (reports / "other" / "latest").write_text(run.name + "\n", encoding="utf-8")
    results = json.loads((bad / "results.json").read_text(encoding="utf-8"))
    results.update(created="2027-01-01T00:00:00+00:00", collection="other")
    change(results)
    (bad / "results.json").write_text(json.dumps(results), encoding="utf-8")
    (bad / "report.html").write_text("<h1>the other report</h1>", encoding="utf-8")


BAD = {
    "a NUL in its notes folder": lambda r: r.update(notes_dir="/x\u0000y"),
    "a notes folder of another type": lambda r: r.update(notes_dir=["x"]),
    "metrics as text": lambda r: r.update(metrics="x"),
    "a value as text": lambda r: r["metrics"]["silence_rate"].update(value="high"),
    "an interval of one end": lambda r: r["metrics"]["silence_rate"].update(ci95=[0.5]),
    "a model as text": lambda r: r.update(model="x"),
    "thresholds as a list": lambda r: r.update(thresholds=[1]),
    "a curve of another shape": lambda r: r.update(curve={"gap_floor": "x", "current": 3}),
}


@pytest.mark.parametrize("change", list(BAD.values()), ids=list(BAD))
def test_a_results_json_the_page_cannot_use_is_passed_over(notes, tmp_path, change):
    reports = tmp_path / "reports"
    good = write_report(reports, notes_dir=notes)
    (good / "report.html").write_text("<h1>the good report</h1>", encoding="utf-8")
    _bad_run(reports, notes, change)
    with page_client(reports=reports) as c:
        page = c.get("/quality")
        assert page.status_code == 200 and "Latest evaluation: sample" in page.text, page.text[-2000:]
        html = c.get("/quality/report")
        assert html.status_code == 200 and "the good report" in html.text


def test_only_an_unreadable_report_is_said_as_such_not_as_none_found(notes, tmp_path):
    reports = tmp_path / "reports"
    _bad_run(reports, notes, lambda r: r.update(notes_dir="/x\u0000y"))
    with page_client(reports=reports) as c:
        page = c.get("/quality")
        assert page.status_code == 200, page.text[-2000:]
        assert "No evaluation report found" not in page.text and "could not be read" in page.text
        assert str(reports / "other") in page.text and "results.json" in page.text
        assert c.get("/quality/report").status_code == 404


def test_thresholds_from_calibration_show_what_is_known_and_no_empty_fields(notes, recall_home):
    """The thresholds `recall calibrate` wrote read "Tuned  on  (; ): … hit rate  ,": the page
    said a tune's fields, every one empty."""
    write_config(recall_home, extra="")
    (recall_home / "config.toml").write_text("", encoding="utf-8")
    (recall_home / "calibration.toml").write_text(
        '[thresholds."hash-256"]\ngap_floor = 0.1\ntop_floor = 0.3\nfull_gap = 0.2\nfull_margin = 0.05\n'
        '[thresholds."hash-256".provenance]\ncalibrated = "2026-12-01T10:00:00"\nmode = "negatives only"\n'
        "target_silence = 0.9\npositives = 12\nnegatives = 40\ncalib_injected_hit_rate = 0.61\n"
        "calib_silence_rate = 0.9\n", encoding="utf-8")
    with page_client() as c:
        page = c.get("/quality").text
    assert "Tuned" not in page and " on  (" not in page and "rate <b></b>" not in page, page
    assert "2026-12-01T10:00:00" in page and "0.61" in page
