"""Bring the store up to date with folders of notes, then rebuild the FAISS index.

Incremental: a note whose bytes (and chunking settings, and its questions in the
folder's note_questions questions file) are unchanged is skipped; a changed note is re-chunked,
and only chunks whose text has no vector yet for this model are embedded. A note's
questions (recall.questions) are stored as chunks of their own, after its text.
Removed files are dropped. Each note is replaced in its own transaction, and the
FAISS index is swapped only at the end, so a crash mid-index leaves the previous index
live and the store consistent.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .chunking import ChunkConfig, chunk_text
from .embedders import Embedder
from .masking import RULES_VERSION, mask_secrets
from .notes import Note, Problem, read_folder
from .questions import folder_questions_file, merge, questions_hash, read_questions_file, unknown_notes
from .store import Store
from .vector_index import APPROXIMATE_FROM_CHUNKS, build_index

# Embedding batch: large enough to amortise per-call overhead, small enough that the
# progress bar moves and a crash loses little work (vectors are committed per batch).
EMBED_BATCH = 32


@dataclass
class SyncStats:
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_total: int = 0
    questions_total: int = 0  # of chunks_total, how many are questions (recall.questions)
    problems: list[Problem] = field(default_factory=list)
    purged: int = 0  # notes removed because they must not be kept (a past prompt): scrub after
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def merge(self, other: SyncStats) -> None:
        for name in ("added", "changed", "removed", "unchanged", "chunks_embedded", "chunks_total",
                     "questions_total", "purged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problems.extend(other.problems)
        self.embed_seconds += other.embed_seconds


@dataclass
class SourceSpec:
    kind: str  # memory | rule | dir
    root: Path
    project: str | None = None
    # Questions per note (recall.questions): this file, else <root>/questions.jsonl if any.
    note_questions: Path | None = None
    questions: bool = True  # False: index the notes' text only (no front-matter or questions file questions)
    # Known unrelated messages (recall.negatives): this file, else <root>/negatives.jsonl if any.
    negatives: Path | None = None

    def negatives_file(self) -> Path:
        from .negatives import NEGATIVES_FILE as NEGATIVES

        return self.negatives or self.root / NEGATIVES

    def questions_file(self) -> Path | None:
        if not self.questions:
            return None
        if self.note_questions is not None:
            return self.note_questions if self.note_questions.is_file() else None
        return folder_questions_file(self.root)


def _fingerprint(note_hash: str, cfg: ChunkConfig, file_questions: list[str] | None = None,
                 questions: bool = True) -> str:
    # Chunking settings are part of the hash: changing them re-chunks every note; so are
    # the note's questions from the questions file (front-matter ones are in the note's bytes).
    # The ":q" marks fingerprints written since notes have questions: an index from before
    # re-reads every note once (re-embedding only the new question chunks).
    # The masking rules' version too: notes masked by older rules are masked again.
    q = questions_hash(file_questions or []) if questions else "-off"
    return f"{note_hash}:{cfg.chars}/{cfg.overlap}/{cfg.max_chunks}:q{q}:m{RULES_VERSION}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def note_chunks(note: Note, cfg: ChunkConfig) -> list[tuple[str, str]]:
    """(masked chunk text, its hash) for a note. Secrets never reach the store."""
    texts = chunk_text(mask_secrets(note.name), mask_secrets(note.description), mask_secrets(note.body), cfg)
    return [(t, text_hash(t)) for t in texts]


def question_chunks(note: Note) -> list[tuple[str, str]]:
    """(masked question, its hash) for each of the note's questions: chunks of their own,
    outside ``max_chunks``, embedded as passages like the note's text (as measured)."""
    texts = [mask_secrets(q) for q in note.questions]
    return [(t, text_hash(t)) for t in dict.fromkeys(texts)]


def source_questions_file(spec: SourceSpec, stats: SyncStats
                   ) -> tuple[Path | None, dict[str, list[str]], dict[str, list[str]]]:
    """The source's questions file, its questions and its restatements per note stem (None, {}, {}
    without one); bad lines go to ``stats.problems``."""
    path = spec.questions_file()
    if path is None:
        return None, {}, {}
    file_questions, problems = read_questions_file(path)
    stats.problems.extend(problems)
    return path, file_questions, read_questions_file(path, field="restatements")[0]


def _questions_file_key(questions: list[str] | None, restatements: list[str] | None) -> list[str] | None:
    """What of the questions file enters a note's fingerprint: its questions, then its restatements."""
    return [*(questions or []), *(f"restatement: {r}" for r in restatements or [])] or None


class Indexer:
    def __init__(self, store: Store, embedder: Embedder, chunking: ChunkConfig | None = None,
                 progress: Callable[[int, str], None] | None = None) -> None:
        self.store = store
        self.embedder = embedder
        if chunking is None:
            from .config import packaged_settings

            chunking = packaged_settings().chunking
        self.cfg = chunking
        self.progress = progress  # called with (chunks embedded, description)

    def sync_source(self, spec: SourceSpec) -> SyncStats:
        stats = SyncStats()
        root = spec.root.resolve()  # absolute paths: they are what the agent is shown
        source_id = self.store.source_id(spec.kind, str(root), spec.project)
        known = {path: fp for path, (_, fp) in self.store.note_hashes(source_id).items()}
        questions_path, file_questions, restated = source_questions_file(spec, stats)
        notes, problems = read_folder(
            root, skip=lambda path, digest: known.get(path)
            == _fingerprint(digest, self.cfg, _questions_file_key(file_questions.get(Path(path).stem),
                                                           restated.get(Path(path).stem)), spec.questions),
        )
        stats.problems.extend(problems)
        if questions_path is not None:
            stats.problems.extend(unknown_notes(questions_path, file_questions, (n.id for n in notes)))
        self.sync_notes(source_id, notes, stats, file_questions=file_questions, questions=spec.questions,
                        restatements=restated)
        return stats

    def sync_notes(self, source_id: int, notes: Iterable[Note], stats: SyncStats,
                   extra: Callable[[Note], dict] | None = None, remove_missing: bool = True,
                   file_questions: dict[str, list[str]] | None = None, questions: bool = True,
                   restatements: dict[str, list[str]] | None = None) -> None:
        existing = self.store.note_hashes(source_id)
        seen: set[str] = set()
        pending: list[tuple[Note, list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], str,
                            bool]] = []
        for note in notes:
            seen.add(note.path)
            extra_questions = (file_questions or {}).get(note.id, [])
            restated = (restatements or {}).get(note.id, []) if questions else []
            fp = _fingerprint(note.content_hash, self.cfg, _questions_file_key(extra_questions, restated), questions)
            old = existing.get(note.path)
            if note.unchanged or (old is not None and old[1] == fp):
                stats.unchanged += 1
                continue
            note.questions = merge(note.questions, extra_questions) if questions else []
            rchunks = [(t, text_hash(t)) for t in dict.fromkeys(mask_secrets(r) for r in restated)]
            pending.append((note, note_chunks(note, self.cfg), question_chunks(note), rchunks, fp, old is None))

        # Embed what is missing, then write notes: a crash between the two only leaves
        # unused vectors behind, never a note without its vectors.
        texts = {h: t for _, chunks, qs, rs, _, _ in pending for t, h in (*chunks, *qs, *rs)}
        self._embed_missing(texts, stats)
        for note, chunks, qchunks, rchunks, fp, is_new in pending:
            self.store.upsert_note(
                source_id, path=note.path, note_id=note.id,
                name=mask_secrets(note.name), description=mask_secrets(note.description),
                type=note.type, content_hash=fp, mtime=note.mtime, chunks=chunks,
                extra=extra(note) if extra else None, questions=qchunks, restatements=rchunks,
            )
            stats.added += is_new
            stats.changed += not is_new
            stats.chunks_total += len(chunks) + len(qchunks) + len(rchunks)
            stats.questions_total += len(qchunks)
        if remove_missing:
            gone = [pk for path, (pk, _) in existing.items() if path not in seen]
            stats.removed += self.store.delete_notes(gone)
        # Replacing a note drops the vectors its old text alone used; text moved from one
        # note of this batch to another lost its vector that way: embed it again (rare).
        self._embed_missing(texts, stats)

    def embed_missing_for_store(self, stats: SyncStats) -> None:
        """Vectors for chunks already in the store but new to this model."""
        texts = dict(self.store.db.execute("SELECT text_hash, text FROM chunks"))
        self._embed_missing(texts, stats)

    def _embed_missing(self, texts: dict[str, str], stats: SyncStats) -> None:
        """Embed the texts (keyed by hash) that have no vector for this model yet."""
        missing = self.store.missing_vectors(self.embedder.model_id, texts)
        order = [h for h in texts if h in missing]
        t0 = time.perf_counter()
        for i in range(0, len(order), EMBED_BATCH):
            batch = order[i : i + EMBED_BATCH]
            vectors = self.embedder.embed_passages([texts[h] for h in batch])
            self.store.put_vectors(self.embedder.model_id, batch, vectors)
            stats.chunks_embedded += len(batch)
            if self.progress:
                self.progress(len(batch), "embedding")
        stats.embed_seconds += time.perf_counter() - t0

    def rebuild(self, approximate_from: int = APPROXIMATE_FROM_CHUNKS, keep_previous: bool = True) -> tuple[int, int]:
        home = self.store.path.parent
        return build_index(self.store, self.embedder.model_id, home=home, approximate_from=approximate_from,
                           keep_previous=keep_previous)
