"""`python -m bench.bench_calibration`: what a calibration costs as a collection grows.

Every `recall index` calibrates (`recall.ranking.calibration`), the plugin's one at each
session start included. An outside tester (stop 48, X01) measured 337 MB / 2.9 s at 1,000
notes of eight questions each, 995 MB / 10.8 s at 2,000 and 3.5 GB / 75 s at 4,000: the
square of the questions. This indexes synthetic collections of N notes with eight front-matter
questions each (the deterministic ``hash`` model, so the encoder costs nothing) and times
``Recall.calibrate`` alone, with the peak of the memory numpy and Python allocate during it
(tracemalloc), for each N, and the factor each doubling of N costs (2 is linear, 4 quadratic).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from pathlib import Path


def collection(folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        qs = "".join(f"\n  - how does step {j} of procedure {i} go" for j in range(8))
        (folder / f"n{i:05d}.md").write_text(f"---\nname: Procedure {i}\ndescription: steps of procedure {i}\n"
                                             f"type: project\nquestions:{qs}\n---\n\nprocedure {i} body\n")


def measure(n: int) -> dict:
    os.environ["RECALL_MODEL"] = "hash"
    from recall.api import Recall
    from recall.config.load import load_config
    from recall.indexing.indexer import SourceSpec

    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "notes"
        collection(notes, n)
        app = Recall(home=Path(tmp) / "home", config=load_config())
        app.index([SourceSpec("dir", notes)])
        tracemalloc.start()
        t0 = time.perf_counter()
        cal = app.calibrate()
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        app.close()
    return {"notes": n, "questions": 8 * n, "positives": cal.positives if cal else 0,
            "seconds": seconds, "peak_mb": peak / 1e6}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    args = ap.parse_args(argv)
    rows = [measure(n) for n in args.notes]
    print(f"{'notes':>7} {'questions':>10} {'asked':>7} {'seconds':>8} {'peak MB':>8}")
    for r in rows:
        print(f"{r['notes']:7d} {r['questions']:10d} {r['positives']:7d} {r['seconds']:8.2f} {r['peak_mb']:8.1f}")
    for a, b in zip(rows, rows[1:], strict=False):
        grow = b["notes"] / a["notes"]
        print(f"{a['notes']} -> {b['notes']} notes (x{grow:g}): time x{b['seconds'] / a['seconds']:.2f}, "
              f"peak memory x{b['peak_mb'] / a['peak_mb']:.2f} (linear: x{grow:g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
