"""Experiment (issue #23): where the wrong headlines come from, and two rules replayed on them.

For every related message the shipped pipeline speaks on, is its first headline right, and how
often is a headline after the first right? Then two changes replayed on the same answers (no
new search): a tighter ``[selector] headline_margin`` (a headline after the first kept only
within this of the top), and a floor under the nearest known negative's score (the evidence
``top + neg_weight * (top - max(negative, floor))``: a message far from the negatives and the
notes alike no longer looks far from the negatives only), each with what it does to injected
hits, precision, and silence on near misses and on asides.

    PYTHONPATH=$PWD python -m bench.headline_sources --notes ../shared/benchmarks/rules-120/notes \\
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/hs-rules \\
        -q datasets/rules-120/audit/rules-f.jsonl -q datasets/rules-120/audit/rules-g.jsonl
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from recall_eval.datasets.collections import load_questions


@dataclass
class Answer:
    kind: str  # "paraphrase" or "unrelated"
    style: str
    expected: set[str]
    chosen: list[tuple[str, float]]  # (note id, score) handed over, best first
    negative: float | None


def _answers(args) -> tuple[list[Answer], float, float]:
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall_eval.scoring.score import effective_config, source_spec

    config = effective_config(None)
    app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
    app.index([source_spec(args.notes, args.note_questions, True)])
    out = []
    for q in (q for p in args.questions for q in load_questions(p)):
        r = app.query(q.text)
        out.append(Answer(q.kind, q.style, set(q.expected), [(h.note["id"], h.score) for h in r.decision.chosen],
                          r.decision.negative))
    t = app.rule().thresholds
    app.store.close()
    return out, t.top_floor, t.neg_weight


def _summary(name: str, answers: list[Answer], keep) -> str:
    """``keep(answer) -> the headlines handed over`` replayed on every answer."""
    related = [a for a in answers if a.kind == "paraphrase"]
    heads = [keep(a) for a in related]
    shown = sum(len(h) for h in heads)
    right = sum(len({n for n, _ in h} & a.expected) for h, a in zip(heads, related, strict=True))
    injected = sum(bool({n for n, _ in h} & a.expected) for h, a in zip(heads, related, strict=True))

    def silence(style: str) -> float:
        group = [a for a in answers if a.kind != "paraphrase" and a.style == style]
        return sum(not keep(a) for a in group) / max(1, len(group))

    return (f"{name:34s} injected {injected / len(related):.3f}  precision {right / max(1, shown):.3f}  "
            f"near misses silent {silence('near-miss'):.3f}  asides silent {silence('other'):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path, required=True, help="questions.jsonl; negatives.jsonl beside it")
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True)
    args = ap.parse_args()
    answers, top_floor, neg_weight = _answers(args)
    spoken = [a for a in answers if a.kind == "paraphrase" and a.chosen]
    first_right = sum(a.chosen[0][0] in a.expected for a in spoken)
    extras = [(n, a) for a in spoken for n, _ in a.chosen[1:]]
    print(f"{len(spoken)} related messages spoken on: the first headline right {first_right / len(spoken):.3f}; "
          f"{len(extras)} headlines after the first, {sum(n in a.expected for n, a in extras)} of them right")
    for margin in (0.02, 0.01, 0.0):
        def within(a: Answer, m: float = margin) -> list[tuple[str, float]]:
            return a.chosen[:1] + [c for c in a.chosen[1:] if c[1] >= a.chosen[0][1] - m - 1e-9]
        print(_summary(f"headline_margin {margin}", answers, within))
    for floor in (None, 0.30, 0.33, 0.35, 0.38):
        def kept(a: Answer, f: float | None = floor) -> list[tuple[str, float]]:
            if not a.chosen or f is None or a.negative is None:
                return a.chosen
            top = a.chosen[0][1]
            return a.chosen if top + neg_weight * (top - max(a.negative, f)) >= top_floor else []
        print(_summary("negative floor " + ("off (shipped)" if floor is None else f"{floor}"), answers, kept))


if __name__ == "__main__":
    main()
