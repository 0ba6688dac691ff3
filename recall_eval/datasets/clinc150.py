"""CLINC150 (Larson et al., EMNLP 2019) as a note collection and its query splits.

One note per intent, built from its ``train`` utterances:

    file stem    the intent (``credit_limit_change``)
    name         the intent with spaces (embeds better than snake_case)
    description  the first DESCRIPTION_UTTERANCES utterances, joined by "; "
    body         the other utterances, one per line (the chunker keeps 6 chunks)

``load`` reads ``data_full.json``; ``subsample`` cuts each query split, seeded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from recall_eval.datasets.collections import PROJECT_ROOT

DEFAULT_PATH = PROJECT_ROOT.parent / "shared" / "benchmarks" / "clinc150" / "data_full.json"
DESCRIPTION_UTTERANCES = 5
QUERY_SPLITS = ("val", "oos_val", "test", "oos_test")


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
