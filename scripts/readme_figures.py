"""Write README.md's generated blocks from what made them (never typed by hand): `make docs`.

    python scripts/readme_figures.py            # every block, from committed inputs (make docs)
    python scripts/readme_figures.py --check    # exit 1, naming each block that differs (a test runs it)
    python scripts/readme_figures.py --run reports/sample/<id> --run reports/rules-120/<id> \
        --models docs/decision/models-sample.md --models docs/decision/models-rules-120.md

Each block sits in README.md between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
the text between is replaced, the markers and everything else kept. Blocks:

* ``pipeline``: the shipped pipeline (``default``) on each held-out set, then the main sets, of
  each run, beside the packaged thresholds and BM25. ``--run`` (a ``recall-eval run`` folder; its
  results.json is megabytes and not committed) keeps the figures the table needs in
  ``docs/decision/pipeline-runs.json``, committed, which every later run of this script reads;
* ``models``: the files ``recall-eval versus --out`` wrote (``--models``; by default
  ``docs/decision/models-sample.md`` then ``models-rules-120.md``), one after the other;
* ``recall-help``, ``recall-eval-help``: ``recall --help`` and ``recall-eval --help`` as they print
  (80 columns), from this checkout's code;
* ``make-targets``: the Makefile's targets and their ``##`` lines (what ``make help`` prints).

With ``--run`` or ``--models`` only those blocks are written; without, every block. Inputs are
found beside the README (``--readme``'s folder), the help texts from this checkout.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIND = {"x": "test", "h": "dev"}
RUNS = Path("docs/decision/pipeline-runs.json")
MODELS = (Path("docs/decision/models-sample.md"), Path("docs/decision/models-rules-120.md"))
KEPT_PIPELINES = ("default", "packaged-thresholds", "bm25")
KEPT_METRICS = ("injected_hit_rate", "silence_rate", "hit_rate@3")
TARGET = re.compile(r"^([a-zA-Z0-9_-]+):.*?## (.*)$", re.M)  # the Makefile's help rule reads the same lines


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


def _kept(block: dict) -> dict:
    """The pipelines and metrics the table reads, nothing else."""
    return {"pipelines": {p: {"metrics": {m: block["pipelines"][p]["metrics"][m] for m in KEPT_METRICS
                                          if m in block["pipelines"][p]["metrics"]}}
                          for p in KEPT_PIPELINES}}


def keep_runs(results: list[dict]) -> list[dict]:
    """What ``pipeline_table`` needs of each run's results.json, small enough to commit."""
    return [{"collection": r["collection"], "run_id": r["run_id"],
             "model": {"spec": r["model"]["spec"], "model_id": r["model"]["model_id"]}, **_kept(r),
             "heldout": {name: _kept(block) for name, block in (r.get("heldout") or {}).items()}}
            for r in results]


def models_text(paths: list[Path]) -> str:
    return "\n\n".join(f"{p.stem.removeprefix('models-')}:\n\n{p.read_text(encoding='utf-8').strip()}" for p in paths)


def help_text(prog: str) -> str:
    """``prog --help`` as it prints at 80 columns, fenced."""
    from click.testing import CliRunner

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if prog == "recall":
        from recall.cli import main
    else:
        from recall_eval.cli import main
    res = CliRunner().invoke(main, ["--help"], prog_name=prog, terminal_width=80, max_content_width=80)
    if res.exit_code != 0:
        raise SystemExit(f"{prog} --help exited {res.exit_code}: {res.output.strip()}")
    return f"```text\n$ {prog} --help\n{res.output.rstrip()}\n```"


def make_targets(makefile: Path) -> str:
    found = TARGET.findall(makefile.read_text(encoding="utf-8"))
    rows = [f"| `make {name}` | {what.strip()} |" for name, what in found]
    return "| target | what it does |\n|---|---|\n" + "\n".join(rows)


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(\n<!-- /generated:{re.escape(name)} -->)", re.S)


def _block(text: str, name: str) -> str:
    found = _pattern(name).search(text)
    return found[0] if found else ""


def replace(text: str, name: str, body: str) -> str:
    pattern = _pattern(name)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- generated:{name} --> ... <!-- /generated:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def blocks(base: Path, runs: list[Path], models: list[Path]) -> dict[str, str]:
    """Each block's text: only those named by ``runs`` / ``models`` if either is given, else all."""
    out: dict[str, str] = {}
    if runs:
        kept = keep_runs([json.loads((p / "results.json").read_text(encoding="utf-8")) for p in runs])
        (base / RUNS).parent.mkdir(parents=True, exist_ok=True)
        (base / RUNS).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        out["pipeline"] = pipeline_table(kept)
    if models:
        out["models"] = models_text(models)
    if runs or models:
        return out
    return {"pipeline": pipeline_table(json.loads((base / RUNS).read_text(encoding="utf-8"))),
            "models": models_text([base / p for p in MODELS]),
            "recall-help": help_text("recall"), "recall-eval-help": help_text("recall-eval"),
            "make-targets": make_targets(base / "Makefile")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", type=Path, default=[], help="a `recall-eval run` folder")
    ap.add_argument("--models", action="append", type=Path, default=[], help="a `recall-eval versus --out` file")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block differs")
    args = ap.parse_args()
    if args.check and (args.run or args.models):
        ap.error("--check compares every block with the committed inputs; give it no --run or --models")
    old = args.readme.read_text(encoding="utf-8")
    bodies = blocks(args.readme.resolve().parent, args.run, args.models)
    text = old
    for name, body in bodies.items():
        text = replace(text, name, body)
    if not args.check:
        args.readme.write_text(text, encoding="utf-8")
        return
    stale = [name for name in bodies if _block(old, name) != _block(text, name)]
    if stale:
        print(f"{args.readme.name}: generated blocks out of date: {', '.join(stale)}; run `make docs`",
              file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
