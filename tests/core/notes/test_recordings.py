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
    """Its file name, a secret in it, is on no command line: ffmpeg's is read by any local user
    in /proc (an outside tester's, stop 58; a wrapper on PATH writes down what ffmpeg is given)."""
    import os
    import sys

    real = shutil.which("ffmpeg")
    if real is None:
        pytest.skip("ffmpeg is not installed (apt install ffmpeg)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    shot = make_screenshot(tmp_path / "frame.png", ["Error: connection refused on port 5432"], latin_font())
    (tmp_path / "videos").mkdir()
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-loop", "1", "-t", "40", "-i", str(shot), "-vf",
                    "format=yuv420p", "-r", "1", str(tmp_path / "videos" / "pw_Mk8jH2gF6d.mp4")], check=True)
    wrapper = tmp_path / "bin" / "ffmpeg"
    wrapper.parent.mkdir()
    log = str(tmp_path / "argv")
    wrapper.write_text(f"#!{sys.executable}\nimport os, sys\nopen({log!r}, 'a').write(repr(sys.argv))\n"
                       f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    run_cli("index", tmp_path / "videos", check=True)
    top = json.loads(run_cli("search", "--json", "connection", "refused", check=True).stdout)["results"][0]
    assert top["id"] == "pw_[REDACTED].mp4" and top["type"] == "recording" and top["location"] == "00:00:00–00:00:40"
    given = (tmp_path / "argv").read_text()
    assert "-i" in given and "Mk8jH2gF6d" not in given, given


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


@pytest.mark.slow
@pytest.mark.process
def test_a_recording_longer_than_the_frames_read_writes_no_more_of_them(tmp_path, hash_model):
    """A file whose timestamps claim ten hours: ffmpeg wrote every frame of them, gigabytes, before
    the cap of frames read applied (stop 48, an outside tester's Z02). It writes one past the cap."""
    import os
    import sys
    import time

    from recall.notes.documents.recordings import MAX_FRAMES

    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (apt install ffmpeg)")
    (tmp_path / "videos").mkdir()
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "color=white:s=64x64:r=0.1", "-t",
                    "36000", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(tmp_path / "videos" / "long.mp4")],
                   check=True)
    proc = subprocess.Popen([sys.executable, "-m", "recall.cli", "index", str(tmp_path / "videos")],
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run, most = Path(os.environ["RECALL_HOME"]) / "run", 0
    while proc.poll() is None:  # the frames on disk, as ffmpeg writes them
        most = max(most, len(list(run.glob("convert-*/recall-frames-*/f*.png"))))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert 0 < most <= MAX_FRAMES + 1, most
    assert "longer than 120 minutes: its first 120 read" in err, err


@pytest.mark.process
def test_ctrl_c_on_an_index_leaves_no_ffmpeg_behind(tmp_path, hash_model):
    """Ctrl-C made `recall index` kill its converter, and the converter's ffmpeg ran on under init,
    writing gigabytes of frames (stop 48, an outside tester's Z01). The stand-in ffmpeg (at the
    process boundary, on PATH) never ends, as one on a stalled mount would not."""
    import os
    import signal
    import sys
    import time

    from helpers.daemon import pids_where

    tag = f"fake-ffmpeg-{os.getpid()}-{time.monotonic_ns()}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text(f"#!{sys.executable}\nimport sys, time\nsys.argv.append({tag!r})\n"
                                    f"open({str(tmp_path / 'started')!r}, 'w').close()\ntime.sleep(600)\n")
    (bin_dir / "ffmpeg").chmod(0o755)
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "demo.mp4").write_bytes(b"\0\0\0\x18ftypmp42" + b"\0" * 64)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    # SIGINT as a terminal's Ctrl-C finds a command: not ignored, whatever this run inherited (a
    # suite started as `cmd &` from a script ignores it, and so did the index: it never ended)
    proc = subprocess.Popen([sys.executable, "-m", "recall.cli", "index", str(tmp_path / "videos")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def fakes() -> list[int]:
        return pids_where((str(bin_dir / "ffmpeg").encode(),), lambda e: True)

    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fakes(), "the recording was never being read"
    os.kill(proc.pid, signal.SIGINT)
    try:
        assert proc.wait(30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while fakes() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = fakes()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "ffmpeg outlived the index it was reading for"


@pytest.mark.process
def test_a_recording_whose_converter_makes_no_progress_is_skipped_and_the_rest_indexed(tmp_path, hash_model):
    """Recordings had no time limit ("as long as their length needs"): an ffmpeg stalled on a
    dead mount held `recall index`, and the daemon's watcher with every note saved after it,
    for ever (stop 49, an outside tester's Z03). A converter that shows no progress for
    `convert_timeout_s` is stopped: the recording is one line, the notes beside it are indexed."""
    import os
    import sys
    import time

    from helpers.daemon import write_config
    from helpers.notes import write_note

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    (bin_dir / "ffmpeg").chmod(0o755)
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "demo.mp4").write_bytes(b"\0\0\0\x18ftypmp42" + b"\0" * 64)
    write_note(folder, "zebra", "Zebra pods eviction", "why zebra pods get evicted", "kube evicts zebra pods")
    home = Path(os.environ["RECALL_HOME"])
    write_config(home, "[documents]\nconvert_timeout_s = 3\n")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "recall.cli", "index", str(folder)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 60
    assert "demo.mp4" in done.stderr and "made no progress for 3 s" in done.stderr, done.stderr
    top = json.loads(run_cli("search", "--json", "zebra", "pods", "eviction", check=True).stdout)["results"][0]
    assert top["id"] == "zebra"


@pytest.mark.process
def test_a_note_saved_while_the_watcher_converts_a_recording_is_searchable_at_once(tmp_path, recall_home,
                                                                                   monkeypatch):
    """The watcher converted a folder's documents in its one worker: a note saved while a
    recording converted (minutes of OCR, or an ffmpeg stalled on a dead mount until
    `convert_timeout_s`) waited for it, and a stop waited 10 s (an outside tester's Z03). Documents
    are converted beside the worker now: the note is searchable within the watcher's second, the
    recording is indexed when its conversion ends, and a stop ends the conversion at once."""
    import os
    import time

    from helpers.documents import first_hit, watched_folder
    from helpers.notes import write_note
    from recall.watch import Watcher

    tag = f"stalled-ffmpeg-{os.getpid()}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text(f"#!/bin/bash\nexec -a {tag} sleep 600\n")
    (bin_dir / "ffmpeg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")  # the converter's child finds it
    folder = tmp_path / "notes"
    app = watched_folder(folder, recall_home)
    try:
        watcher = Watcher(app, debounce=0.1).start()
        try:
            (folder / "standup.mp4").write_bytes(b"\0\0\0\x18ftypmp42" + b"\0" * 64)
            deadline = time.monotonic() + 20
            while not _running(tag) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _running(tag), "the recording's converter never started"
            write_note(folder, "zebra", "Zebra pods eviction", "why zebra pods get evicted", "kube evicts zebra pods")
            hit = first_hit(app, "zebra pods eviction", "zebra", within_s=5)
            assert hit is not None and hit.note["id"] == "zebra", "the note waited for the recording's conversion"
        finally:
            t0 = time.monotonic()
            watcher.stop()
            stopped_in = time.monotonic() - t0
        assert stopped_in < 4, f"the stop waited {stopped_in:.1f} s for the conversion"
        deadline = time.monotonic() + 5
        while _running(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(tag), "the stalled converter outlived the watcher"
    finally:
        app.store.close()
        for pid in _running(tag):
            os.kill(pid, 9)


def _running(tag: str) -> list[int]:
    """PIDs of this user's processes whose name (argv[0]) is ``tag``."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if fh.read().split(b"\0")[0] == tag.encode():
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found
