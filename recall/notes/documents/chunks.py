"""A document's chunks: the notes' rule (``recall.notes.chunking``: pieces of ``chars``
characters overlapping by ``overlap``) applied inside each located segment, so that
every chunk knows the page, slide, sheet, section or time range it came from.

    chunk = name + " · " + location + "\\n" + piece      (location omitted when empty)

The description (a document's first lines) is not repeated: it is the first piece. Short
neighbouring segments (a slide of ten words) are merged up to ``chars`` so that a deck
of 80 slides is not 80 tiny chunks; the merged chunk is located by its first segment
and its last ("slide 3–5"). At most ``max_chunks`` per document: the rest is left out
and said so (``Chunked.truncated``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recall.config.settings import ChunkConfig


@dataclass
class Chunked:
    texts: list[str]
    locations: list[str]  # one per text
    truncated: bool = False
    cut_at: str = ""  # where the first piece left out came from, when truncated ("p. 254")


def _merge(segments: Sequence[tuple[str, str]], chars: int) -> list[tuple[str, str]]:
    """Neighbouring segments joined while they fit in ``chars`` together."""
    out: list[tuple[str, str, str]] = []  # (first location, last location, text)
    for loc, text in segments:
        if out and len(out[-1][2]) + 2 + len(text) <= chars:
            first, _, joined = out[-1]
            out[-1] = (first, loc, f"{joined}\n\n{text}")
        else:
            out.append((loc, loc, text))
    return [(_span(a, b), t) for a, b, t in out]


def _span(first: str, last: str) -> str:
    if first == last or not last:
        return first
    label, _, n = first.rpartition(" ")
    label2, _, m = last.rpartition(" ")
    if label and label == label2 and n.isdigit() and m.isdigit():  # "p. 3", "p. 5" -> "p. 3–5"
        return f"{label} {n}–{m}"
    if not first:
        return last
    return f"{first} – {last.rsplit(' > ', 1)[-1]}"  # "Install – Linux" for sections


def pieces(text: str, chars: int, overlap: int) -> list[str]:
    """``text`` in pieces of ``chars`` characters, each starting ``overlap`` before the
    previous one ended (the notes' rule, without the header)."""
    out, start = [], 0
    while True:
        out.append(text[start : start + chars])
        if start + chars >= len(text):
            return out
        start += chars - overlap


def document_chunks(name: str, description: str, segments: Sequence[tuple[str, str]],
                    cfg: ChunkConfig) -> Chunked:
    """The chunk texts of a document and where each came from (see the module doc)."""
    texts: list[str] = []
    locs: list[str] = []
    for loc, text in _merge(segments, cfg.chars):
        head = f"{name} · {loc}" if loc else name
        for piece in pieces(text, cfg.chars, cfg.overlap):
            if len(texts) == cfg.max_chunks:
                return Chunked(texts, locs, truncated=True, cut_at=loc)
            texts.append(f"{head}\n{piece}")
            locs.append(loc)
    if not texts:  # nothing but a title (an image without text: its file name)
        texts, locs = [f"{name}\n{description}".strip()], [""]
    return Chunked(texts, locs)
