"""CLINC150 (Larson et al., EMNLP 2019): the standard out-of-scope benchmark, as notes.

The notes (one per intent) are written by ``recall_eval.datasets.clinc150``.

In-scope queries are ``test``; out-of-scope queries ``oos_test``; ``oos_train`` is the
collection's ``negatives.jsonl``. The shipped pipeline runs unchanged: ``recall index``
calibrates itself on the negatives (no ``val`` split is used), and every query goes
through ``Recall.query``. An in-scope query counts when the top note is its intent AND
recall speaks; an out-of-scope one when recall stays silent. Besides that one operating
point, the result holds the whole trade-off curve and, read off it, the out-of-scope
recall at each published system's in-scope accuracy (equal accuracy, the only fair way to
set one system's silence beside another's).

    in_scope_accuracy   share of ``test`` answered with the right intent, not silenced
    oos_recall          share of ``oos_test`` that gets nothing (Larson's "recall")
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from recall.api import Recall
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.ranking.negatives import NEGATIVES_FILE as NEGATIVES
from recall.ranking.scope import Scope
from recall.ranking.selector import evidence
from recall_eval.datasets.clinc150 import QUERY_SPLITS, load, subsample, write_notes
from recall_eval.files import write_private
from recall_eval.scoring.retrievers import CoreRetriever
from recall_eval.scoring.score import effective_config, eval_home
from recall_eval.scoring.stats import bootstrap_ci

# Larson et al. 2019, Table 1, "Full" columns: (in-scope accuracy, out-of-scope recall).
PUBLISHED = {"BERT": (0.962, 0.523), "MLP": (0.934, 0.491), "SVM": (0.882, 0.180),
             "FastText": (0.886, 0.283), "DialogFlow": (0.908, 0.267), "Rasa": (0.909, 0.312)}


def ask_split(app: Recall, texts: list[str], progress: Callable[[int], None]) -> list[dict]:
    """What the shipped pipeline makes of each text (``CoreRetriever``: ``Recall.query``, fusion, negatives,
    calibrated thresholds): the top note, the dense top score, the nearest negative's score
    and whether it spoke."""
    out = []
    core = CoreRetriever(app, scope=Scope(everything=True))
    for text in texts:
        core.search({"q": text})
        a = core.answer("q")
        d = a.decision
        assert d is not None  # query() always decides
        out.append({"top_id": a.hits[0].note["id"] if a.hits else None,
                    "ids3": [h.note["id"] for h in a.hits[:3]],
                    "top": d.top if d.top is not None else -1.0, "negative": d.negative,
                    "spoke": d.kind != "nothing",
                    "long_enough": len(text.strip()) >= app.rule().selector.min_prompt_chars})
        progress(1)
    return out


def curve(rows: list[dict], labels: list[str | None], neg_weight: float, points: int = 201) -> dict:
    """In-scope accuracy and out-of-scope recall as the floor on the evidence moves (the
    calibrated ``neg_weight`` kept): the whole trade-off, not one operating point."""
    ev = np.array([evidence(r["top"], r["negative"], neg_weight) for r in rows])
    ok = np.array([r["long_enough"] for r in rows])
    is_oos = np.array([label is None for label in labels])
    correct = np.array([r["top_id"] == label for r, label in zip(rows, labels, strict=True)])
    floors = np.unique(np.quantile(ev, np.linspace(0, 1, points)))
    speak = (ev[None, :] >= floors[:, None]) & ok[None, :]
    acc = (speak & correct[None, :])[:, ~is_oos].mean(axis=1)
    rec = (~speak)[:, is_oos].mean(axis=1)
    return {"floor": floors.round(6).tolist(), "in_scope_accuracy": acc.round(4).tolist(),
            "oos_recall": rec.round(4).tolist()}


def at_published_accuracy(c: dict) -> dict:
    """Our out-of-scope recall at each published system's in-scope accuracy (read off the
    test curve: the comparison at equal accuracy that Larson et al.'s table does not make),
    None where our curve never reaches that accuracy."""
    out = {}
    for name, (acc, rec) in PUBLISHED.items():
        reach = [r for a, r in zip(c["in_scope_accuracy"], c["oos_recall"], strict=True) if a >= acc]
        out[name] = {"their_in_scope_accuracy": acc, "their_oos_recall": rec,
                     "our_oos_recall": max(reach) if reach else None}
    return out


def _rate(values: np.ndarray, seed: int) -> dict:
    ci = bootstrap_ci(values.astype(float), seed=seed)
    return {"value": round(float(values.mean()), 4) if values.size else None,
            "ci95": [round(c, 4) for c in ci] if ci else None, "n": int(values.size)}


def evaluate(path: Path, *, model: str | None = None, limit: int | None = None, per_intent: int | None = None,
             home: Path | None = None, seed: int = 0, progress: bool = False,
             log: Callable[[str], None] = lambda _m: None) -> dict:
    # Long because: one indexing session (a throwaway recall home) that asks both splits and builds the result;
    # splitting it would pass the open app around.
    """Index one note per intent with ``oos_train`` as the collection's negatives, let
    ``recall index`` calibrate itself (no val split used), then ask ``test`` + ``oos_test``
    through the shipped pipeline."""
    from tqdm import tqdm

    t0 = time.perf_counter()
    data = subsample(load(path), limit, seed)
    config = effective_config(model)
    embedder = get_embedder(config.model, gemini=config.gemini)
    # The notes live inside the evaluation home at a fixed path: with a given (cached)
    # home, a second run finds the same source and re-embeds nothing.
    with eval_home(Path(str(path)), home) as where:
        notes_dir = where / "clinc150-notes"
        shutil.rmtree(notes_dir, ignore_errors=True)
        intents = write_notes(data["train"], notes_dir, per_intent)
        write_private(notes_dir / NEGATIVES, "".join(json.dumps({"text": t, "kind": "oos_train"}) + "\n"
                                                     for t, _ in data.get("oos_train", [])))
        app = Recall(home=where, config=config, embedder=embedder)
        log(f"indexing {len(intents)} intent notes with {embedder.model_id}")
        with tqdm(total=None, unit="chunk", desc="embedding notes", file=sys.stderr, disable=not progress,
                  leave=False) as bar:
            app.index([SourceSpec("dir", notes_dir)], progress=lambda n, _d: bar.update(n))
        index_s = time.perf_counter() - t0
        settings = app.rule().thresholds
        cal = app.calibration
        total = len(data["test"]) + len(data["oos_test"])
        with tqdm(total=total, unit="q", desc="queries", file=sys.stderr, disable=not progress,
                  leave=False) as bar:
            rows = ask_split(app, [t for t, _ in data["test"] + data["oos_test"]], bar.update)
        app.store.close()

    labels = [label for _, label in data["test"]] + [None] * len(data["oos_test"])
    is_oos = np.array([label is None for label in labels])
    spoke = np.array([r["spoke"] for r in rows])
    correct = np.array([r["top_id"] == label for r, label in zip(rows, labels, strict=True)])
    correct3 = np.array([label in r["ids3"] for r, label in zip(rows, labels, strict=True)])
    c = curve(rows, labels, settings.neg_weight)
    intervals = {"in_scope_accuracy": _rate((correct & spoke)[~is_oos], seed),
                 "oos_recall": _rate((~spoke)[is_oos], seed),
                 "hit_rate@1": _rate(correct[~is_oos], seed), "hit_rate@3": _rate(correct3[~is_oos], seed)}
    result = {
        **{name: rate["value"] for name, rate in intervals.items()},
        "intervals": intervals,
        "primary_metric": "accuracy_with_abstention",
        "accuracy_with_abstention": round(float(np.where(is_oos, ~spoke, spoke & correct).mean()), 4),
        "thresholds": {"top_floor": settings.top_floor, "neg_weight": settings.neg_weight,
                       "gap_floor": settings.gap_floor},
        "tuning": {"on": "oos_train as the collection's negatives (self-calibration, as `recall index` does); "
                         "val and oos_val unused", "target_silence": cal.target_silence if cal else None,
                   "mode": cal.mode if cal else None},
        "pipeline": "shipped (Recall.query: dense + BM25 fusion, negatives, self-calibrated thresholds)",
        "curve": c,
        "at_published_accuracy": at_published_accuracy(c),
        "model": {"spec": config.model, "model_id": embedder.model_id},
        "n": {"intents": len(intents), **{s: len(data[s]) for s in (*QUERY_SPLITS, "oos_train") if s in data}},
        "limit": limit, "train_per_intent": per_intent, "seed": seed,
        "published": {k: {"in_scope_accuracy": a, "oos_recall": r} for k, (a, r) in PUBLISHED.items()},
        "seconds": round(time.perf_counter() - t0, 1),
        "index_seconds": round(index_s, 1),
        "data": str(path),
    }
    return result


def table(result: dict) -> str:
    """Our self-calibrated point, then each published system beside our out-of-scope recall
    at that system's in-scope accuracy, in percent as the paper prints them."""
    pct = (lambda v: "-" if v is None else f"{v * 100:.1f}")  # noqa: E731
    lines = [f"recall ({result['model']['model_id']}), self-calibrated on oos_train: in-scope accuracy "
             f"{pct(result['in_scope_accuracy'])}, out-of-scope recall {pct(result['oos_recall'])}",
             f"{'system':<12} {'in-scope acc':>12} {'their oos recall':>17} {'recall at that acc':>19}"]
    for name, row in result["at_published_accuracy"].items():
        lines.append(f"{name:<12} {pct(row['their_in_scope_accuracy']):>12} {pct(row['their_oos_recall']):>17} "
                     f"{pct(row['our_oos_recall']):>19}")
    return "\n".join(lines)
