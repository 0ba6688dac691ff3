"""A half-written upgrade (a module of another release beside this one's): the hook and the read
tracker still exit 0 and print nothing (their promise), where an ImportError raised while they
imported their own modules escaped main()'s guard as a traceback and status 1 (an outside tester's
upgrade, class 6)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.env import env_with
from helpers.paths import PY, ROOT

pytestmark = pytest.mark.process


@pytest.mark.parametrize("broken", ["privacy/paths.py", "agents/wire.py", "config/snapshot.py"])
@pytest.mark.parametrize("module", ["recall.agents.hook", "recall.agents.track", "recall.hook", "recall.track"])
def test_a_module_of_another_release_makes_no_traceback(tmp_path: Path, module: str, broken: str):
    site = tmp_path / "site"
    shutil.copytree(ROOT / "recall", site / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "recall" / broken).write_text("raise ImportError('a name another release does not have')\n")
    event = json.dumps({"session_id": "s1", "cwd": "/", "hook_event_name": "UserPromptSubmit",
                        "prompt": "how do we add a feature flag?"}).encode()
    proc = subprocess.run([PY, "-P", "-m", module], input=event, capture_output=True,
                          env=env_with(PYTHONPATH=str(site)), timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
