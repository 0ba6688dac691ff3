"""The one write path: bring a store up to date with folders of notes.

``recall index``, ``recall watch`` and ``recall team push`` all go through ``Indexer``,
over any store of the contract (``recall.backends.contract.NoteStore``: the local SQLite + FAISS
store, or the team's PostgreSQL):

  read the folder, its questions file and restatements (``read_source``)
  -> masked note records and chunks (``prepare_note``; ids and paths masked too: a file
     named after a key is stored, logged and shown as ``[REDACTED].md``)
  -> embed only the chunk texts the store has no vector for (with a cloud multimodal embedder,
     ``recall.embedding.gemini``, a screenshot's or recording's chunks go with the media: ``media_of``)
  -> ``store.upsert_note``, one transaction per note; vanished notes deleted
  -> ``store.rebuild()`` once for the batch (a new FAISS generation, locally).

Incremental: a note whose bytes (and chunking settings, its questions and restatements
in the folder's questions file, and the masking rules) are unchanged is skipped
(``fingerprint``); a changed note is re-chunked, and only chunks whose text has no vector
yet for this model are embedded. A crash mid-index leaves the previous FAISS index live
and the store consistent. ``Recall.index`` writes notes first (``defer``) and embeds after
(``embed_phased``: text, then questions), so that a crash there is resumed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from recall.backends.contract import NoteStore
from recall.config.settings import ChunkConfig
from recall.embedding.models import Embedder
from recall.indexing.media import MEDIA_SALT, MEDIA_TYPES, media_embedder, media_of
from recall.indexing.texts import document_chunks, header_chunk, note_chunks, question_chunks
from recall.notes.documents import LIBRARY, Ahead, read_documents
from recall.notes.files import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Note, cap_field, misnamed, read_folder
from recall.notes.problems import Problem
from recall.notes.questions import (
    folder_questions_file,
    follow_renames,
    left_out,
    line_hashes,
    merge,
    questions_hash,
    read_questions_file,
    settled,
    unknown_notes,
)
from recall.privacy.masking import mask_secrets, rules_mark
from recall.store.records import Chunk, NoteRecord, NoteRejected, SourceRef, mask_record, text_hash

if TYPE_CHECKING:
    from recall.config.settings import DocumentsSettings
    from recall.indexing.progress import IndexProgress

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
    questions_total: int = 0  # of chunks_total, how many are questions (recall.notes.questions)
    problems: list[Problem] = field(default_factory=list)
    purged: int = 0  # notes removed because they must not be kept (a past prompt): scrub after
    seconds: float = 0.0
    embed_seconds: float = 0.0
    calibrate_seconds: float = 0.0  # of seconds, fitting the thresholds (Recall.index)

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
    # Questions per note (recall.notes.questions): this file, else <root>/questions.jsonl if any.
    note_questions: Path | None = None
    questions: bool = True  # False: index the notes' text only (no questions from the front matter or a questions file)
    # Known unrelated messages (recall.ranking.negatives): this file, else <root>/negatives.jsonl if any.
    negatives: Path | None = None
    documents: bool = True  # also read documents, images and recordings (recall.notes.documents)
    inside: tuple[Path, ...] = ()  # folders of another kind inside it: their files are theirs (recall.indexing.kinds)
    kind_given: bool = True  # False: the default kind, no --kind: a folder known as another is read as that

    def negatives_file(self) -> Path:
        from recall.ranking.negatives import NEGATIVES_FILE as NEGATIVES

        return self.negatives or self.root / NEGATIVES

    def questions_file(self) -> Path | None:
        if not self.questions:
            return None
        if self.note_questions is not None:
            return self.note_questions if self.note_questions.is_file() else None
        return folder_questions_file(self.root)

    def ref(self, team: bool = False) -> SourceRef:
        """The folder as a store knows it (absolute: paths are what the agent is shown)."""
        return SourceRef(self.kind, str(self.root.resolve()), self.project, team)


@dataclass
class SourceNotes:
    """A folder read for indexing: its notes (those known unchanged are not parsed), and
    its questions file's questions and restatements per note stem."""

    notes: list[Note]
    file_questions: dict[str, list[str]]
    restatements: dict[str, list[str]]
    problems: list[Problem]


def fingerprint(note_hash: str, cfg: ChunkConfig, file_questions: Sequence[str] | None = None,
                questions: bool = True) -> str:
    """What decides whether a note is written again (``NoteRecord.content_hash``).

    Chunking settings are part of it (changing them re-chunks every note), and the note's
    questions from the questions file (front-matter ones are in its bytes). ":q": written since
    notes have questions, ``rules_mark``: the masking rules (notes masked by older ones are
    masked again), ":h": written with the header vector; an older index re-reads each note once."""
    q = questions_hash(list(file_questions or [])) if questions else "-off"
    return f"{note_hash}:{cfg.chars}/{cfg.overlap}/{cfg.max_chunks}:q{q}{rules_mark()}h"


def _questions_file_key(questions: Sequence[str] | None, restatements: Sequence[str] | None) -> list[str] | None:
    """What of the questions file enters a note's fingerprint: its questions, then its restatements."""
    return [*(questions or []), *(f"restatement: {r}" for r in restatements or [])] or None


def note_fingerprint(note: Note, cfg: ChunkConfig, file_questions: Sequence[str] = (),
                     restatements: Sequence[str] = (), questions: bool = True) -> str:
    """``fingerprint`` of a note with its questions file's questions and restatements."""
    key = _questions_file_key(file_questions, restatements if questions else [])
    return fingerprint(note.content_hash, cfg, key, questions)


def prepare_note(note: Note, cfg: ChunkConfig, file_questions: Sequence[str] = (),
                 restatements: Sequence[str] = (), questions: bool = True) -> tuple[NoteRecord, list[Chunk]]:
    """The masked record and chunks of a parsed note: its text, its header, then its questions
    (front matter + questions file), then its restatements; ``questions=False``: its text and
    header only."""
    restated = list(restatements) if questions else []
    fp = note_fingerprint(note, cfg, file_questions, restated, questions)
    note = replace(note, questions=merge(note.questions, file_questions) if questions else [])
    record = mask_record(NoteRecord(path=note.kept_path, note_id=note.id, name=cap_field(note.name, MAX_NAME_CHARS),
                                    description=cap_field(note.description, MAX_DESCRIPTION_CHARS),
                                    type=note.type[:40], content_hash=fp, mtime=note.mtime, extra=dict(note.extra)))
    if note.segments is not None:  # which page, slide, section or time range each chunk is
        doc = document_chunks(note, cfg)
        record.extra["locations"] = doc.locations
        if doc.truncated:  # said by sync_notes: the rest of a long document is not searchable
            record.extra["cut_at"] = doc.cut_at
        chunks = [Chunk(t, text_hash(t), "text") for t in doc.texts]
    else:
        chunks = [Chunk(t, h, "text") for t, h in note_chunks(note, cfg)]
    chunks += [Chunk(t, h, "header") for t, h in header_chunk(note)]
    chunks += [Chunk(t, h, "question") for t, h in question_chunks(note)]
    chunks += [Chunk(t, text_hash(t), "restatement") for t in dict.fromkeys(mask_secrets(r) for r in restated)]
    return record, chunks


def read_questions(spec: SourceSpec) -> SourceNotes:
    """``spec``'s questions file: its questions and restatements per note stem (no notes);
    bad lines become problems."""
    path = spec.questions_file()
    if path is None:
        return SourceNotes([], {}, {}, [])
    file_questions, problems = read_questions_file(path)
    return SourceNotes([], file_questions, read_questions_file(path, field="restatements")[0], problems)


def follows_elsewhere(spec: SourceSpec, notes: Iterable[Note], others: Iterable[str]) -> bool:
    """Whether a questions line may belong to another of ``spec``'s notes than its key says, for one
    of ``notes`` (``recall.notes.questions.renames``: renamed, its name reused): then only the whole
    folder's notes decide (``read_source``), not these alone (the watcher's saves). ``others``: the
    hashes of the folder's other notes (their fingerprints as stored do: they start with it)."""
    path = spec.questions_file()
    notes = list(notes)
    own_line = settled(line_hashes(path) if path is not None else {},
                       [*others, *(note.content_hash for note in notes)])
    return not all(own_line(note.questions_key, note.content_hash) for note in notes)


def read_source(spec: SourceSpec, cfg: ChunkConfig, known: dict[str, str],
                documents: DocumentsSettings | None = None, media: bool = False,
                sealed: Callable[[str], str] = lambda fp: fp, ahead: Ahead | None = None) -> SourceNotes:
    """Read ``spec``'s folder and questions file; a note whose fingerprint is in ``known``
    (path -> fingerprint as the store keeps it: ``sealed``) is hashed, not parsed. Bad lines and files become problems.
    ``documents``: also read the folder's documents, images and recordings with these
    settings (``recall.notes.documents``; a library source's markdown too; converted by ``ahead``
    if given). ``media``: images and recordings are embedded with their media (``MEDIA_SALT``)."""
    read = read_questions(spec)
    file_questions, restated = read.file_questions, read.restatements
    path = spec.questions_file()
    hashes = line_hashes(path) if path is not None else {}
    own_line = settled(hashes)  # else the whole folder decides its questions (follow_renames): parsed

    def unchanged(note_path: str, digest: str, stem: str) -> bool:
        if not own_line(stem, digest):
            return False
        key = _questions_file_key(file_questions.get(stem), restated.get(stem))
        return known.get(note_path) == sealed(fingerprint(digest, cfg, key, spec.questions))

    read.notes, found = read_folder(spec.root.resolve(), skip=unchanged) if spec.kind != LIBRARY else ([], [])
    read.problems += found
    if spec.documents and documents is not None:
        from recall.notes.documents import IMAGE_FORMATS, RECORDING_FORMATS

        salted = {*IMAGE_FORMATS.values(), *RECORDING_FORMATS.values()} if media else set()
        docs, found = read_documents(spec.root.resolve(), documents, spec.kind, unchanged=lambda path, rel, key:
                                     known.get(path) == sealed(fingerprint(
                                         key + (MEDIA_SALT if key.split(":")[2] in salted else ""), cfg,
                                         _questions_file_key(file_questions.get(rel), restated.get(rel)),
                                         spec.questions)), ahead=ahead)
        read.notes += docs
        read.problems += found
    if path is not None:
        follow_renames(path, file_questions, restated, {n.questions_key: n.content_hash for n in read.notes},
                       own=spec.note_questions is None and spec.kind != LIBRARY, hashes=hashes)
        read.problems += unknown_notes(path, file_questions, (n.questions_key for n in read.notes))
    if spec.inside:  # another kind's folder inside this one: its files are its own (recall.indexing.kinds)
        read.notes = [n for n in read.notes if not any(Path(os.path.realpath(n.path)).is_relative_to(r)
                                                       for r in spec.inside)]
    return read


class Indexer:
    """Writes notes into one store of the contract with one embedder (see the module doc)."""

    def __init__(self, store: NoteStore, embedder: Embedder, chunking: ChunkConfig | None = None,
                 progress: Callable[[int, str], None] | None = None,
                 documents: DocumentsSettings | None = None, defer: bool = False, delay_s: float = 0.0) -> None:
        self.store = store
        self.defer = defer  # sync_notes writes notes, the caller embeds (embed_phased)
        self.delay_s = delay_s  # tests only ([index] debug_delay_ms): each batch takes this much longer
        self.embedder = embedder
        if chunking is None or documents is None:
            from recall.config.load import packaged_settings

            chunking, documents = chunking or packaged_settings().chunking, documents or packaged_settings().documents
        self.cfg = chunking
        self.progress = progress  # called with (chunks embedded, description)
        self.documents = documents  # [documents]: which files besides notes a folder gives
        self.ahead: Ahead | None = None  # documents converted beside the writer (the watcher's)

    def sync_source(self, spec: SourceSpec, team: bool = False, stats: SyncStats | None = None) -> SyncStats:
        """Bring one folder up to date in the store (``team``: team store, shared rows); ``stats``,
        when given, counts as it goes (what a push lost half-way had written: ``recall team push``)."""
        if (problem := misnamed(spec.root)) is not None:  # a path no store, FAISS or terminal takes
            return SyncStats(problems=[problem])
        stats, source = stats if stats is not None else SyncStats(), spec.ref(team)
        read = read_source(spec, self.cfg, self.store.note_hashes(source), self.documents,
                           media_embedder(self.embedder) is not None, self.store.sealed, self.ahead)
        stats.problems.extend(read.problems)
        self.sync_notes(source, read.notes, stats, file_questions=read.file_questions,
                        questions=spec.questions, restatements=read.restatements)
        return stats

    def sync_notes(self, source: SourceRef, notes: Iterable[Note], stats: SyncStats,
                   extra: Callable[[Note], dict] | None = None, remove_missing: bool = True,
                   file_questions: dict[str, list[str]] | None = None, questions: bool = True,
                   restatements: dict[str, list[str]] | None = None) -> None:
        """Write the new and changed ``notes`` of ``source``; with ``remove_missing``, delete
        its stored notes not among them. ``extra``: per-note data to keep (conversations)."""
        existing = self.store.note_hashes(source)
        seen: set[str] = set()
        pending: list[tuple[NoteRecord, list[Chunk], bool]] = []
        with_media = media_embedder(self.embedder) is not None
        media: dict = {}  # chunk hash -> recall.embedding.gemini.Media
        for note in notes:
            if with_media and note.type in MEDIA_TYPES and not note.unchanged:
                note = replace(note, content_hash=note.content_hash + MEDIA_SALT)
            path = note.kept_path  # the store's key: a secret in a file name never reaches it
            seen.add(path)
            key = note.questions_key
            asked, restated = (file_questions or {}).get(key, []), (restatements or {}).get(key, [])
            old = existing.get(path)
            if note.unchanged or old == self.store.sealed(note_fingerprint(note, self.cfg, asked, restated, questions)):
                stats.unchanged += 1
                continue
            record, chunks = prepare_note(note, self.cfg, asked, restated, questions)
            stats.problems += left_out(path, note.questions, asked) if questions else []
            if "cut_at" in record.extra:
                cap = note.max_chunks or self.cfg.max_chunks
                stats.problems.append(Problem(note.path, f"past [documents] max_chunks ({cap}): from "
                                                         f"{record.extra['cut_at'] or 'its middle'} on, not indexed"))
            if with_media and note.type in MEDIA_TYPES:
                chunks, found = media_of(note, record, chunks)
                media.update(found)
            if extra:
                record.extra = {**record.extra, **extra(note)}
            pending.append((record, chunks, old is None))
        # Embed what is missing, then write notes: a crash between the two only leaves
        # unused vectors behind, never a note without its vectors. Deferred: notes first
        # (a crash leaves notes whose missing vectors the next index embeds: it resumes).
        texts = {c.hash: c.text for _, chunks, _ in pending for c in chunks}
        if not self.defer:
            self.embed_missing(texts, stats, media)
        elif media:  # pictures and videos now, with their media: what resumes later has only their text
            self.embed_missing({h: texts[h] for h in media if h in texts}, stats, media)
        for record, chunks, is_new in pending:
            try:
                self.store.upsert_note(source, record, chunks)
            except NoteRejected as exc:  # this note alone: one line, the rest is written
                stats.problems.append(Problem(record.path, f"{exc}; skipped"))
                continue
            stats.added += is_new
            stats.changed += not is_new
            stats.chunks_total += len(chunks)
            stats.questions_total += sum(c.role == "question" for c in chunks)
        if remove_missing:
            stats.removed += self.store.delete_notes(source, [p for p in existing if p not in seen])
        # Replacing a note drops the vectors its old text alone used; text moved from one
        # note of this batch to another lost its vector that way: embed it again (rare).
        if not self.defer:
            self.embed_missing(texts, stats, media)

    def delete_notes(self, source: SourceRef, paths: Iterable[str], stats: SyncStats) -> None:
        stats.removed += self.store.delete_notes(source, paths)

    def embed_missing(self, texts: dict[str, str], stats: SyncStats, media: dict | None = None,
                      publish: Callable[[], object] | None = None, every_s: float = 0.0) -> None:
        """Embed the texts (keyed by hash) the store has no vector for yet, in batches;
        those in ``media`` (hash -> ``recall.embedding.gemini.Media``) with their picture or video.
        ``publish`` is called after a batch at most every ``every_s`` seconds (0: never)."""
        media = media or {}
        missing = self.store.missing_vectors(texts)
        order = [h for h in texts if h in missing]
        embed_media = media_embedder(self.embedder) if media else None
        t0 = last = time.perf_counter()
        for i in range(0, len(order), EMBED_BATCH):
            batch = order[i : i + EMBED_BATCH]
            if self.delay_s:
                time.sleep(self.delay_s)
            if embed_media is not None and any(h in media for h in batch):
                vectors = embed_media([(texts[h], media.get(h)) for h in batch])
            else:
                vectors = self.embedder.embed_passages([texts[h] for h in batch])
            self.store.put_vectors(batch, vectors)
            stats.chunks_embedded += len(batch)
            if self.progress:
                self.progress(len(batch), "embedding")
            if publish is not None and every_s > 0 and time.perf_counter() - last >= every_s \
                    and i + EMBED_BATCH < len(order):
                publish()
                last = time.perf_counter()
        stats.embed_seconds += time.perf_counter() - t0

    def embed_phased(self, chunks: dict[str, tuple[str, str]], stats: SyncStats, progress: IndexProgress,
                     publish: Callable[[], object], every_s: float) -> None:
        """Embed ``chunks`` (hash -> (text, role)) in two phases: every note's text, made
        searchable as it goes (``publish`` at most every ``every_s`` seconds, and at the
        phase's end), then the questions and restatements (the caller publishes after). A note removed
        or changed (``stats``) leaves the live index first: one interrupted before kept being handed over (AE03)."""
        phases = (("notes", {h: t for h, (t, role) in chunks.items() if role == "text"}),
                  ("questions", {h: t for h, (t, role) in chunks.items() if role != "text"}))
        if stats.removed or stats.changed:
            publish()
        for phase, texts in phases:
            progress.begin(phase, len(texts))
            if phase == "notes":
                self.embed_missing(texts, stats, publish=publish, every_s=every_s)
                if texts and len(phases[1][1]) > EMBED_BATCH:  # searchable before many questions
                    publish()
            else:
                self.embed_missing(texts, stats)

    def rebuild(self, keep_previous: bool = True):
        """Make this batch's writes searchable: the one rebuild (a FAISS generation, locally)."""
        return self.store.rebuild(keep_previous=keep_previous)
