"""Note files as an agent writes them."""

from __future__ import annotations

from pathlib import Path


def write_note(folder: Path, stem: str, name: str, description: str, body: str, type_: str = "feedback") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n",
                    encoding="utf-8")
    return path


def write_note_with_questions(folder: Path, stem: str, name: str, description: str, body: str,
                              questions: list[str], type_: str = "feedback") -> Path:
    """A note whose front matter lists ``questions:`` (each written as a JSON string)."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    listed = "".join(f"  - {json.dumps(q)}\n" for q in questions)
    path = folder / f"{stem}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type_}\nquestions:\n{listed}---\n\n"
                    f"{body}\n", encoding="utf-8")
    return path
