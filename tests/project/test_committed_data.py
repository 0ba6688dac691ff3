"""Committed data (datasets/, reports/baseline/, docs/) is never a reason to skip: a test that
needs it fails in one line when it is gone (``helpers.paths.committed``)."""

from __future__ import annotations

import pytest

from helpers.paths import ROOT, committed


def test_a_missing_committed_file_fails_in_one_line_with_the_repair():
    with pytest.raises(pytest.fail.Exception) as caught:
        committed(ROOT / "datasets" / "no-such-collection" / "notes")
    message = str(caught.value)
    assert message == ("datasets/no-such-collection/notes is missing: it is committed data "
                       "(restore it: git checkout -- datasets/no-such-collection/notes)")
    assert "\n" not in message and caught.value.pytrace is False


def test_a_folder_without_the_files_fails_too(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"/\*\.jsonl is missing"):
        committed(tmp_path, "*.jsonl")


def test_the_shipped_sample_is_there():
    sets = committed(ROOT / "datasets" / "sample" / "questions", "*.jsonl")
    assert sets and all(p.suffix == ".jsonl" for p in sets)
    assert committed(ROOT / "reports" / "baseline" / "sample.json") == [ROOT / "reports" / "baseline" / "sample.json"]
