"""Write a question set with a model that has no context but the notes.

The model sees exactly ``recall_eval.generation.prompting.render_prompt(notes, spec)`` and nothing else,
so the questions cannot echo how recall works or which words its index favours.
Backends:

    anthropic   the Messages API via the ``anthropic`` package (ANTHROPIC_API_KEY;
                ANTHROPIC_BASE_URL is honoured by the SDK)
    claude-cli  Claude Code headless: ``claude -p --output-format json``, prompt on stdin,
                run in an empty temporary folder so no project file is in reach
    file        a set written by any other means (a context-free helper session),
                imported, checked and given provenance

After the model answers: schema check, expected ids checked, duplicates dropped, the
leakage check (one retry round asking to reword the flagged paraphrases, for the two
model backends), and the near-note check of unrelated lines against the index.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from recall_eval.datasets.collections import (
    PROJECT_ROOT,
    Question,
    checks_path,
    collection_hash,
    note_text,
    provenance_path,
    read_notes,
    write_json,
    write_questions,
)
from recall_eval.generation.checks import (
    LEAKAGE_THRESHOLD,
    drop_duplicates,
    drop_unknown_ids,
    flag_near_notes,
    leakage,
    parse_generated,
    reword_prompt,
)
from recall_eval.generation.prompting import GenerationSpec, render_prompt, template_hash
from recall_eval.text import detect_lang

DEFAULT_API_MODEL = "claude-sonnet-4-6"
# A set of 40 lines is ~4k output tokens; room for a verbose model, well under the cap.
MAX_TOKENS = 16_000
CLI_TIMEOUT_S = 900


class GenerationError(RuntimeError):
    """The backend could not produce text; the message says what to fix."""


class Backend(Protocol):
    name: str
    model: str

    def complete(self, prompt: str) -> str: ...


class AnthropicBackend:
    name = "anthropic"

    def __init__(self, model: str = DEFAULT_API_MODEL, max_tokens: int = MAX_TOKENS) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise GenerationError("pip install anthropic (or recall-memory[eval])") from exc
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise GenerationError("ANTHROPIC_API_KEY is not set")
        self.model = model
        self.max_tokens = max_tokens
        self._anthropic = anthropic
        self._client = anthropic.Anthropic(max_retries=2)

    def complete(self, prompt: str) -> str:
        try:
            msg = self._client.messages.create(
                model=self.model, max_tokens=self.max_tokens,
                messages=[{"role": "user", "content": prompt}],
            )
        except self._anthropic.APIError as exc:
            raise GenerationError(f"Anthropic API: {exc}") from exc
        if msg.stop_reason == "max_tokens":
            raise GenerationError(f"the answer hit max_tokens ({self.max_tokens}); raise --max-tokens")
        return "".join(getattr(block, "text", "") for block in msg.content)


class ClaudeCliBackend:
    name = "claude-cli"

    def __init__(self, model: str | None = None, executable: str = "claude") -> None:
        path = shutil.which(executable)
        if path is None:
            raise GenerationError(f"`{executable}` is not on PATH (install Claude Code)")
        self.executable = path
        self.model = model or "claude-code default"
        self._model_flag = model

    def complete(self, prompt: str) -> str:
        """The answer of ``claude -p`` run as ``recall questions`` runs it
        (``recall.authoring.agentcli.complete``): an empty folder, no tools, no MCP servers,
        no saved session, bounded in time and output, its children ended with it."""
        from recall.authoring.agentcli import Agent, AgentError, complete

        try:
            return complete(Agent("claude", self.executable, self._model_flag or ""), prompt, CLI_TIMEOUT_S)
        except AgentError as exc:
            raise GenerationError(str(exc)) from exc


def make_backend(name: str, model: str | None = None, max_tokens: int = MAX_TOKENS) -> Backend:
    if name == "anthropic":
        return AnthropicBackend(model or DEFAULT_API_MODEL, max_tokens)
    if name == "claude-cli":
        return ClaudeCliBackend(model)
    raise GenerationError(f"unknown backend {name!r}")


@dataclass
class Outcome:
    questions: list[Question]
    checks: dict
    provenance: dict


def _shares(questions: list[Question], note_langs: dict[str, str]) -> dict:
    n = len(questions) or 1
    para = [q for q in questions if q.kind == "paraphrase"]
    cross = [q for q in para if note_langs.get(q.expected[0]) not in (None, q.lang)]
    langs = sorted({q.lang for q in questions})
    return {
        "paraphrase": len(para), "unrelated": len(questions) - len(para),
        "lang_share": {lang: round(sum(q.lang == lang for q in questions) / n, 3) for lang in langs},
        "cross_share_of_paraphrases": round(len(cross) / (len(para) or 1), 3),
    }


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return str(path)


def build_set(notes_dir: Path, spec: GenerationSpec, raw: str, *, backend: Backend | None,
              source: str, prompt: str | None = None, retry: bool = True,
              threshold: float = LEAKAGE_THRESHOLD,
              top_scores: Callable[[list[Question]], dict] | None = None,
              log: Callable[[str], None] = lambda _m: None) -> Outcome:
    """Turn raw model output into a checked set (nothing written yet)."""
    notes = {n.id: n for n in read_notes(notes_dir)}
    parsed = parse_generated(raw, spec.set_id, source)
    questions, unknown = drop_unknown_ids(parsed.questions, set(notes))
    questions, dups = drop_duplicates(questions)
    rows = leakage(questions, notes, threshold)
    retried: list[str] = []
    leaky = [r for r in rows if "leakage" in r["flags"]]
    if leaky and retry and backend is not None and prompt is not None:
        log(f"{len(leaky)} paraphrase(s) over the leakage threshold: asking once to reword them")
        again = parse_generated(backend.complete(reword_prompt(prompt, leaky)), spec.set_id, "reword answer")
        # Take a reworded line only for a flagged id, with its kind and note unchanged.
        flagged = {r["id"] for r in leaky}
        by_id = {q.id: q for q in again.questions if q.id in flagged}
        for i, q in enumerate(questions):
            new = by_id.get(q.id)
            if new is not None and (new.kind, new.expected) == (q.kind, q.expected):
                questions[i] = new
                retried.append(q.id)
        questions, more_dups = drop_duplicates(questions)
        dups += more_dups
        rows = leakage(questions, notes, threshold)
    near_limit = None
    if top_scores is not None and questions:
        near_limit = flag_near_notes(rows, top_scores(questions))
    note_langs = {nid: detect_lang(note_text(n)) for nid, n in notes.items()}
    checks = {
        "set_id": spec.set_id,
        "leakage_threshold": threshold,
        "near_note_threshold": near_limit,
        "summary": {
            "kept": len(questions),
            "rejected": len(parsed.rejected) + len(unknown),
            "duplicates": len(dups),
            "flagged_leakage": sum("leakage" in r["flags"] for r in rows),
            "flagged_near_note": sum("near_note" in r["flags"] for r in rows),
            "reworded": len(retried),
        },
        "rejected": parsed.rejected + unknown,
        "duplicates": dups,
        "reworded": retried,
        "lines": rows,
    }
    provenance = {
        "set_id": spec.set_id,
        "backend": backend.name if backend is not None else "file",
        "model": backend.model if backend is not None else None,
        "prompt_hash": template_hash(),
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "collection": _display(notes_dir),
        "collection_hash": collection_hash(notes_dir),
        "spec": {k: v for k, v in asdict(spec).items() if k != "set_id"},
        "actual": _shares(questions, note_langs),
    }
    return Outcome(questions, checks, provenance)


def write_outcome(out: Path, outcome: Outcome) -> list[Path]:
    write_questions(out, outcome.questions)
    write_json(provenance_path(out), outcome.provenance)
    write_json(checks_path(out), outcome.checks)
    return [out, provenance_path(out), checks_path(out)]


def generate(notes_dir: Path, spec: GenerationSpec, backend: Backend, **kwargs) -> Outcome:
    prompt = render_prompt(notes_dir, spec)
    raw = backend.complete(prompt)
    return build_set(notes_dir, spec, raw, backend=backend, source=f"{backend.name} answer",
                     prompt=prompt, **kwargs)


def import_file(notes_dir: Path, spec: GenerationSpec, path: Path, written_by: str, **kwargs) -> Outcome:
    from recall_eval.files import InputError, read_input

    try:
        raw = read_input(path)
    except InputError as exc:
        raise GenerationError(str(exc)) from None
    outcome = build_set(notes_dir, spec, raw, backend=None, source=str(path), retry=False, **kwargs)
    outcome.provenance.update(backend="file", model=None, written_by=written_by, imported_from=_display(path))
    return outcome


def index_top_scores(notes_dir: Path, model: str | None) -> Callable[[list[Question]], dict]:
    """A function giving each question's (top score, top note) against the index."""
    def run(questions: list[Question]) -> dict:
        from recall_eval.scoring.score import score_collection

        res = score_collection(notes_dir, questions, model=model, baselines=False)
        return {r["id"]: (r["scores"][0] if r["scores"] else None, r["ranked"][0] if r["ranked"] else None)
                for r in res["pipelines"]["default"]["records"]}
    return run
