"""The store contract: what every store of notes does, whoever writes or searches it.

Two stores keep to it:

* ``recall.local_store.LocalStore``  the per-user SQLite store + FAISS generations; what
                                     ``recall index``, ``recall watch``, the hook and the daemon use.
* ``recall.pgstore.PgIndex``         PostgreSQL + pgvector, shared by a team (``recall team push``).

Both are written by one routine, ``recall.indexer.Indexer`` (read a folder, its questions
file and restatements; mask; chunk; embed what the store lacks; upsert), and both answer
with ``recall.selector.Hit`` (a note scores by its best chunk), so the same contract tests
run against both (``tests/test_store_contract.py``).

Masking is the store's choke point: ``upsert_note`` masks every text it keeps (path, note
id, name, description, chunks, ``extra``'s strings) with ``mask_note``, whatever the caller
did (``recall.indexer`` masks paths and ids before it looks them up, so keys agree).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .masking import mask_path, mask_secrets

if TYPE_CHECKING:
    import numpy as np

    from .search import Scope
    from .selector import Hit


class NoteRejected(ValueError):
    """The store refused this one note (PostgreSQL takes no NUL in text, for one): the note is
    skipped with this one line and the rest is written (``recall.indexer``)."""


@dataclass(frozen=True)
class SourceRef:
    """A folder of notes as a store knows it."""

    kind: str  # memory | rule | dir | conversation
    root: str  # absolute folder path (a key, not opened by the stores)
    project: str | None = None  # Claude Code project key (memory, conversation)
    team: bool = False  # team store only: visible to every member of the team, not just its owner


@dataclass
class NoteRecord:
    """A note's metadata; ``content_hash`` is the fingerprint that decides re-embedding
    (``recall.indexer.fingerprint``)."""

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
    description, ``recall.indexer.header_chunk``: orders notes, kept out of their best-chunk
    score), ``question`` (a message the note answers) or ``restatement`` (recall.questions)."""

    text: str
    hash: str
    role: str = "text"


class NoteStore(Protocol):
    """Notes, their chunks and one vector per chunk text, for one embedding model."""

    model_id: str

    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        """path -> content fingerprint, for the notes of ``source``."""
        ...

    def missing_vectors(self, hashes: Iterable[str]) -> set[str]:
        """Of these chunk-text hashes, those the store holds no vector for."""
        ...

    def put_vectors(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """One unit vector per hash (rows of ``vectors``), for chunks upserted next."""
        ...

    def upsert_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[Chunk]) -> None:
        """Replace the note and its chunks in one transaction, every text masked; raises
        ``NoteRejected`` (nothing of the note written) for a note the store cannot hold."""
        ...

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int: ...

    def rebuild(self, keep_previous: bool = True) -> object:
        """Make the writes so far visible to ``search`` (a no-op where they already are);
        ``keep_previous=False``: keep no earlier copy that may hold purged text."""
        ...

    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        """Notes best first, each scored by its best chunk (cosine similarity)."""
        ...

    def counts(self) -> dict[str, int]: ...

    def close(self) -> None: ...


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


def mask_note(note: NoteRecord, chunks: Iterable[Chunk]) -> tuple[NoteRecord, list[Chunk]]:
    """Everything of a note a store keeps, masked (``recall.masking``): the stores' choke point."""
    masked = replace(note, path=mask_path(note.path), note_id=mask_secrets(note.note_id),
                     name=mask_secrets(note.name), description=mask_secrets(note.description),
                     extra=mask_json(note.extra or {}))
    return masked, mask_chunks(chunks)


def as_query_matrix(qvec) -> np.ndarray:
    """One float32 row: embedders return (1, dim), callers sometimes hold (dim,)."""
    import numpy as np

    q = np.ascontiguousarray(np.asarray(qvec, dtype=np.float32))
    return q.reshape(1, -1)
