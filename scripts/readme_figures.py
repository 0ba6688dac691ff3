"""Write the README's measured tables from the runs that made them (never typed by hand).

    python scripts/readme_figures.py --run reports/sample/<id> --run reports/rules-120/<id> \
        --models docs/decision/models-sample.md --models docs/decision/models-rules-120.md

Each table sits in README.md between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
the text between is replaced, the markers and everything else kept. Tables:

* ``pipeline``: the shipped pipeline (``default``) on each held-out set, then the main sets,
  of each ``--run`` (a ``recall-eval run`` folder), beside the packaged thresholds and BM25;
* ``models``: the files ``recall-eval versus --out`` wrote (``--models``), one after the other.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIND = {"x": "test", "h": "dev"}


def _v(metrics: dict, name: str, ci: bool = False) -> str:
    m = metrics.get(name) or {}
    if m.get("value") is None:
        return "-"
    if not ci:
        return f"{m['value']:.3f}"
    lo, hi = m.get("ci95") or (m["value"], m["value"])
    return f"{m['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def _row(name: str, block: dict) -> str:
    p = block["pipelines"]
    d, pk, bm = p["default"]["metrics"], p["packaged-thresholds"]["metrics"], p["bm25"]["metrics"]
    n_rel, n_unrel = (d.get("injected_hit_rate") or {}).get("n"), (d.get("silence_rate") or {}).get("n")
    cells = [f"{name} ({n_rel} / {n_unrel})", _v(d, "injected_hit_rate", True), _v(d, "silence_rate", True),
             _v(d, "hit_rate@3"), f"{_v(pk, 'injected_hit_rate')} / {_v(pk, 'silence_rate')}",
             f"{_v(bm, 'injected_hit_rate')} / {_v(bm, 'silence_rate')}"]
    return "| " + " | ".join(cells) + " |"


def pipeline_table(runs: list[dict]) -> str:
    head = ("| set (related / unrelated) | recall injected | recall silence | hit@3 | packaged injected / silence "
            "| BM25 injected / silence |\n|---|---|---|---|---|---|")
    rows = []
    for kind in ("x", "h"):
        for r in runs:
            for name, block in (r.get("heldout") or {}).items():
                if name.endswith(f"-{kind}"):
                    rows.append(_row(f"{name}, {KIND[kind]}", block))
    rows += [_row(f"{r['collection']} questions/", r) for r in runs]
    models = sorted({f"{r['model']['spec']} ({r['model']['model_id']})" for r in runs})
    ids = ", ".join(f"{r['collection']} {r['run_id']}" for r in runs)
    return f"{head}\n" + "\n".join(rows) + f"\n\nModel: {', '.join(models)}; runs {ids}."


def replace(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(\n<!-- /generated:{re.escape(name)} -->)",
                         re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- generated:{name} --> ... <!-- /generated:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", type=Path, default=[], help="a `recall-eval run` folder")
    ap.add_argument("--models", action="append", type=Path, default=[], help="a `recall-eval versus --out` file")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = ap.parse_args()
    text = args.readme.read_text(encoding="utf-8")
    if args.run:
        runs = [json.loads((p / "results.json").read_text(encoding="utf-8")) for p in args.run]
        text = replace(text, "pipeline", pipeline_table(runs))
    if args.models:
        parts = [f"{p.stem.removeprefix('models-')}:\n\n{p.read_text(encoding='utf-8').strip()}" for p in args.models]
        text = replace(text, "models", "\n\n".join(parts))
    args.readme.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
