"""One contract for the stores that answer "which notes are near this vector?".

Two implementations:

* ``LocalIndex``  the per-user SQLite store + FAISS generations (``recall.store``,
                  ``recall.vector_index``); what the hook and the daemon search.
* ``PgIndex``     PostgreSQL + pgvector (``recall.pgstore``), shared by a team.

Both take notes as (``NoteRecord``, masked chunk texts, one unit vector per chunk) and
answer with ``recall.selector.Hit`` (a note scores by its best chunk), so the same
contract tests run against both (``tests/test_store_contract.py``).

``prepare_note`` is the one way notes become chunks: it goes through
``recall.indexer.note_chunks``, which masks secrets *before* anything is embedded, so
neither the text nor the vectors of a secret ever leave the machine. The backends mask
again on write as a safety net for callers that skip ``prepare_note``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .api import DB_NAME
from .chunking import ChunkConfig
from .indexer import _fingerprint, note_chunks, question_chunks, text_hash
from .masking import mask_secrets
from .notes import Note
from .questions import merge
from .search import Scope, Searcher
from .selector import Hit
from .store import Store
from .vector_index import APPROXIMATE_FROM_CHUNKS, build_index

if TYPE_CHECKING:
    import numpy as np

    from .embedders import Embedder



@dataclass(frozen=True)
class SourceRef:
    """A folder of notes as a store knows it."""

    kind: str  # memory | rule | dir | conversation
    root: str  # absolute folder path (a key, not opened by the stores)
    project: str | None = None  # Claude Code project key (memory, conversation)
    team: bool = False  # PgIndex only: visible to every machine of the team, not just its owner


@dataclass
class NoteRecord:
    """A note's metadata; ``content_hash`` is the fingerprint that decides re-embedding."""

    path: str
    note_id: str
    name: str
    description: str
    type: str
    content_hash: str
    mtime: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class NoteIndex(Protocol):
    model_id: str

    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        """path -> content fingerprint, for the notes of ``source``."""
        ...

    def replace_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[str], vectors) -> None:
        """Old chunks deleted and new ones inserted in one transaction."""
        ...

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int: ...

    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        """Notes best first, each scored by its best chunk (cosine similarity)."""
        ...

    def counts(self) -> dict[str, int]: ...

    def close(self) -> None: ...


def prepare_note(note: Note, cfg: ChunkConfig | None = None,
                 file_questions: Sequence[str] | None = None) -> tuple[NoteRecord, list[str]]:
    """The record and the masked chunk texts of a parsed note; ``file_questions`` are
    the note's questions from its folder's note_questions questions file (part of the fingerprint,
    as in ``recall.indexer``: editing them re-pushes the note)."""
    if cfg is None:
        from .config import packaged_settings

        cfg = packaged_settings().chunking
    extra = list(file_questions or [])
    if extra:
        note = replace(note, questions=merge(note.questions, extra))
    record = NoteRecord(
        path=note.path, note_id=note.id, name=mask_secrets(note.name),
        description=mask_secrets(note.description), type=note.type,
        content_hash=_fingerprint(note.content_hash, cfg, extra), mtime=note.mtime,
    )
    # A team store has no BM25: a note's questions (front matter, questions file) are plain extra chunks.
    return record, [text for text, _ in (*note_chunks(note, cfg), *question_chunks(note))]


@dataclass
class PushStats:
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0


def push_notes(index: NoteIndex, source: SourceRef, notes: Iterable[Note], embedder: Embedder,
               cfg: ChunkConfig | None = None, remove_missing: bool = True,
               file_questions: Mapping[str, Sequence[str]] | None = None) -> PushStats:
    """Bring ``source`` in ``index`` up to date with ``notes``: only new or changed notes
    are embedded and written (each in its own transaction); pushing twice is a no-op.
    ``questions file``: questions per note stem from the folder's note_questions questions file."""
    stats = PushStats()
    existing = index.note_hashes(source)
    seen: set[str] = set()
    for note in notes:
        seen.add(note.path)
        record, chunks = prepare_note(note, cfg, (file_questions or {}).get(note.id))
        old = existing.get(note.path)
        if old == record.content_hash:
            stats.unchanged += 1
            continue
        index.replace_note(source, record, chunks, embedder.embed_passages(chunks))
        stats.added += old is None
        stats.changed += old is not None
        stats.chunks += len(chunks)
    if remove_missing:
        stats.removed = index.delete_notes(source, [p for p in existing if p not in seen])
    return stats


def as_query_matrix(qvec) -> np.ndarray:
    """One float32 row: embedders return (1, dim), callers sometimes hold (dim,)."""
    import numpy as np

    q = np.ascontiguousarray(np.asarray(qvec, dtype=np.float32))
    return q.reshape(1, -1)


class _ModelOnly:
    """What ``Searcher`` needs from an embedder when vectors come ready-made."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id


class LocalIndex:
    """The contract over the SQLite store and FAISS generations under ``home``.

    Writes go to SQLite at once (one transaction per note); the FAISS generation is
    rebuilt lazily, once, before the next search (or on ``flush``/``close``), so a batch
    of writes costs one rebuild and readers keep the previous generation until then.
    """

    def __init__(self, home: Path, model_id: str, *,
                 approximate_from: int = APPROXIMATE_FROM_CHUNKS) -> None:
        self.home = Path(home)
        self.model_id = model_id
        self.approximate_from = approximate_from
        self.store = Store(self.home / DB_NAME)
        from .config import packaged_settings  # dense search only (search_vector): [search] is not read

        self._searcher = Searcher(_ModelOnly(model_id), packaged_settings().search, self.home)  # type: ignore[arg-type]
        self._dirty = False

    def _source_id(self, source: SourceRef) -> int:
        return self.store.source_id(source.kind, source.root, source.project)

    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        return {path: h for path, (_, h) in self.store.note_hashes(self._source_id(source)).items()}

    def replace_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[str], vectors) -> None:
        import numpy as np

        texts = [mask_secrets(t) for t in chunks]
        hashes = [text_hash(t) for t in texts]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        # Vectors first, then the note: a crash in between leaves unused vectors only.
        self.store.put_vectors(self.model_id, hashes, matrix)
        self.store.upsert_note(
            self._source_id(source), path=note.path, note_id=note.note_id, name=mask_secrets(note.name),
            description=mask_secrets(note.description), type=note.type, content_hash=note.content_hash,
            mtime=note.mtime, chunks=list(zip(texts, hashes, strict=True)), extra=note.extra,
        )
        self._dirty = True

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int:
        existing = self.store.note_hashes(self._source_id(source))
        pks = [existing[p][0] for p in paths if p in existing]
        if pks:
            self.store.delete_notes(pks)
            self._dirty = True
        return len(pks)

    def flush(self) -> None:
        """Rebuild the FAISS generation if anything was written since the last one."""
        if self._dirty:
            build_index(self.store, self.model_id, home=self.home, approximate_from=self.approximate_from)
            self._dirty = False
        self._searcher.refresh()

    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        self.flush()
        return self._searcher.search_vector(as_query_matrix(qvec), scope, k_notes)

    def counts(self) -> dict[str, int]:
        counts = dict(self.store.counts())
        idx = self._searcher.index
        counts["generation"] = idx.generation if idx is not None else 0
        return counts

    def close(self) -> None:
        self.flush()
        self.store.close()
