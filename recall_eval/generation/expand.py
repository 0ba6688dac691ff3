"""Write note-side note_questions: a few messages per note, by a model that sees only the notes.

The questions file is what ``recall.notes.questions`` reads: ``questions.jsonl``, one line per note,
``{"note": "<file stem>", "questions": ["...", ...]}``. Written beside it,
``questions.provenance.json`` names the backend, model, prompt (by hash) and the
collection (by hash), like ``datasets/sample/questions.provenance.json``.

The model sees ``recall/authoring/prompts/expand_notes.md`` (the core's prompt, ``recall.authoring.notegen``)
with the note files inlined and nothing else. A backend is asked for ``batch_size`` notes
per request (the answer for a large folder would not fit one reply), then once more for the notes its answers left out.
An answer file written elsewhere (a context-free helper session given the
``--dry-run`` prompt) is imported through the same checks.

Checks: lines that are not JSON objects (prose, code fences) are skipped; a JSON line
that is malformed or names no note of the folder fails the whole run, nothing written;
notes the answer leaves out are reported, and fail the run past ``MAX_MISSING_SHARE``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from recall.authoring import notegen
from recall.notes.questions import clean_questions, parse_line, read_questions_file
from recall.privacy.paths import make_missing_dirs, private_open
from recall_eval.datasets.collections import DatasetError, collection_hash, note_files, provenance_path
from recall_eval.generation.generate import Backend, _display

PROMPT_NAME = notegen.EXPAND_PROMPT
PROMPT_PATH = f"recall/authoring/prompts/{PROMPT_NAME}"
DEFAULT_N_PER_NOTE = notegen.N_PER_NOTE
DEFAULT_SHARE_JA = notegen.SHARE_JA
# Notes per request: 25 notes x 8 questions is ~9k output tokens, well under MAX_TOKENS
# even in Japanese; a whole 120-note folder in one reply would brush against it.
DEFAULT_BATCH_SIZE = 25
# More notes than this left out of the answer (after the one retry round): the run fails.
MAX_MISSING_SHARE = 0.1
_FENCE = re.compile(r"^```")


class QuestionsError(DatasetError):
    """An answer that does not fit the notes; the message lists what is wrong."""


@dataclass(frozen=True)
class ExpandSpec:
    n_per_note: int = DEFAULT_N_PER_NOTE
    share_ja: float = DEFAULT_SHARE_JA  # share of all messages written in Japanese


@dataclass
class NoteQuestions:
    questions: dict[str, list[str]]  # note stem -> questions, in the folder's note order
    missing: list[str]
    provenance: dict
    skipped: list[str] = field(default_factory=list)  # non-JSON lines of the answer


def template() -> str:
    return notegen.template(PROMPT_NAME)


def template_hash() -> str:
    return notegen.template_hash(PROMPT_NAME)


def note_paths(notes_dir: Path) -> list[Path]:
    """The note files the prompt shows (``recall_eval.generation.prompting.note_files``: MEMORY.md left out)."""
    paths = note_files(notes_dir)
    if not paths:
        raise QuestionsError(f"{notes_dir}: no note files (*.md) found")
    return paths


def render_prompt(paths: Sequence[Path], spec: ExpandSpec) -> str:
    """The expand prompt for these note files (same note layout as ``render_notes``)."""
    return notegen.expand_prompt(paths, spec.n_per_note, spec.share_ja)


def parse_answer(raw: str, known: Sequence[str], source: str
                 ) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """(questions per note, problems, skipped lines) from a model's JSONL answer.

    Same rules as ``recall.notes.questions.read_questions_file`` with ``known``: a JSON line must be
    ``{"note": str, "questions": list}`` naming a note of the folder; repeated lines for
    a note are merged. Blank lines, code fences and prose (lines not starting with
    ``{``) are skipped, not problems.
    """
    names = set(known)
    out: dict[str, list[str]] = {}
    problems: list[str] = []
    skipped: list[str] = []
    for i, line in enumerate(raw.splitlines(), 1):
        text = line.strip()
        if not text or _FENCE.match(text):
            continue
        if not text.startswith("{"):
            skipped.append(text[:120])
            continue
        where = f"{source}, line {i}"
        try:
            stem, questions = parse_line(text)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if stem not in names:
            problems.append(f"{where}: no note named {stem!r} in this folder")
            continue
        out[stem] = clean_questions([*out.get(stem, []), *questions])
    return {k: v for k, v in out.items() if v}, problems, skipped


def _fail_on(problems: list[str]) -> None:
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise QuestionsError(f"the answer does not fit the notes, nothing written: {shown}")


def _missing_check(stems: Sequence[str], missing: list[str]) -> None:
    if len(missing) > MAX_MISSING_SHARE * len(stems):
        raise QuestionsError(
            f"the answer leaves out {len(missing)} of {len(stems)} notes (more than "
            f"{round(MAX_MISSING_SHARE * 100)}%), nothing written: {', '.join(missing[:10])}"
            + (" ..." if len(missing) > 10 else ""))


def _provenance(notes_dir: Path, spec: ExpandSpec, questions: dict[str, list[str]], missing: list[str],
                **fields: object) -> dict:
    return {
        **fields,
        "prompt": PROMPT_PATH,
        "prompt_hash": template_hash(),
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "collection": _display(notes_dir),
        "collection_hash": collection_hash(notes_dir),
        "n_per_note": spec.n_per_note,
        "share_ja": spec.share_ja,
        "notes": len(questions) + len(missing),
        "questions": sum(len(v) for v in questions.values()),
        "missing": missing,
    }


def expand(notes_dir: Path, spec: ExpandSpec, backend: Backend, batch_size: int = DEFAULT_BATCH_SIZE,
           log: Callable[[str], None] = lambda _m: None) -> NoteQuestions:
    """Ask ``backend`` for every note's questions (nothing written yet)."""
    paths = note_paths(notes_dir)
    stems = [p.stem for p in paths]
    found: dict[str, list[str]] = {}
    skipped: list[str] = []
    requests = 0

    def ask(group: list[Path]) -> None:
        nonlocal requests
        parts = notegen.batches(group, batch_size) or [[]]  # none: one request, as the harness always asked
        for j, part in enumerate(parts, 1):
            requests += 1
            log(f"asking {backend.name} for {len(part)} note(s)" + (f" ({j}/{len(parts)})" if len(parts) > 1 else ""))
            raw = backend.complete(render_prompt(part, spec))
            got, problems, skip = parse_answer(raw, stems, f"{backend.name} answer {requests}")
            _fail_on(problems)
            skipped.extend(skip)
            for stem, qs in got.items():
                found[stem] = clean_questions([*found.get(stem, []), *qs])

    ask(paths)
    left = [p for p in paths if p.stem not in found]
    if left:
        log(f"{len(left)} note(s) missing from the answer: asking once more for them")
        ask(left)
    missing = [s for s in stems if s not in found]
    _missing_check(stems, missing)
    ordered = {s: found[s] for s in stems if s in found}
    how = (f"{PROMPT_PATH} rendered with the note files inlined, sent as the only message"
           + (" to `claude -p` run in an empty temporary folder" if backend.name == "claude-cli" else "")
           + f"; {requests} request(s) of at most {batch_size if batch_size > 0 else len(paths)} notes.")
    prov = _provenance(notes_dir, spec, ordered, missing, backend=backend.name, model=backend.model, how=how)
    return NoteQuestions(ordered, missing, prov, skipped)


def import_answer(notes_dir: Path, spec: ExpandSpec, path: Path, written_by: str) -> NoteQuestions:
    """Check an answer written elsewhere (e.g. to the ``--dry-run`` prompt) like a model's."""
    stems = [p.stem for p in note_paths(notes_dir)]
    from recall_eval.files import InputError, read_input

    try:
        raw = read_input(path)
    except InputError as exc:
        raise QuestionsError(str(exc)) from None
    found, problems, skipped = parse_answer(raw, stems, str(path))
    _fail_on(problems)
    missing = [s for s in stems if s not in found]
    _missing_check(stems, missing)
    ordered = {s: found[s] for s in stems if s in found}
    prov = _provenance(notes_dir, spec, ordered, missing, backend="file", model=None,
                       written_by=written_by, imported_from=_display(path))
    return NoteQuestions(ordered, missing, prov, skipped)


def write_note_questions(out: Path, result: NoteQuestions, stems: Sequence[str], force: bool = False) -> list[Path]:
    """Write the questions file and its provenance atomically (temp file + rename), files 0600.

    The questions file is read back with ``recall.notes.questions.read_questions_file`` before it replaces
    anything: what the core would complain about is never written.
    """
    if out.exists() and not force:
        raise QuestionsError(f"{out} exists; give --force to replace it")
    make_missing_dirs(out.parent)
    prov_out = provenance_path(out)
    from recall.privacy.masking import mask_secrets

    texts = {  # masked as everything the harness writes (an imported answer may hold a key)
        out: "".join(json.dumps({"note": stem, "questions": [mask_secrets(q) for q in qs]}, ensure_ascii=False) + "\n"
                     for stem, qs in result.questions.items()),
        prov_out: json.dumps(result.provenance, ensure_ascii=False, indent=2) + "\n",
    }
    temps: dict[Path, Path] = {}
    try:
        for final, text in texts.items():
            tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
            temps[final] = tmp
            with private_open(tmp) as fh:
                fh.write(text)
        back, problems = read_questions_file(temps[out], known=stems)
        if problems or list(back) != list(result.questions):
            raise QuestionsError(f"the questions file does not read back: {'; '.join(map(str, problems[:3]))}")
        for final, tmp in temps.items():
            os.replace(tmp, final)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
    return [out, prov_out]
