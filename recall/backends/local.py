"""The local store behind the store contract (``recall.backends.contract.NoteStore``): the per-user
SQLite store (``recall.store.sqlite``) plus the FAISS generations built from it
(``recall.store.vectors``) under the same ``RECALL_HOME``.

This is the store ``recall index``, ``recall watch`` and the daemon write through
(``recall.indexing.indexer.Indexer``), and the one the contract tests run. Writes go to SQLite at
once, one transaction per note; ``rebuild`` writes one new FAISS generation for all of
them and swaps it in, so readers see the index before a batch or after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from recall.store.records import Chunk, NoteRecord, SourceRef, as_query_matrix
from recall.store.sqlite import Store
from recall.store.vectors import build_index

if TYPE_CHECKING:
    import numpy as np

    from recall.ranking.scope import Scope
    from recall.ranking.search import Searcher
    from recall.ranking.selector import Hit


class _ModelOnly:
    """What ``Searcher`` needs from an embedder to search ready-made vectors."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id


class LocalStore:
    """``NoteStore`` over one SQLite ``Store`` (its connection belongs to one thread) and
    the FAISS generations of ``model_id`` under ``home`` (default: the store's folder).
    ``close`` closes the SQLite store only when this object opened it (``open``)."""

    def __init__(self, store: Store, model_id: str, *, approximate_from: int, home: Path | None = None,
                 owns_store: bool = False) -> None:
        self.store = store
        self.model_id = model_id
        self.home = Path(home) if home is not None else store.path.parent
        self.approximate_from = approximate_from
        self._owns_store = owns_store
        self._searcher: Searcher | None = None

    @classmethod
    def open(cls, db_path: Path, model_id: str, **kw) -> LocalStore:
        return cls(Store(Path(db_path)), model_id, owns_store=True, **kw)

    def source_id(self, source: SourceRef) -> int:
        """The source's row, created if new (an empty folder indexed is still a source)."""
        return self.store.source_id(source.kind, source.root, source.project)

    # --- the contract: writes --------------------------------------------------
    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        return {path: fp for path, (_, fp) in self.store.note_hashes(self.source_id(source)).items()}

    def sealed(self, fingerprint: str) -> str:
        return fingerprint  # the user's own 0600 store

    def missing_vectors(self, hashes: Iterable[str]) -> set[str]:
        return self.store.missing_vectors(self.model_id, hashes)

    def put_vectors(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        self.store.put_vectors(self.model_id, hashes, vectors)

    def upsert_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[Chunk]) -> None:
        self.store.upsert_note(self.source_id(source), note, chunks)  # the choke point that masks

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int:
        existing = self.store.note_hashes(self.source_id(source))
        pks = [existing[p][0] for p in paths if p in existing]
        return self.store.delete_notes(pks) if pks else 0

    def rebuild(self, keep_previous: bool = True) -> tuple[int, int]:
        """One new FAISS generation from the store, swapped in: (generation, chunks)."""
        generation, chunks = build_index(self.store, self.model_id, home=self.home,
                                         approximate_from=self.approximate_from, keep_previous=keep_previous)
        return generation, chunks

    # --- the contract: reads ---------------------------------------------------
    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        if self._searcher is None:
            from recall.config.load import packaged_settings  # dense search only (search_vector): [search] is not read
            from recall.ranking.search import Searcher

            self._searcher = Searcher(_ModelOnly(self.model_id), packaged_settings().search,  # type: ignore[arg-type]
                                      self.home)
        self._searcher.refresh()
        return self._searcher.search_vector(as_query_matrix(qvec), scope, k_notes)

    def counts(self) -> dict[str, int]:
        return self.store.counts()

    def close(self) -> None:
        if self._owns_store:
            self.store.close()
