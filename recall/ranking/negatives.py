"""Negatives: messages that no note answers, the evidence for staying silent.

A note collection's own near misses ("same project, same topics, no note answers it") are
what a memory must learn to ignore: absolute scores do not say it (multilingual-e5 scores
any two texts 0.65-0.85), and thresholds tuned on one collection do not transfer to the
next. recall keeps two kinds, both embedded on the query side like a message:

* a folder's negatives file ``negatives.jsonl``, one message per line,
  ``{"text": "...", "lang": "en", "kind": "near-miss" | "general" | "chitchat"}``,
  written by ``recall-eval expand`` (a model that sees only the notes) or by hand;
* a small bank shipped with recall (``recall/ranking/data/offtopic.jsonl``): chit-chat,
  continuations and off-domain questions in English and Japanese, so that a collection
  without a negatives file still has something to calibrate against.

They serve twice: at search time the best negative's score is compared with the best
note's (a message closer to a known non-question than to any note is not about the
notes: k-NN out-of-scope detection), and ``recall.ranking.calibration`` fits the thresholds on
them. Texts are masked for secrets before anything is embedded; only vectors and hashes
reach disk (``negatives.npz`` beside the index).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall.notes.problems import Problem, capped
from recall.notes.questions import NEGATIVES_FILE as NEGATIVES_FILE
from recall.privacy.decoding import Binary, decode
from recall.privacy.masking import mask_secrets
from recall.privacy.paths import LINKED_OUT, leads_outside, private_open
from recall.privacy.regular import LeftTheFolder, open_inside
from recall.privacy.safetext import whole
from recall.privacy.strays import replace_aside

FILE = "negatives.npz"
# A negative is a message: longer text is cut, like a note's questions.
MAX_CHARS = 300
# Past a few hundred per folder, more near misses add little and cost embedding time.
MAX_PER_SOURCE = 400
# A negatives file larger than this is not a list of messages someone wrote: read only its start.
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Negative:
    text: str
    origin: str  # "bank" or the negatives file's path

    @property
    def key(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:24]


def parse_line(line: str) -> str:
    """The message of one negatives file line; ValueError says why not."""
    try:
        obj = json.loads(line)
        text = obj["text"] if isinstance(obj, dict) else None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else exc
        raise ValueError(f'expected {{"text": "..."}} ({why})') from None
    if not isinstance(text, str) or not text.strip():
        raise ValueError('expected {"text": "..."} with a non-empty string')
    return whole(" ".join(text.split())[:MAX_CHARS])


def read_negatives_file(path: Path) -> tuple[list[Negative], list[Problem]]:
    problems: list[Problem] = []
    if leads_outside(path):
        return [], [Problem(str(path), LINKED_OUT)]
    try:
        with open(open_inside(path, os.path.realpath(path.parent)), "rb") as fh:  # what is opened is checked
            raw = fh.read(MAX_FILE_BYTES + 1)
    except LeftTheFolder:
        return [], [Problem(str(path), LINKED_OUT)]
    except OSError as exc:
        return [], [Problem(str(path), f"unreadable ({exc.strerror or exc}); no negatives from it")]
    if len(raw) > MAX_FILE_BYTES:
        raw = raw[:MAX_FILE_BYTES].rsplit(b"\n", 1)[0]
        problems.append(Problem(str(path), f"larger than {MAX_FILE_BYTES:,} bytes; only its start is read"))
    try:
        text, said = decode(raw, legacy=False)  # a byte-order mark, UTF-16 read as it is (recall.privacy.decoding)
    except Binary as exc:
        return [], [*problems, Problem(str(path), f"{exc}; no negatives from it")]
    problems += [Problem(str(path), line) for line in said]
    out: list[Negative] = []
    for i, line in enumerate(text.split("\n"), 1):  # not at U+2028
        if not line.strip():
            continue
        try:
            out.append(Negative(mask_secrets(parse_line(line)), str(path)))
        except ValueError as exc:
            problems.append(Problem(f"{path}:{i}", f"{exc}; line skipped"))
    if len(out) > MAX_PER_SOURCE:
        problems.append(Problem(str(path), f"{len(out)} negatives; the first {MAX_PER_SOURCE} are used"))
    return out[:MAX_PER_SOURCE], capped(problems, path)


def bank() -> list[Negative]:
    """The shipped off-topic and chit-chat messages (English and Japanese)."""
    text = resources.files("recall.ranking").joinpath("data/offtopic.jsonl").read_text(encoding="utf-8")
    return [Negative(parse_line(line), "bank") for line in text.splitlines() if line.strip()]


def generic_requests() -> list[str]:
    """Requests any coding session makes ("write a unit test for this function", "ビルドが落ちて
    るので見てほしい"): what a question its note's author wrote must not make the note speak on
    (``recall.ranking.muting``). Not known negatives: a rule about coding practice rightly
    answers them, and among the known negatives they cost terse related messages their
    headlines (kinopeee's dev sets: injected 0.375 -> 0.325 on terse ones; docs/decision.md)."""
    text = resources.files("recall.ranking").joinpath("data/generic.jsonl").read_text(encoding="utf-8")
    return [parse_line(line) for line in text.splitlines() if line.strip()]


def collect(paths: Iterable[Path]) -> tuple[list[Negative], list[Problem]]:
    """The bank plus every existing negatives file in ``paths``, duplicates dropped."""
    seen: set[str] = set()
    out: list[Negative] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_file():
            found, bad = read_negatives_file(path)
            problems.extend(bad)
            out.extend(found)
    out.extend(bank())
    unique = []
    for neg in out:
        if neg.text not in seen:
            seen.add(neg.text)
            unique.append(neg)
    return unique, problems


def save(path: Path, keys: list[str], origins: list[str], vectors) -> None:
    """Write the negatives' vectors atomically (0600): hashes, origins and vectors, no text."""
    import numpy as np

    tmp = path.with_name(path.name + ".tmp")
    with private_open(tmp, "wb", encoding=None) as fh:
        np.savez(fh, keys=np.array(keys, dtype="U24"), origins=np.array(origins, dtype=object).astype(str),
                 vectors=np.asarray(vectors, dtype=np.float32))
        fh.flush()
        os.fsync(fh.fileno())
    replace_aside(tmp, path)  # a folder there: the index failed at each fit, or kept no negatives (stop 57)


def load(path: Path):
    """(keys, origins, vectors) or None when there is no usable file."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            return list(data["keys"]), list(data["origins"]), data["vectors"].astype(np.float32)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # damaged: as if absent
        return None
