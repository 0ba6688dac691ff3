"""The project's question-generation prompt, rendered for one note collection.

Every generation backend (Anthropic API, ``claude -p``, a context-free helper agent)
gets exactly this text, so a set's provenance can name the prompt by its hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall_eval.datasets.collections import note_files

PROMPT_NAME = "generate_questions.md"


@dataclass(frozen=True)
class GenerationSpec:
    set_id: str
    n_paraphrase: int = 20
    n_unrelated: int = 20
    share_ja: float = 0.3  # share of all messages written in Japanese
    share_cross: float = 0.25  # share of paraphrases asked in the other language than their note


def prompt_template() -> str:
    return resources.files("recall_eval.generation").joinpath("prompts", PROMPT_NAME).read_text(encoding="utf-8")


def template_hash() -> str:
    return hashlib.sha256(prompt_template().encode("utf-8")).hexdigest()[:16]


def render_notes(notes_dir: Path) -> str:
    """The notes as recall's own prompts show them: secrets masked in their text and names."""
    from recall.authoring.notegen import notes_block

    return notes_block(note_files(notes_dir))


def render_prompt(notes_dir: Path, spec: GenerationSpec) -> str:
    return (
        prompt_template()
        .replace("{n_paraphrase}", str(spec.n_paraphrase))
        .replace("{n_unrelated}", str(spec.n_unrelated))
        .replace("{share_ja_percent}", str(round(spec.share_ja * 100)))
        .replace("{share_cross_percent}", str(round(spec.share_cross * 100)))
        .replace("{set_id}", spec.set_id)
        .replace("{notes}", render_notes(notes_dir))
    )
