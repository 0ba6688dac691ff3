"""Where the repository, the shipped sample and ../shared are."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_NOTES = ROOT / "datasets" / "sample" / "notes"
SHARED = Path(os.environ.get("RECALL_SHARED") or ROOT.parent / "shared")  # ../shared, or where the env says
RULES_120 = SHARED / "benchmarks" / "rules-120" / "notes"
PY = sys.executable
