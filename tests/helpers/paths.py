"""Where the repository, the shipped sample and ../shared are."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_NOTES = ROOT / "datasets" / "sample" / "notes"
# The harness tests' small collection: a few notes and a question set written for them.
EVAL_FIXTURES = ROOT / "tests" / "fixtures" / "eval"
EVAL_NOTES = EVAL_FIXTURES / "notes"
EVAL_QUESTIONS = EVAL_FIXTURES / "questions.jsonl"
SHARED = Path(os.environ.get("RECALL_SHARED") or ROOT.parent / "shared")  # ../shared, or where the env says
RULES_120 = SHARED / "benchmarks" / "rules-120" / "notes"
PY = sys.executable


def committed(path: Path, pattern: str | None = None) -> list[Path]:
    """A path the repository ships (datasets/, reports/baseline/, docs/): a test that needs it
    fails, in one line, when it is gone, never skips (a skip would hide a deleted dataset).
    With ``pattern``, the files under ``path`` that match it, at least one. Data outside the
    repository (../shared/benchmarks) and optional services keep their skips."""
    import pytest

    found = sorted(path.glob(pattern)) if pattern and path.is_dir() else [path] if path.exists() else []
    if not found:
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        what = f"{rel}/{pattern}" if pattern else str(rel)
        pytest.fail(f"{what} is missing: it is committed data (restore it: git checkout -- {rel})", pytrace=False)
    return found
