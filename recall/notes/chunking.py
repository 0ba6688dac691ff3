"""Split a note into the pieces that get embedded (exactly the original design).

    text    = name + "\\n" + description + "\\n\\n" + body
    chunk 0 = text[:chars]
    chunk i = name + "\\n" + body piece of ``chars`` characters that starts
              ``overlap`` characters before the previous piece ended
    at most ``max_chunks`` chunks; a note scores by its best chunk (``search``).
    header  = the name, made readable (``readable_name``) + "\n" + description: one more
              vector per note (role "header", ``header_text``), which reorders the notes
              (``[search] header_weight``) but never decides whether to speak.

Characters are Python ``str`` characters (code points), so CJK text is cut by
characters, never inside a UTF-8 sequence. The sizes are ``[chunking]`` in
``recall/config/default_config.toml`` (why 700 / 100 / 6: the comments there).
"""

from __future__ import annotations

import re

from recall.config.settings import ChunkConfig

_SLUG = re.compile(r"[^\s]+")
_SEPARATORS = re.compile(r"[-_]+")


def chunk_text(name: str, description: str, body: str, cfg: ChunkConfig) -> list[str]:
    header = f"{name}\n{description}\n\n"
    text = header + body
    chunks = [text[: cfg.chars]]
    end = min(len(text), cfg.chars)  # end of the last piece, in ``text`` coordinates
    stride_floor = len(header)  # later pieces are body only: never re-cut the header
    while end < len(text) and len(chunks) < cfg.max_chunks:
        start = max(end - cfg.overlap, stride_floor)
        if start >= len(text):
            break
        piece = text[start : start + cfg.chars]
        chunks.append(f"{name}\n{piece}")
        end = start + len(piece)
    return chunks


def readable_name(name: str) -> str:
    """A file-name-like name (``angular-typescript-accessibility-guidelines``, one word with
    hyphens or underscores and no space) as words; any other name as it is."""
    stripped = name.strip()
    if _SLUG.fullmatch(stripped) and _SEPARATORS.search(stripped):
        return " ".join(p for p in _SEPARATORS.split(stripped) if p)
    return name


def header_text(name: str, description: str) -> str:
    """What a note is about in one line or two: its readable name and its description ("" when
    it has neither). Embedded on its own, the header of a short message's note scores closer
    to the message than a 700-character chunk whose body says much else."""
    parts = [p for p in (readable_name(name).strip(), description.strip()) if p]
    return "\n".join(parts)
