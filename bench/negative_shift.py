"""Experiment (issue #23): are a collection's written negatives as close to its notes as real
near misses are?

The calibrated floor lets through the share of the collection's negatives (``negatives.jsonl``)
that the target allows. If real near misses score lower against the notes than those negatives,
the measured silence lands above the target; higher, below. This prints each group's top note
score (the whole pipeline's ranking, ``Recall.rank``): median and 90th percentile.

    PYTHONPATH=$PWD python -m bench.negative_shift --notes ../shared/benchmarks/rules-120/notes \\
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/ns-rules \\
        -q datasets/rules-120/audit/rules-i.jsonl -q datasets/rules-120/audit/rules-m.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from recall.api import Recall
from recall.embedding.models import get_embedder
from recall.ranking.negatives import NEGATIVES_FILE
from recall_eval.datasets.collections import load_questions
from recall_eval.scoring.score import effective_config, source_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path, required=True, help="questions.jsonl; negatives.jsonl beside it")
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True, help="sets with near misses")
    args = ap.parse_args()
    config = effective_config(None)
    app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
    app.index([source_spec(args.notes, args.note_questions, True)])
    negatives = [json.loads(line)["text"] for line in
                 (args.note_questions.parent / NEGATIVES_FILE).read_text(encoding="utf-8").splitlines() if line.strip()]
    near = [q.text for p in args.questions for q in load_questions(p)
            if q.kind == "unrelated" and q.style == "near-miss"]
    for name, texts in (("written negatives", negatives), ("near misses in the sets", near)):
        tops = sorted(app.rank(t)[0].score for t in texts)
        print(f"{name:24s} n {len(tops):4d}  top score median {statistics.median(tops):.3f}  "
              f"p90 {tops[int(0.9 * (len(tops) - 1))]:.3f}")
    app.store.close()


if __name__ == "__main__":
    main()
