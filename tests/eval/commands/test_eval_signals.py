"""SIGTERM ends a recall-eval command as Ctrl-C does: its temporary RECALL_HOME (recall.db and
the index, a copy of the notes' text) is removed, one line is said, exit 143. It was left in
$TMPDIR, 3.2 MB of the sample's text, rc -15 (an outside tester, stop 58)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_sigterm_removes_the_temporary_home_and_says_so(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "recall_eval.cli", "run", "--collection", "sample", "--model",
                             "hash", "--reports", str(tmp_path / "R")], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp.glob("recall-eval-*/*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.5)  # into the indexing
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, (proc.returncode, err)
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("terminated (SIGTERM)")
    assert not list(tmp.glob("recall-eval-*")), list(tmp.iterdir())
