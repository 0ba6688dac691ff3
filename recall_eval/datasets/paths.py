"""Where the harness's data lives: the project root and ``../shared/benchmarks`` beside it
(public datasets that are not ours to copy into the repository)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_BENCHMARKS = PROJECT_ROOT.parent / "shared" / "benchmarks"
