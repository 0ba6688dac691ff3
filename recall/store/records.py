"""What a store of notes holds, and the masking every store applies on write.

``SourceRef`` (a folder), ``NoteRecord`` (a note's metadata), ``Chunk`` (one searched piece
and the hash that keys its vector). The contract the stores keep is
``recall.backends.contract.NoteStore``.

Masking is the stores' choke point: ``upsert_note`` masks every text it keeps (path, note
id, name, description, chunks, ``extra``'s strings) with ``mask_note``, whatever the caller
did (``recall.indexing.indexer`` masks paths and ids before it looks them up, so keys agree).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from recall.errors import RecallError
from recall.privacy.masking import mask_path, mask_secrets, mask_together

if TYPE_CHECKING:
    import numpy as np


class NoteRejected(RecallError, ValueError):
    """The store refused this one note (PostgreSQL takes no NUL in text, for one): the note is
    skipped with this one line and the rest is written (``recall.indexing.indexer``)."""


@dataclass(frozen=True)
class SourceRef:
    """A folder of notes as a store knows it."""

    kind: str  # memory | rule | dir | conversation
    root: str  # absolute folder path (a key, not opened by the stores)
    project: str | None = None  # Claude Code project key (memory, conversation)
    team: bool = False  # team store only: visible to every member of the team, not just its owner


@dataclass
class NoteRow:
    """A note as the store reads it back for an index build (``Store.notes``)."""

    pk: int
    source_id: int
    kind: str
    project: str | None
    root: str
    path: str
    note_id: str
    name: str
    description: str
    type: str
    extra: dict


@dataclass
class NoteRecord:
    """A note's metadata; ``content_hash`` is the fingerprint that decides re-embedding
    (``recall.indexing.indexer.fingerprint``)."""

    path: str
    note_id: str
    name: str
    description: str
    type: str
    content_hash: str
    mtime: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


# The order of a note's chunks in the store: its text, its header, then its questions, then its restatements.
ROLE_ORDER = ("text", "header", "question", "restatement")


class Chunk(NamedTuple):
    """One searched piece of a note: its text, the text's hash (the key of its vector),
    and its role: ``text`` (a piece of the note, also in BM25), ``header`` (its name and
    description, ``recall.indexing.texts.header_chunk``: orders notes, kept out of their best-chunk
    score), ``question`` (a message the note answers) or ``restatement`` (recall.notes.questions)."""

    text: str
    hash: str
    role: str = "text"


def text_hash(text: str) -> str:
    """The key of a chunk text's vector."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mask_chunks(chunks: Iterable[Chunk]) -> list[Chunk]:
    """Chunks with secrets masked; a chunk masking changes gets its new text's hash."""
    out = []
    for chunk in chunks:
        masked = mask_secrets(chunk.text)
        out.append(chunk if masked == chunk.text else Chunk(masked, text_hash(masked), chunk.role))
    return out


def mask_json(value: Any) -> Any:
    """``value`` with every string in it masked (a note's ``extra``)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {k: mask_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    return value


def mask_record(note: NoteRecord) -> NoteRecord:
    """Every text of a note's record masked (``recall.privacy.masking``): each string field, new
    ones too (its id, name, description, type: all but the fingerprint), the path one part at a
    time, ``extra``'s strings."""
    own = ("path", "content_hash", "note_id", "name", "description")  # masked below, or not text
    texts: dict[str, Any] = {f.name: mask_secrets(value) for f in fields(note) if f.name not in own
                             and isinstance(value := getattr(note, f.name), str)}
    texts["name"], texts["description"] = mask_together(note.name, note.description)  # "Password" / its value
    texts["note_id"] = mask_path(note.note_id)  # a file's name (a document's keeps its extension)
    return replace(note, path=mask_path(note.path), extra=mask_json(note.extra or {}), **texts)


def mask_note(note: NoteRecord, chunks: Iterable[Chunk]) -> tuple[NoteRecord, list[Chunk]]:
    """Everything of a note a store keeps, masked: the stores' choke point."""
    return mask_record(note), mask_chunks(chunks)


def as_query_matrix(qvec) -> np.ndarray:
    """One float32 row: embedders return (1, dim), callers sometimes hold (dim,)."""
    import numpy as np

    q = np.ascontiguousarray(np.asarray(qvec, dtype=np.float32))
    return q.reshape(1, -1)
