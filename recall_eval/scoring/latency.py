"""Hook latency: run the project's hook benchmark (``bench/bench_hook.py``) and read its
JSON. The benchmark is someone else's module; this file only runs it and reads
``reports/bench/hook.json``, so there is one latency measurement in the project, not two.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from recall_eval.datasets.collections import PROJECT_ROOT

BENCH_MODULE = "bench.bench_hook"
RESULT = Path("reports") / "bench" / "hook.json"
# Keys under which a list of per-call timings (ms) may sit in the benchmark's JSON (it
# may also hold only summaries: {p50_ms, p95_ms, max_ms} per index and load).
SAMPLE_HINTS = ("samples", "latenc", "_ms", "times")
BENCH_TIMEOUT_S = 600


def bench_available(root: Path = PROJECT_ROOT) -> bool:
    return (root / "bench" / "bench_hook.py").exists()


def result_path(root: Path = PROJECT_ROOT) -> Path:
    return root / RESULT


def load(root: Path = PROJECT_ROOT) -> dict | None:
    path = result_path(root)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def last(root: Path = PROJECT_ROOT) -> dict:
    """The last benchmark's JSON (``latency --reuse``); a ``DatasetError`` (one line, with the command
    that makes the file) when it is missing, cut, a folder or not an object: it said "read the last
    result" and exited 0, or was a traceback (IsADirectoryError; an outside tester's)."""
    from recall_eval.datasets.collections import DatasetError
    from recall_eval.files import InputError, read_input

    path = result_path(root)
    remake = "run `recall-eval latency` (without --reuse) to measure it again"
    if not path.exists() and not path.is_symlink():
        raise DatasetError(f"no hook latency measured yet ({path} missing): {remake}")
    try:
        data = json.loads(read_input(path))
    except InputError as exc:
        raise DatasetError(f"{exc} ({remake})") from None
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{path} is not the benchmark's JSON ({type(exc).__name__}: "
                           f"{(str(exc).splitlines() or [''])[0][:120]}): {remake}") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{path} is not the benchmark's JSON (not an object): {remake}")
    return data


def run_bench(root: Path = PROJECT_ROOT, timeout: int = BENCH_TIMEOUT_S) -> tuple[dict | None, str]:
    """(the benchmark's JSON, a message). None and a reason when nothing was measured."""
    if not bench_available(root):
        return None, (f"{BENCH_MODULE} is not in this checkout (bench/bench_hook.py missing): "
                      "nothing measured")
    proc = subprocess.run([sys.executable, "-m", BENCH_MODULE], cwd=root, timeout=timeout,
                          stdout=sys.stderr, stderr=sys.stderr, check=False)
    if proc.returncode != 0:
        return None, f"{BENCH_MODULE} exited {proc.returncode}: nothing measured"
    data = load(root)
    if data is None:
        return None, f"{BENCH_MODULE} wrote no readable {RESULT}"
    return data, f"read {result_path(root)}"


def _walk(node, key: str = "") -> Iterator[tuple[str, object]]:
    """(dotted key, leaf) pairs; list items are keyed by their ``name`` when they have one."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        for i, item in enumerate(node):
            yield from _walk(item, f"{key}.{item.get('name', i)}")
    else:
        yield key, node


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def samples(data: dict | None) -> tuple[str, list[float]] | None:
    """The longest list of per-call timings in the benchmark's JSON, with its key."""
    if not data:
        return None
    found = [(k, [float(x) for x in v]) for k, v in _walk(data)
             if isinstance(v, list) and len(v) >= 5 and all(_is_number(x) for x in v)
             and any(h in k.lower() for h in SAMPLE_HINTS)]
    return max(found, key=lambda kv: len(kv[1])) if found else None


def percentiles(data: dict | None) -> list[tuple[str, dict[str, float]]]:
    """Every summary the benchmark wrote as {p50_ms, p95_ms, ...}, labelled by its path
    (``indexes.sample.sequential``): what the report plots when no raw timings exist."""
    out: list[tuple[str, dict[str, float]]] = []

    def visit(node, key: str) -> None:
        if isinstance(node, dict):
            if _is_number(node.get("p50_ms")) and _is_number(node.get("p95_ms")):
                out.append((key, {k: float(node[k]) for k in ("p50_ms", "p95_ms", "max_ms") if k in node}))
                return
            for k, v in node.items():
                visit(v, f"{key}.{k}" if key else str(k))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, f"{key}.{item.get('name', i) if isinstance(item, dict) else i}")

    visit(data or {}, "")
    return out


def summary(data: dict | None) -> dict[str, float]:
    """Every timing (``*_ms``) and ratio the benchmark reported, by dotted key."""
    if not data:
        return {}
    return {k: float(v) for k, v in _walk(data)  # type: ignore[arg-type]
            if _is_number(v) and (k.endswith("_ms") or "ratio" in k)}
