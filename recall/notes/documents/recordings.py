"""Recordings: cut into 97 s pieces overlapping by 15 s (a new piece every 82 s), frames
sampled every ``frame_every_s`` seconds by ffmpeg (the Debian package), read by the same
OCR as screenshots (``images``); each piece is a segment located by its time range, so a
hit points at "00:01:22–00:02:59". No audio is transcribed (no offline speech model here).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from recall.notes.documents.convert import Extracted, Unavailable, Unreadable

PIECE_S = 97
OVERLAP_S = 15
# Frames read at most (two hours at the default one every 10 s); a frame the same as the one
# before (a still slide, a paused screen) is not read again. An outside tester's one-hour
# recording of one still image held the index for 455 s, one OCR per frame (stop 45).
MAX_FRAMES = 720


def clock(s: float) -> str:
    s = int(s)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def pieces(duration: float) -> list[tuple[float, float]]:
    """(start, end) of each 97 s piece, one every 82 s, the last one ending at ``duration``."""
    out, start = [], 0.0
    while True:
        out.append((start, min(start + PIECE_S, duration)))
        if start + PIECE_S >= duration:
            return out
        start += PIECE_S - OVERLAP_S


def _frames(argv: list[str], folder: Path, tick: Callable[[], None],
            pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
    """ffmpeg writing frames into ``folder``, ``tick`` called each second it wrote more."""
    from recall.privacy.children import ending_with_me

    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ending_with_me(), pass_fds=pass_fds)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else ""), daemon=True)
    reader.start()
    try:
        seen = 0
        while proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)
            now = sum(1 for _ in os.scandir(folder))
            if now > seen:
                seen = now
                tick()
    finally:  # stopped (SIGTERM from the parent, which gave up on it): ffmpeg goes too
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    return subprocess.CompletedProcess(argv, proc.returncode, "", "".join(err))


def extract_recording(path: Path, fmt: str, every_s: float,
                      progress: Callable[[], None] | None = None) -> Extracted:
    """The recording's text per piece; ``progress`` is called as frames come and are read (the
    converter's parent stops one that shows none for ``convert_timeout_s``)."""
    if shutil.which("ffmpeg") is None:
        raise Unavailable("recordings need ffmpeg (apt install ffmpeg); skipped")
    from recall.notes.documents.images import load_rgb, read_text
    from recall.privacy.children import unnamed

    tick = progress or (lambda: None)
    with tempfile.TemporaryDirectory(prefix="recall-frames-") as tmp, unnamed(path) as (given, fds):
        # One frame past the cap, so that a longer recording is said: a file whose timestamps
        # claim 30 hours wrote every frame of them, gigabytes (stop 48, an outside tester's Z02).
        run = _frames(["ffmpeg", "-nostdin", "-v", "error", "-i", given, "-vf", f"fps=1/{every_s:g}",
                       "-frames:v", str(MAX_FRAMES + 1), str(Path(tmp) / "f%06d.png")], Path(tmp), tick, fds)
        frames = sorted(Path(tmp).glob("f*.png"))
        if run.returncode != 0 or not frames:
            why = (run.stderr.strip().splitlines() or ["no frames"])[-1][:100]
            raise Unreadable(f"not a video ffmpeg can read ({why}); skipped")
        # frame i (from 1) shows the video at about (i - 0.5) * every_s seconds
        notes = [f"longer than {MAX_FRAMES * every_s / 60:,.0f} minutes: its first {MAX_FRAMES * every_s / 60:,.0f} "
                 "read"] if len(frames) > MAX_FRAMES else []
        frames = frames[:MAX_FRAMES]
        texts, last, found = [], b"", []
        for i, f in enumerate(frames, 1):
            rgb = load_rgb(f)
            key = rgb[::8, ::8].tobytes()
            if key != last:
                found, last = read_text(rgb), key
                tick()
            texts.append((i * every_s - every_s / 2, found))
    duration = len(frames) * every_s
    segments = []
    for start, end in pieces(duration):
        lines = list(dict.fromkeys(line for t, found in texts if start <= t < end for line in found))
        if lines:
            segments.append((f"{clock(start)}–{clock(end)}", "\n".join(lines)))
    return Extracted(fmt, "", segments, notes)
