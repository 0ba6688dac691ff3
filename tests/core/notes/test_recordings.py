"""Recordings: 97 s pieces overlapping by 15 s, frames OCR'd, a hit names its time range."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.documents import latin_font, make_screenshot
from recall.notes.documents.recordings import pieces

pytest.importorskip("rapidocr", reason="the ocr extra")


def test_pieces_are_97_seconds_every_82():
    assert pieces(200) == [(0, 97), (82, 179), (164, 200)]
    assert pieces(50) == [(0, 50)]


@pytest.mark.slow
def test_a_recordings_text_is_found_with_its_time_range(tmp_path, monkeypatch, hash_model):
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (apt install ffmpeg)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    shot = make_screenshot(tmp_path / "frame.png", ["Error: connection refused on port 5432"], latin_font())
    (tmp_path / "videos").mkdir()
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-loop", "1", "-t", "40", "-i", str(shot), "-vf",
                    "format=yuv420p", "-r", "1", str(tmp_path / "videos" / "demo.mp4")], check=True)
    run_cli("index", tmp_path / "videos", check=True)
    top = json.loads(run_cli("search", "--json", "connection", "refused", check=True).stdout)["results"][0]
    assert top["id"] == "demo.mp4" and top["type"] == "recording" and top["location"] == "00:00:00–00:00:40"


@pytest.mark.slow
@pytest.mark.process
def test_a_killed_index_leaves_no_converter_running_and_no_frames(tmp_path, monkeypatch, hash_model):
    """stop 41: `recall index` killed while a long recording was being read left its converter running
    at full CPU under init, and the frames folder in /tmp."""
    import os
    import signal
    import sys
    import time

    from helpers.daemon import pids_where

    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (apt install ffmpeg)")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    (tmp_path / "videos").mkdir()
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "color=white:s=64x64:r=0.1", "-t",
                    "36000", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(tmp_path / "videos" / "long.mp4")],
                   check=True)
    proc = subprocess.Popen([sys.executable, "-m", "recall.cli", "index", str(tmp_path / "videos")],
                            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = Path(os.environ["RECALL_HOME"]) / "run"  # the converter's TMPDIR is a folder of its own there
    mine = f"RECALL_HOME={run.parent}".encode()

    def converters() -> list[int]:
        return pids_where((b"recall.notes.documents.isolated",), lambda env: mine in env)

    def frames() -> list:
        return list(run.glob("convert-*/recall-frames-*")) + list(tmp.glob("recall-frames-*"))

    deadline = time.monotonic() + 60
    while not (converters() and frames()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert converters() and frames(), "the recording was never being read"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while (converters() or frames() or list(run.glob("convert-*"))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not converters() and not frames() and not list(run.glob("convert-*"))
