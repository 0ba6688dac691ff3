"""The store contract: what every store of notes does, whoever writes or searches it.

Two stores keep to it:

* ``recall.backends.local.LocalStore``  the per-user SQLite store + FAISS generations; what
                                        ``recall index``, ``recall watch``, the hook and the daemon use.
* ``recall.team.store.PgIndex``         PostgreSQL + pgvector, shared by a team (``recall team push``).

Both are written by one routine, ``recall.indexing.indexer.Indexer``, and both answer with
``recall.ranking.selector.Hit`` (a note scores by its best chunk), so the same contract tests
run against both. What they hold (``NoteRecord``, ``Chunk``, ``SourceRef``) and the masking
every store applies on write are in ``recall.store.records``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from recall.store.records import Chunk, NoteRecord, SourceRef

if TYPE_CHECKING:
    import numpy as np

    from recall.ranking.scope import Scope
    from recall.ranking.selector import Hit


class NoteStore(Protocol):
    """Notes, their chunks and one vector per chunk text, for one embedding model."""

    model_id: str

    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        """path -> content fingerprint as kept (``sealed``), for the notes of ``source``."""
        ...

    def sealed(self, fingerprint: str) -> str:
        """What the store keeps of a note's fingerprint (a hash of its unmasked file), and so
        what ``note_hashes`` is compared with: the fingerprint itself where only the user reads
        the store; a keyed hash of it where others do (a teammate could otherwise try every
        value a masked secret may take against the hash of the file that held it)."""
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
