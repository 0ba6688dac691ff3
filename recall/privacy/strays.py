"""A folder where recall keeps one of its own files (``hook.json``, ``calibration.toml``, an
index's ``current``): no file can replace it, so every write failed and each command said so,
or the hook stayed silent for good (an outside tester, stop 44). It is moved aside instead."""

from __future__ import annotations

import os
import time
from pathlib import Path


def set_aside_folder(path: Path) -> bool:
    """A folder (not a link) where recall keeps one of its own files under RECALL_HOME holds
    nothing of recall's and no file can replace it: moved aside to ``NAME.stray-TIME`` (nothing
    deleted), so that writing the file repairs it. Whether one was moved."""
    if os.path.isdir(path) and not os.path.islink(path):
        move_aside(path)
        return True
    return False


def move_aside(path: Path) -> None:
    """``path`` renamed to ``NAME.stray-TIME`` beside it: whatever stood where recall keeps its own
    file or folder, kept, out of the way."""
    os.replace(path, path.with_name(f"{path.name}.stray-{time.time_ns()}"))


def replace_aside(tmp: Path, path: Path) -> None:
    """``os.replace(tmp, path)`` for one of recall's own files, a folder in its place moved aside
    first (``set_aside_folder``): the rename would fail on it at every write."""
    set_aside_folder(path)
    os.replace(tmp, path)
