"""The SQLite store's schema: named migrations, applied in order by ``recall.store.sqlite.Store``."""

from __future__ import annotations

# Named migrations, applied in order, each once (recorded in ``migrations``).
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,          -- memory | rule | dir | conversation
            root TEXT NOT NULL,          -- folder indexed
            project TEXT,                -- Claude Code project key, if any
            UNIQUE (kind, root)
        );
        CREATE TABLE notes (
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            note_id TEXT NOT NULL,       -- file stem
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            type TEXT NOT NULL,
            content_hash TEXT NOT NULL,  -- hash of the file's bytes + chunking settings
            mtime REAL NOT NULL,
            indexed_at REAL NOT NULL,
            UNIQUE (source_id, path)
        );
        CREATE TABLE chunks (
            note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            text TEXT NOT NULL,          -- secrets already masked
            text_hash TEXT NOT NULL,
            PRIMARY KEY (note_id, ord)
        );
        CREATE INDEX chunks_text_hash ON chunks(text_hash);
        CREATE TABLE vectors (
            model_id TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,        -- float32, unit length
            PRIMARY KEY (model_id, text_hash)
        );
        CREATE TABLE index_runs (
            model_id TEXT PRIMARY KEY,
            generation INTEGER NOT NULL,
            built_at REAL NOT NULL,
            chunks INTEGER NOT NULL
        );
        """,
    ),
    (
        "0002_note_extra",
        # Per-note data that only some kinds have (a conversation's date and session).
        "ALTER TABLE notes ADD COLUMN extra TEXT NOT NULL DEFAULT '{}';",
    ),
    (
        "0003_chunk_role",
        # 'text': a piece of the note; 'question': a message the note answers
        # (recall.notes.questions). Both are searched; only text goes into BM25.
        "ALTER TABLE chunks ADD COLUMN role TEXT NOT NULL DEFAULT 'text';",
    ),
    (
        "0004_settings",
        # Small facts about the store itself (the masking rules its text went through).
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    ),
    (
        "0005_vectors_by_text",
        # A changed or deleted note drops the vectors of its old texts, of every model, by text hash
        # (``Store._drop_unused_vectors``): without this each one read the whole table.
        "CREATE INDEX IF NOT EXISTS vectors_text_hash ON vectors(text_hash);",
    ),
    (
        "0006_muted",
        # Question chunks the calibration set aside for a model (recall.ranking.muting): they
        # made a note speak on messages known to be about no note. Left out of its index.
        "CREATE TABLE muted (model_id TEXT NOT NULL, text_hash TEXT NOT NULL, PRIMARY KEY (model_id, text_hash));",
    ),
]
