"""What the agents' tests share: a scratch git project as the current folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A scratch git project, the current folder of the test."""
    root = tmp_path / "scratch-project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    return root
