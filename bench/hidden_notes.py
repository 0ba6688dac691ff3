"""Experiment (issue #23): which share of a collection's hidden notes' questions must a floor keep
silent to land a target silence on real unrelated messages? (``recall.ranking.hidden_notes``)

Each note's questions asked with the whole note out of the index (``held_out_features``,
``whole_note``) play near misses no writer chose. This indexes a collection as ``recall index``
does (its questions and negatives), computes in the calibration's own space (each note's best
dense row, the margin over the nearest known negative at the calibrated ``neg_weight``) the
evidence of the hidden notes' questions, of the written negatives and of the sets' unrelated
messages, and prints, for each target silence, the share of the hidden notes' questions (and of
the written negatives) kept silent by the floor that meets the target on the sets' unrelated
messages: the steadier that share across collections, the better it calibrates. ``TABLES`` holds the mean of these over
rules-120, kinopeee and the sample (pass dev sets only).

    PYTHONPATH=$PWD python -m bench.hidden_notes --notes ../shared/benchmarks/rules-120/notes \\
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/hn-rules \\
        -q datasets/rules-120/audit/rules-f.jsonl -q datasets/rules-120/audit/rules-g.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

TARGETS = (0.75, 0.80, 0.85, 0.90, 0.93, 0.95, 0.97)


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall.ranking import negatives as negs
    from recall.ranking.calibration import _negative_features, held_out_features, note_scores
    from recall.ranking.calibration_inputs import chunks_of, embed_cached
    from recall.store.vectors import index_dir
    from recall_eval.datasets.collections import load_questions
    from recall_eval.scoring.score import effective_config, source_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path, required=True, help="questions.jsonl (negatives.jsonl beside it)")
    ap.add_argument("--home", type=Path, required=True, help="a scratch RECALL_HOME (the index goes there)")
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True, help="sets with unrelated messages")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    config = effective_config(None)
    app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
    app.index([source_spec(args.notes, args.note_questions, True)])
    w = app.calibration.neg_weight
    chunks = chunks_of(app.store, app.embedder.model_id)
    muted = app.store.muted(app.embedder.model_id)
    keep = np.array([h not in muted for h in chunks.hashes])
    matrix, chunk_note, is_question = chunks.matrix[keep], chunks.note[keep], chunks.question[keep]
    _keys, origins, nv = negs.load(index_dir(app.embedder.model_id, args.home) / negs.FILE)
    written = _negative_features(nv, [i for i, o in enumerate(origins) if o != "bank"], matrix, chunk_note)
    asked = chunks.question & keep
    hidden = held_out_features(chunks.matrix[asked], chunks.note[asked], matrix, chunk_note, is_question, nv, True)
    unrelated = [q.text for p in args.questions for q in load_questions(p) if q.kind == "unrelated"]
    mv = embed_cached(app.embedder, app.store, unrelated, {})
    top = note_scores(mv, matrix, chunk_note).max(axis=1)
    real = top + w * (top - (mv @ nv.T).max(axis=1))
    notes = hidden.top + w * hidden.margin
    negatives = written.top + w * written.margin
    app.store.close()
    out = {"model_id": chunks.model_id, "neg_weight": w, "hidden_questions": len(notes), "unrelated": len(unrelated),
           "written_negatives": len(negatives), "share_for_target": {}, "written_for_target": {}}
    for target in TARGETS:
        floor = float(np.quantile(real, target, method="higher")) + 1e-9
        out["share_for_target"][f"{target:g}"] = round(1 - float(np.mean(notes >= floor)), 3)
        out["written_for_target"][f"{target:g}"] = round(1 - float(np.mean(negatives >= floor)), 3)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{out['model_id']}: neg_weight {w:g}, {len(notes)} hidden notes' questions, {len(negatives)} written"
          f" negatives, {len(unrelated)} unrelated messages")
    for target, share in out["share_for_target"].items():
        print(f"  silence {target} on the sets' unrelated messages <- {share:.3f} of the hidden questions silent,"
              f" {out['written_for_target'][target]:.3f} of the written negatives")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
