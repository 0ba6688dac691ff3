"""Experiment (issue #23): which per-headline test, and which calibration of the negatives.

Replays the selector offline on a ``recall-eval run``'s per-question records (the default
pipeline's ranking, scores and nearest-negative score), with thresholds re-fitted on the
collection itself by each calibration variant, then each per-headline rule. Nothing here
reads a set it is not given: pass only dev sets (the shipped sets, ``*-h`` held-out sets).

    PYTHONPATH=$PWD python -m bench.headline_gate --collection sample --model usem3 \
        --home /tmp/gate/home --results reports/sample/<run>/results.json --sets default,sample-h

Prints one row per (calibration, rule): calibrated silence estimate, then per set measured
silence, injected hit rate, headline precision, headlines per message.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from recall.api import Recall
from recall.ranking import calibration as C
from recall.ranking import calibration_inputs as CI
from recall.ranking.selector import evidence, gap_of
from recall_eval.datasets.collections import PROJECT_ROOT
from recall_eval.scoring import metrics as M
from recall_eval.scoring.score import effective_config, eval_home, source_spec


def fitted(app: Recall, target: float, loo: bool, one_question: bool = False) -> tuple:
    """(thresholds, estimated silence, estimated injected, learned gate) as recall.ranking.calibration
    fits them; ``loo``: each negative sees every other one as the known negatives (as a real
    message does at search time) instead of half of them; ``one_question``: a positive holds
    out only its own question chunk, not all of its note's; the gate: a logistic regression
    over each of the top 3 candidates (``learn_gate``), its threshold set on the negatives."""
    from recall.ranking import negatives as negs

    found, _ = negs.collect([app_negatives(app)])
    cache: dict = {}
    nv = CI.embed_cached(app.embedder, app.store, [n.text for n in found], cache)
    c = CI.chunks_of(app.store, app.embedder.model_id)
    matrix, chunk_note, is_question, pks = c.matrix, c.note, c.question, c.pks
    pos_of = {pk: i for i, pk in enumerate(pks)}
    qrows = app.store.db.execute("SELECT note_id, text FROM chunks WHERE role = 'question' ORDER BY note_id, ord"
                                 ).fetchall()
    qrows = [(pos_of[pk], t) for pk, t in qrows if pk in pos_of]
    qv = CI.embed_cached(app.embedder, app.store, [t for _, t in qrows], cache)
    owner = np.array([n for n, _ in qrows])
    held = (chunk_note[None, :] == owner[:, None]) & is_question[None, :]
    if one_question:  # hold out only the question asked: the note's other questions stay indexed
        qchunks = np.flatnonzero(is_question)
        assert len(qchunks) == len(qrows)
        held = np.zeros_like(held)
        held[np.arange(len(qrows)), qchunks] = True
    pscores = C.note_scores(qv, matrix, chunk_note, held)
    pos = C.features(pscores, qv @ nv.T, owner)
    own = [i for i, n in enumerate(found) if n.origin != "bank"]
    neg = C._negative_features(nv, own, matrix, chunk_note) if loo else two_folds(nv, own, matrix, chunk_note)
    th, inj, sil = C.choose(pos, neg, target)
    nscores = C.note_scores(nv[own], matrix, chunk_note)
    nneg = neg.neg
    gate = learn_gate(pscores, pos.neg, owner, nscores, nneg, target)
    return th, sil, inj, gate


K = 3


def two_folds(nv, asked, matrix, chunk_note, seed: int = 0) -> C.Features:
    """The calibration before issue #23: each half of the negatives against the other half."""
    order = np.random.default_rng(seed).permutation(np.asarray(asked))
    folds = []
    for fold in (order[::2], order[1::2]):
        known = np.setdiff1d(np.arange(len(nv)), fold)
        folds.append(C.features(C.note_scores(nv[fold], matrix, chunk_note), nv[fold] @ nv[known].T))
    return C.Features(*(np.r_[getattr(folds[0], k), getattr(folds[1], k)] for k in ("top", "neg", "hit")))


def cand_features(sorted_scores, neg):
    """Rows per candidate (rank 0..K-1): score, its distance to the top, its margin over the
    nearest negative, the top's margin, and the rank."""
    s = np.asarray(sorted_scores, float)[:K]
    neg = -1.0 if neg is None else neg
    rows = []
    for r in range(len(s)):
        rows.append([s[r], s[r] - s[0], s[r] - neg, s[0] - neg, float(r == 0), float(r == 1)])
    return np.array(rows)


def learn_gate(pscores, pneg, owner, nscores, nneg, target):
    from sklearn.linear_model import LogisticRegression

    X, y = [], []
    for i in range(len(pscores)):
        order = np.argsort(-pscores[i])[:K]
        X.append(cand_features(pscores[i][order], pneg[i]))
        y += [float(n == owner[i]) for n in order]
    nx = []
    for i in range(len(nscores)):
        f = cand_features(np.sort(nscores[i])[::-1], nneg[i])
        nx.append(f)
        y += [0.0] * len(f)
    X = np.vstack(X + nx)
    mean, scale = X.mean(0), X.std(0) + 1e-9
    lr = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit((X - mean) / scale, y)

    def prob(sorted_scores, neg):
        f = cand_features(sorted_scores, neg)
        return lr.predict_proba((f - mean) / scale)[:, 1]

    pmax = np.array([prob(np.sort(nscores[i])[::-1], nneg[i]).max() for i in range(len(nscores))])
    theta = float(np.quantile(pmax, target, method="higher")) + 1e-9
    return prob, theta


def app_negatives(app: Recall) -> Path:
    return app._gate_negatives  # type: ignore[attr-defined]


def replay(records: list[dict], th: dict, full_gap: float, full_margin: float, rule: str, gate=None
           ) -> list[M.Record]:
    out = []
    w, floor = th["neg_weight"], th["top_floor"]
    for r in records:
        scores, ids, neg = r["scores"], r["ranked"], r["negative"]
        injected: list[str] = []
        if rule.startswith("lr"):
            prob, theta = gate
            if rule == "lr-half":
                theta = 0.5
            p = prob(scores, neg) if scores and len(r["text"].strip()) >= 8 else np.zeros(0)
            injected = [ids[i] for i in range(len(p)) if p[i] >= theta] if len(p) and p.max() >= theta else []
        elif scores and len(r["text"].strip()) >= 8 and evidence(scores[0], neg, w) >= floor:
            top = scores[0]
            gap = gap_of(scores) if len(scores) > 1 else top
            if gap < full_gap:
                cand = list(range(min(3, len(ids))))
            else:
                cand = [i for i in range(len(ids)) if scores[i] >= top - full_margin][:3]
            injected = [ids[i] for i in cand if keep(rule, i, scores, neg, w, floor)]
        rec = M.Record(**{k: v for k, v in r.items() if k in M.Record.__dataclass_fields__})
        rec.injected = injected
        rec.decision = "short" if injected else "nothing"
        out.append(rec)
    return out


def keep(rule: str, i: int, scores: list[float], neg: float | None, w: float, floor: float) -> bool:
    if i == 0 or rule == "as-is":
        return True
    if rule == "top1":
        return False
    ok = True
    for part in rule.split("+"):
        if part == "floor":
            ok &= evidence(scores[i], neg, w) >= floor
        elif part.startswith("rel"):
            ok &= scores[i] >= scores[0] - float(part[3:])
    return ok


RULES = ("as-is", "top1", "floor", "rel0.01", "rel0.02", "rel0.03", "rel0.05", "floor+rel0.01", "floor+rel0.02",
         "floor+rel0.03", "floor+rel0.05", "lr")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--collection", required=True)
    ap.add_argument("--notes", type=Path)
    ap.add_argument("--model", default="usem3")
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--sets", default="default")
    ap.add_argument("--target", type=float, default=0.9)
    a = ap.parse_args()
    data = PROJECT_ROOT / "datasets" / a.collection
    notes = a.notes or data / "notes"
    results = json.loads(a.results.read_text())
    blocks = {}
    for s in a.sets.split(","):
        block = results if s == "default" else results["heldout"][s]
        blocks[s] = block["pipelines"]["default"]["records"]
    config = effective_config(a.model)
    spec = source_spec(notes, data / "questions.jsonl")
    t = config.rule(config.model).thresholds
    with eval_home(notes, a.home) as where:
        app = Recall(home=where, config=config)
        app._gate_negatives = spec.negatives_file()  # type: ignore[attr-defined]
        app.index([spec])
        t = app.rule().thresholds
        for loo, one_q in ((False, False), (True, False), (True, True)):
            th, sil, inj, gate = fitted(app, a.target, loo, one_q)
            print(f"\n== calibration {'leave-one-out' if loo else 'two folds'}"
                  f"{', one question held out' if one_q else ''}: {th} est silence {sil:.3f} est injected {inj}")
            for rule in RULES:
                cells = []
                for s, recs in blocks.items():
                    m = M.summarize(replay(recs, th, t.full_gap, t.full_margin, rule, gate))
                    cells.append(f"{s}: sil {m['silence_rate'].value:.3f} inj {m['injected_hit_rate'].value:.3f} "
                                 f"prec {fv(m['headline_precision'])} hpm {m['headlines_per_message'].value:.2f}")
                print(f"{rule:<14} " + " | ".join(cells))


def fv(metric) -> str:
    return "  -  " if metric.value is None else f"{metric.value:.3f}"


if __name__ == "__main__":
    main()
