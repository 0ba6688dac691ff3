"""Screenshots become searchable by the text in them (rapidocr, offline, English and
Japanese), keeping their path and file name; an image without text is found by its name,
and one that cannot be decoded is one warning line."""

from __future__ import annotations

import json

import pytest

from helpers.cli import run_cli
from helpers.documents import cjk_font, latin_font, make_screenshot

pytest.importorskip("rapidocr", reason="the ocr extra (pip install 'recall-memory[ocr]')")
pytestmark = pytest.mark.slow  # loads the OCR models (~5 s, ~400 MB)


@pytest.fixture
def ocr_env(tmp_path, monkeypatch, hash_model):
    """onnxruntime writes under ~/.cache: a HOME of the test's own."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def search_json(*words: str) -> list[dict]:
    return json.loads(run_cli("search", "--json", "-k", "3", *words, check=True).stdout)["results"]


def test_screenshots_in_english_and_japanese_are_searchable(ocr_env):
    shots = ocr_env / "Screenshots"
    shots.mkdir()
    make_screenshot(shots / "deploy error.png", ["Error: connection refused on port 5432",
                                                  "Retry the migration after the backup finishes"], latin_font())
    make_screenshot(shots / "blank.jpg", [])
    font = cjk_font()
    if font:
        make_screenshot(shots / "手順.png", ["バックアップは毎晩二時に実行されます",
                                            "デプロイの手順を確認してください"], font)
    (shots / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    out = run_cli("index", shots)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if "broken.png" in line] == [
        f"warning: {shots / 'broken.png'}: not an image Pillow can decode; skipped"]
    # onnxruntime queued a telemetry event there at its first session (an outside tester's, stop 56)
    assert not list((ocr_env / "home").rglob("onnxruntime.db")), list((ocr_env / "home").rglob("*"))
    top = search_json("connection", "refused", "port")[0]
    assert top["id"] == "deploy error.png" and top["name"] == "deploy error.png" and top["type"] == "image"
    assert top["path"] == str(shots / "deploy error.png") and "5432" in top["snippet"]
    assert search_json("blank")[0]["id"] == "blank.jpg"  # no text: found by its file name
    if font is None:
        pytest.skip("no Japanese font on this machine (fonts-ipafont-gothic) to render the Japanese screenshot")
    ja = search_json("バックアップ")[0]
    assert ja["id"] == "手順.png" and "毎晩" in ja["snippet"]


def test_every_page_of_a_scanned_tiff_is_read(ocr_env):
    """A scanned 3-page contract: pages 2 and 3 were lost without a word (stop 45)."""
    from PIL import Image

    scans = ocr_env / "scans"
    scans.mkdir()
    pages = []
    for i, line in enumerate(["Contract between the parties", "Payment is due within thirty days",
                              "Termination requires ninety days notice"]):
        pages.append(Image.open(make_screenshot(scans / f"p{i}.png", [line], latin_font())).copy())
        (scans / f"p{i}.png").unlink()
    pages[0].save(scans / "contract.tif", save_all=True, append_images=pages[1:])
    assert run_cli("index", scans).returncode == 0
    top = search_json("termination", "ninety", "days", "notice")[0]
    # short pages share a chunk: its location spans them ("p. 1–3")
    assert top["id"] == "contract.tif" and top["location"].startswith("p. ") and top["location"].endswith("3"), top
