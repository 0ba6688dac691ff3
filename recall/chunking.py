"""Split a note into the pieces that get embedded (exactly the original design).

    text    = name + "\\n" + description + "\\n\\n" + body
    chunk 0 = text[:CHUNK_CHARS]
    chunk i = name + "\\n" + body piece of CHUNK_CHARS characters that starts
              CHUNK_OVERLAP characters before the previous piece ended
    at most MAX_CHUNKS chunks; a note scores by its best chunk (``search``).

Characters are Python ``str`` characters (code points), so CJK text is cut by
characters, never inside a UTF-8 sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

# 700 characters is ~150-250 tokens of English and ~500 of Japanese: under the
# 512-token window of the e5/MiniLM family, so nothing of a chunk is silently truncated,
# and long enough that a short note is a single chunk (name + description + body).
CHUNK_CHARS = 700
# 100 characters of overlap keeps a sentence cut at a boundary whole in one of the two
# neighbouring chunks (typical sentences are 60-120 characters).
CHUNK_OVERLAP = 100
# Notes are short; a note needing more than 6 chunks (~3,700 characters) is a document
# pasted into memory. Capping keeps one huge note from flooding the ranking and bounds
# indexing time; its start (name, description, opening) is what identifies it anyway.
MAX_CHUNKS = 6


@dataclass(frozen=True)
class ChunkConfig:
    chars: int = CHUNK_CHARS
    overlap: int = CHUNK_OVERLAP
    max_chunks: int = MAX_CHUNKS

    def __post_init__(self) -> None:
        if self.chars <= 0 or self.max_chunks <= 0:
            raise ValueError("chunk size and max chunks must be positive")
        if not 0 <= self.overlap < self.chars:
            raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")


def chunk_text(name: str, description: str, body: str, config: ChunkConfig | None = None) -> list[str]:
    cfg = config or ChunkConfig()
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
