"""The kinopeee collection: a real rule set nobody on this project wrote (MIT, Yuichiro
Kinoshita), kept in ``../shared/benchmarks/kinopeee`` as 43 Japanese and 46 English
sections of five rule files, each section in both languages.

It is turned into one memory note per section, in **one** language per section
(Japanese for even section numbers, English for odd ones, the other language where a
section has only one), so the collection is mixed like a bilingual user's notes and each
message has one right note. The notes are written into a folder at run time; nothing of
the upstream text is copied into this repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from recall_eval.files import write_private

from .paths import SHARED_BENCHMARKS

SOURCE = SHARED_BENCHMARKS / "kinopeee" / "notes_sections_ja_en.jsonl"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _description(body: str) -> str:
    """The first line of prose under the section's heading, cut at 200 characters."""
    for line in body.splitlines():
        line = line.strip().lstrip("-*> ").strip()
        if line and not line.startswith("#"):
            return line[:200]
    return ""


def build_notes(dest: Path, source: Path = SOURCE) -> list[Path]:
    """Write the collection's notes into ``dest`` (created) and return their paths."""
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_section: dict[tuple[str, int], dict[str, dict]] = {}
    for row in rows:
        by_section.setdefault((row["file"], int(row["section_index"])), {})[row["lang"]] = row
    written = []
    for (file, index), langs in sorted(by_section.items()):
        want = "ja" if index % 2 == 0 else "en"
        row = langs.get(want) or next(iter(langs.values()))
        stem = f"{_slug(Path(file).stem)}-{index:02d}-{row['lang']}"
        header = {"name": row["title"], "description": _description(row["body"]) or row["title"],
                  "type": "reference", "source": f"kinopeee/{row['id']}"}
        front = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in header.items())
        path = dest / f"{stem}.md"
        write_private(path, f"---\n{front}\n---\n\n{row['body']}\n")
        written.append(path)
    return written
