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

from recall_eval.datasets.collections import PROJECT_ROOT, DatasetError
from recall_eval.files import write_private

DEFAULT_PATH = PROJECT_ROOT.parent / "shared" / "benchmarks" / "clinc150" / "data_full.json"
DESCRIPTION_UTTERANCES = 5
QUERY_SPLITS = ("val", "oos_val", "test", "oos_test")


def load(path: Path) -> dict:
    """``data_full.json``: each split a list of ``[text, intent]`` pairs (``oos_*``: intent
    ``"oos"``); anything else is one line naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("train"), list):
            raise ValueError("no train split")
        for split in ("train", *QUERY_SPLITS, "oos_train"):
            rows = data.get(split, [])
            if not isinstance(rows, list) or not all(
                    isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r) for r in rows):
                raise ValueError(f"{split!r} is not a list of [text, intent] pairs")
        if not data["train"] or not any(r[1] != "oos" for r in data["train"]):
            raise ValueError("no intent has training lines: no note to score against")
        if not data.get("test") or not data.get("oos_test"):
            raise ValueError("the 'test' or 'oos_test' split is empty: nothing to score")
    except (ValueError, RecursionError) as exc:  # JSON's errors and UnicodeDecodeError are ValueErrors
        raise DatasetError(f"{path} is not CLINC150's data_full.json ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200]}): get it from clinc/oos-eval") from None
    return data


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
    for intent, utterances in sorted(by_intent.items()):
        if per_intent:
            utterances = utterances[:per_intent]
        desc = "; ".join(utterances[:DESCRIPTION_UTTERANCES])
        body = "\n".join(utterances[DESCRIPTION_UTTERANCES:])
        name = intent.replace("_", " ")
        write_private(out / f"{intent}.md",
                      f"---\nname: {json.dumps(name)}\ndescription: {json.dumps(desc, ensure_ascii=False)}\n"
                      f"type: reference\n---\n\n{body}\n")
    return sorted(by_intent)
