"""What the store keeps of a note's text: its chunks, its header and its questions, each masked
(``recall.privacy.masking``) before it is cut or stored, with its hash. Secrets never reach a store;
the indexer (``recall.indexing.indexer.prepare_note``) is the one caller that writes them."""

from __future__ import annotations

from dataclasses import replace

from recall.config.settings import ChunkConfig
from recall.notes.chunking import chunk_text, header_text
from recall.notes.files import Note
from recall.privacy.masking import mask_secrets, mask_together
from recall.store.records import text_hash


def note_chunks(note: Note, cfg: ChunkConfig) -> list[tuple[str, str]]:
    """(masked chunk text, its hash) for a note. Secrets never reach the store."""
    if note.segments is not None:
        return [(t, text_hash(t)) for t in document_chunks(note, cfg).texts]
    name, description = mask_together(note.name, note.description)
    texts = chunk_text(name, description, mask_secrets(note.body), cfg)
    return [(t, text_hash(t)) for t in texts]


def document_chunks(note: Note, cfg: ChunkConfig):
    """A document's masked chunks and where each came from (``recall.notes.documents.chunks``): its
    segments masked as the one text they read as (a password's label ending one PDF page, its value
    beginning the next, was kept: stop 58), before they are cut, as a note's text is."""
    from recall.notes.documents.chunks import document_chunks as chunk_document

    cap = replace(cfg, max_chunks=note.max_chunks or cfg.max_chunks)
    # Only what ``max_chunks`` chunks can hold is masked: a 15 MB text file was masked whole
    # (20 s, past every time limit) to keep its first thousand chunks (an outside tester, stop 45).
    left, kept = (cap.max_chunks + 1) * cap.chars, []
    for loc, text in note.segments or []:
        if left <= 0:
            break
        kept.append((loc, text[:left]))
        left -= len(text)
    texts = mask_together(*(text for _loc, text in kept))
    segments = [(mask_secrets(loc), text) for (loc, _text), text in zip(kept, texts, strict=True)]
    name, description = mask_together(note.name, note.description)
    return chunk_document(name, description, segments, cap)


def header_chunk(note: Note) -> list[tuple[str, str]]:
    """(masked header, its hash): the note's readable name and description as one chunk of
    its own (role "header"), outside ``max_chunks``; none when the note has neither. Search
    keeps it out of the best-chunk score and uses it to order notes (``[search] header_weight``)."""
    text = header_text(*mask_together(note.name, note.description))
    return [(text, text_hash(text))] if text else []


def question_chunks(note: Note) -> list[tuple[str, str]]:
    """(masked question, its hash) for each of the note's questions: chunks of their own,
    outside ``max_chunks``, embedded as passages like the note's text (as measured)."""
    texts = [mask_secrets(q) for q in note.questions]
    return [(t, text_hash(t)) for t in dict.fromkeys(texts)]
