"""How far apart are related and unrelated messages, feature by feature (issue #23)?

The selector speaks when a message's evidence clears a floor. No floor can do better than the
features allow: this prints, for each feature the selector has (or could have) and for a
learned combination of them, the ROC AUC related vs unrelated and the **ceiling**: the
injected hit rate an oracle floor reaches at the target silence when it is fitted on the
very messages it is scored on. The shipped calibration never sees those messages, so its
measured injected hit rate sits at or below the ceiling; the gap between the two is what
calibration could still win, the ceiling itself is what only better features can raise.

    PYTHONPATH=$PWD python -m bench.separation --notes ../shared/benchmarks/rules-120/notes \
        --note-questions datasets/rules-120/questions.jsonl --home /tmp/sep \
        -q datasets/rules-120/heldout/rules-h.jsonl --extra-negatives more.jsonl

``--extra-negatives``: more negatives for the collection (JSONL lines ``{"text": ...}``),
added to its ``negatives.jsonl`` in a copy: does the margin over the nearest negative
separate better with more of them? Pass dev sets only (never an audit set you still mean to
audit with).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

FEATURES = ("top", "margin", "evidence", "top-second", "gap")


def _features(result) -> dict[str, float] | None:
    from recall.ranking.selector import evidence, gap_of

    notes = [h for h in result.hits if not h.is_conversation]
    if not notes:
        return None
    scores = [h.score for h in notes]
    neg = result.decision.negative if result.decision.negative is not None else -1.0
    w = result.rule.thresholds.neg_weight
    return {"top": scores[0], "margin": scores[0] - neg, "evidence": evidence(scores[0], neg, w),
            "top-second": scores[0] - (scores[1] if len(scores) > 1 else -1.0),
            "gap": gap_of(scores) or scores[0]}


def ceiling(values_pos: np.ndarray, hit_pos: np.ndarray, values_neg: np.ndarray, target: float) -> float:
    """Share of related messages above the lowest floor that keeps ``target`` silence on these
    negatives and with their note in the top three (what a perfect per-headline test hands over)."""
    floor = float(np.quantile(values_neg, target, method="higher")) + 1e-9
    return float(np.mean((values_pos >= floor) & hit_pos))


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import cross_val_predict

    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall_eval.datasets.collections import load_questions
    from recall_eval.scoring.score import effective_config, source_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=Path, required=True)
    ap.add_argument("--note-questions", type=Path, required=True, help="questions.jsonl (negatives.jsonl beside it)")
    ap.add_argument("-q", "--questions", type=Path, action="append", required=True)
    ap.add_argument("--home", type=Path, required=True, help="a scratch RECALL_HOME (the index goes there)")
    ap.add_argument("--extra-negatives", type=Path)
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--model", help="model spec (default: the effective config's)")
    ap.add_argument("--dump", type=Path, help="write each message's features here (JSONL, ids and features only)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    questions = [q for path in args.questions for q in load_questions(path)]
    config = effective_config(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        nq = args.note_questions
        if args.extra_negatives:  # a copy of the questions file with more negatives beside it
            nq = Path(tmp) / nq.name
            shutil.copy(args.note_questions, nq)
            negatives = (args.note_questions.parent / "negatives.jsonl").read_text(encoding="utf-8")
            (Path(tmp) / "negatives.jsonl").write_text(
                negatives.rstrip("\n") + "\n" + args.extra_negatives.read_text(encoding="utf-8"), encoding="utf-8")
        app = Recall(home=args.home, config=config, embedder=get_embedder(config.model))
        app.index([source_spec(args.notes, nq, True)])
        cal = app.calibration
        rows = []
        for q in questions:
            r = app.query(q.text, search_short=True)
            f = _features(r)
            ids = [h.note.get("id") for h in r.hits if not h.is_conversation]
            chosen = [h.note.get("id") for h in r.decision.chosen]
            rows.append((q, f, bool(set(ids[:3]) & set(q.expected)), bool(set(chosen) & set(q.expected)), bool(chosen)))
        app.store.close()

    if args.dump:
        args.dump.write_text("".join(json.dumps({"id": q.id, "kind": q.kind, "hit3": h, "injected": i, "spoke": sp,
                                                 "features": f}) + "\n" for q, f, h, i, sp in rows))
    pos = [(f, hit3, inj) for q, f, hit3, inj, _s in rows if q.kind == "paraphrase" and f is not None]
    neg = [(f, spoke) for q, f, _h, _i, spoke in rows if q.kind == "unrelated" and f is not None]
    n_pos = sum(1 for q, *_ in rows if q.kind == "paraphrase")
    n_neg = sum(1 for q, *_ in rows if q.kind == "unrelated")
    hit = np.array([h for _f, h, _i in pos])
    out = {"negatives": None if cal is None else cal.negatives, "neg_weight": None if cal is None else cal.neg_weight,
           "related": n_pos, "unrelated": n_neg, "target": args.target,
           "measured": {"injected": sum(i for *_x, i in pos) / n_pos,
                        "silence": 1 - sum(i for _f, i in neg) / n_neg},  # no note in scope: silent
           "features": {}}
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    for name in FEATURES:
        vp = np.array([f[name] for f, *_ in pos])
        vn = np.array([f[name] for f, _ in neg])
        out["features"][name] = {"auc": float(roc_auc_score(y, np.r_[vp, vn])),
                                 "ceiling_injected": ceiling(vp, hit, vn, args.target) * len(pos) / n_pos}
    X = np.array([[f[n] for n in FEATURES] for f, *_ in pos] + [[f[n] for n in FEATURES] for f, _ in neg])
    p = cross_val_predict(LogisticRegression(C=10.0, max_iter=5000), X, y, cv=5, method="predict_proba")[:, 1]
    out["features"]["learned (5-fold)"] = {
        "auc": float(roc_auc_score(y, p)),
        "ceiling_injected": ceiling(p[: len(pos)], hit, p[len(pos):], args.target) * len(pos) / n_pos}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    m = out["measured"]
    print(f"{n_pos} related / {n_neg} unrelated; negatives known {out['negatives']}, neg_weight {out['neg_weight']}; "
          f"shipped pipeline measured: injected {m['injected']:.3f}, silence {m['silence']:.3f}")
    print(f"{'feature':18s} {'AUC':>6s}  injected at silence {args.target} (floor fitted on these messages)")
    for name, v in out["features"].items():
        print(f"{name:18s} {v['auc']:6.3f}  {v['ceiling_injected']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
