"""The SQLite store: sources, notes, chunks and vectors, with named migrations.

Vectors are keyed by (model id, hash of the chunk text), so

* an unchanged chunk is never embedded twice, whichever note it belongs to;
* vectors of different models never mix (each index is built for one model id);
* editing the end of a long note re-embeds only the chunks whose text changed.

One ``Store`` per process; SQLite's WAL mode lets the daemon read while
``recall index`` writes. Every write is a transaction: a crash leaves the store as it
was before the interrupted note.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from recall.errors import StoreDamaged
from recall.privacy import masking
from recall.privacy.paths import FILE_MODE, ensure_private_dir
from recall.privacy.regular import not_a_file, open_regular
from recall.store.errors import store_error
from recall.store.pragmas import set_pragmas
from recall.store.records import ROLE_ORDER, Chunk, NoteRecord, NoteRow, mask_note
from recall.store.schema import MIGRATIONS

if TYPE_CHECKING:
    import numpy as np

# The chunks an index holds for a model (``Store.chunk_vectors``, ``Store.indexed_chunk``): those with
# a vector, of the roles asked for, the questions and restatements set aside for it (``muted``) left out.
_INDEXED = ("FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash AND v.model_id = ?"
            " WHERE c.role {roles} AND NOT (c.role IN ('question', 'restatement')"
            " AND c.text_hash IN (SELECT text_hash FROM muted WHERE model_id = ?))")


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        ensure_private_dir(path.parent)
        if why := not_a_file(path):  # SQLite would wait forever on a pipe there
            raise StoreDamaged(path, why)
        if not path.exists():
            # Create it 0600 before SQLite opens it: the notes are the user's only.
            os.close(open_regular(path, os.O_WRONLY | os.O_CREAT))
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        self.db.text_factory = lenient_text
        try:
            set_pragmas(self.db)
            self.migrate()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise store_error(path, exc) from exc
        if sys.platform != "win32":
            for suffix in ("", "-wal", "-shm"):
                p = Path(str(path) + suffix)
                if p.exists():
                    os.chmod(p, FILE_MODE)

    # --- schema --------------------------------------------------------------
    def migrate(self) -> list[str]:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        done = {r[0] for r in self.db.execute("SELECT name FROM migrations")}
        applied = []
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            with self.transaction():  # under the write lock: another process's first open may have run it
                if self.db.execute("SELECT 1 FROM migrations WHERE name=?", (name,)).fetchone():
                    continue  # (a session start's index and `recall status` at once: "duplicate column")
                for statement in sql.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
            applied.append(name)
        return applied

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM migrations ORDER BY name")]

    def transaction(self):
        return _Transaction(self.db)

    def close(self) -> None:
        self.db.close()

    # --- sources and notes ---------------------------------------------------
    def source_id(self, kind: str, root: str, project: str | None) -> int:
        find = "SELECT id FROM sources WHERE kind=? AND root=?"
        row = self.db.execute(find, (kind, root)).fetchone()
        if row:
            if project is not None:
                self.db.execute("UPDATE sources SET project=? WHERE id=?", (project, row[0]))
            return int(row[0])
        # OR IGNORE, then read: two `recall index` of a new folder at once both found no row, and
        # the second insert failed as a damaged store (an outside tester's, stop 57)
        self.db.execute("INSERT OR IGNORE INTO sources (kind, root, project) VALUES (?, ?, ?)", (kind, root, project))
        return int(self.db.execute(find, (kind, root)).fetchone()[0])

    def sources(self) -> list[tuple[int, str, str, str | None]]:
        return list(self.db.execute("SELECT id, kind, root, project FROM sources ORDER BY id"))

    def note_hashes(self, source_id: int) -> dict[str, tuple[int, str]]:
        """path -> (note pk, content hash) for one source."""
        return {
            path: (pk, h)
            for pk, path, h in self.db.execute(
                "SELECT id, path, content_hash FROM notes WHERE source_id=?", (source_id,)
            )
        }

    def upsert_note(self, source_id: int, note: NoteRecord, chunks: Sequence[Chunk]) -> int:
        """Replace a note and its chunks (text, then questions, then restatements) in one
        transaction (never half-updated).

        The one way text enters the store, so the one place every text is masked
        (``recall.store.records.mask_note``): name, description, chunks and ``extra``'s strings.
        Callers mask before chunking and embedding (a secret cut in two by chunking would
        escape a per-chunk mask), which makes this a no-op for them; a chunk it does change
        gets a new hash, so its vector is computed from the masked text at the next index.
        Everything else on disk (meta.json, lexical.npz, FAISS) is built from the store."""
        note, rows = mask_note(note, sorted(chunks, key=lambda c: ROLE_ORDER.index(c.role)))
        path = note.path
        with self.transaction():
            old = self._chunk_hashes("n.source_id=? AND n.path=?", (source_id, path))
            self.db.execute("DELETE FROM notes WHERE source_id=? AND path=?", (source_id, path))
            cur = self.db.execute(
                "INSERT INTO notes (source_id, path, note_id, name, description, type, content_hash,"
                " mtime, indexed_at, extra) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (source_id, path, note.note_id, note.name, note.description, note.type, note.content_hash,
                 note.mtime, time.time(), json.dumps(note.extra, ensure_ascii=False)),
            )
            pk = int(cur.lastrowid or 0)
            self.db.executemany(
                "INSERT INTO chunks (note_id, ord, text, text_hash, role) VALUES (?,?,?,?,?)",
                [(pk, i, text, h, role) for i, (text, h, role) in enumerate(rows)],
            )
            self._drop_unused_vectors(old)
        return pk

    def delete_notes(self, pks: Iterable[int]) -> int:
        pks = list(pks)
        with self.transaction():
            old: set[str] = set()
            for pk in pks:
                old |= self._chunk_hashes("n.id=?", (pk,))
            self.db.executemany("DELETE FROM notes WHERE id=?", [(pk,) for pk in pks])
            self._drop_unused_vectors(old)
        return len(pks)

    def delete_source(self, source_id: int) -> None:
        with self.transaction():
            old = self._chunk_hashes("n.source_id=?", (source_id,))
            self.db.execute("DELETE FROM sources WHERE id=?", (source_id,))
            self._drop_unused_vectors(old)

    def _chunk_hashes(self, where: str, args: tuple) -> set[str]:
        return {r[0] for r in self.db.execute(
            f"SELECT c.text_hash FROM chunks c JOIN notes n ON n.id = c.note_id WHERE {where}", args)}

    def _drop_unused_vectors(self, hashes: Iterable[str]) -> None:
        """Vectors (of any model) of chunk texts that no chunk holds any more: a changed or
        deleted note takes its old vectors with it (in the caller's transaction)."""
        self.db.executemany(
            "DELETE FROM vectors WHERE text_hash=? AND NOT EXISTS"
            " (SELECT 1 FROM chunks WHERE chunks.text_hash = vectors.text_hash)",
            [(h,) for h in hashes],
        )

    # --- vectors -------------------------------------------------------------
    def missing_vectors(self, model_id: str, hashes: Iterable[str]) -> set[str]:
        wanted = set(hashes)
        if not wanted:
            return set()
        have: set[str] = set()
        items = list(wanted)
        for i in range(0, len(items), 500):
            part = items[i : i + 500]
            q = ",".join("?" * len(part))
            have.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT text_hash FROM vectors WHERE model_id=? AND text_hash IN ({q})",
                    (model_id, *part),
                )
            )
        return wanted - have

    def put_vectors(self, model_id: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        with self.transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors (model_id, text_hash, dim, vector) VALUES (?,?,?,?)",
                [
                    (model_id, h, int(v.shape[0]), v.astype("float32").tobytes())
                    for h, v in zip(hashes, vectors, strict=True)
                ],
            )

    def vectors_of(self, model_id: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """text hash -> stored vector for ``model_id``, for those of ``hashes`` it has."""
        import numpy as np

        out: dict[str, np.ndarray] = {}
        items = list(dict.fromkeys(hashes))
        for i in range(0, len(items), 500):
            part = items[i : i + 500]
            q = ",".join("?" * len(part))
            for h, blob in self.db.execute(
                f"SELECT text_hash, vector FROM vectors WHERE model_id=? AND text_hash IN ({q})", (model_id, *part)
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def drop_orphan_vectors(self) -> int:
        """Vectors no chunk uses (left by an older recall, or by a crash between embedding
        and writing a note); ``Recall.index`` calls it before embedding what is missing."""
        with self.transaction():
            cur = self.db.execute(
                "DELETE FROM vectors WHERE NOT EXISTS"
                " (SELECT 1 FROM chunks WHERE chunks.text_hash = vectors.text_hash)"
            )
        return cur.rowcount

    # --- reads for the index builder -----------------------------------------
    def notes(self) -> list[NoteRow]:
        rows = self.db.execute(
            "SELECT n.id, n.source_id, s.kind, s.project, s.root, n.path, n.note_id, n.name,"
            " n.description, n.type, n.extra FROM notes n JOIN sources s ON s.id = n.source_id"
            " ORDER BY n.id"
        )
        return [NoteRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], json.loads(r[10])) for r in rows]

    def chunk_vectors(self, model_id: str, headers: bool = False, asked: bool = False) -> tuple[list[int], list[bytes]]:
        """(note pk, vector bytes) for every chunk that has a vector for ``model_id``, headers
        and the questions and restatements set aside for it (``muted``) left out; ``headers``:
        the headers alone (``recall.indexing.texts.header_chunk``); ``asked``: the questions and
        restatements alone."""
        pks: list[int] = []
        blobs: list[bytes] = []
        roles = "= 'header'" if headers else "IN ('question', 'restatement')" if asked else "!= 'header'"
        for pk, blob in self.db.execute(f"SELECT c.note_id, v.vector {_INDEXED.format(roles=roles)}"
                                        " ORDER BY c.note_id, c.ord", (model_id, model_id)):
            pks.append(int(pk))
            blobs.append(blob)
        return pks, blobs

    def indexed_chunk(self, pk: int, model_id: str, place: int) -> tuple[str, str] | None:
        """(role, text) of note ``pk``'s chunk at ``place`` among its rows in ``model_id``'s index
        (``Hit.chunk``): its header and its set-aside questions are no rows there (a search's
        snippet counted them, and showed the chunk before the one that matched, or a question
        set aside: an outside tester's, stop 56)."""
        rows = _INDEXED.format(roles="!= 'header'")
        row = self.db.execute(f"SELECT c.role, c.text {rows} AND c.note_id = ? ORDER BY c.ord LIMIT 1 OFFSET ?",
                              (model_id, model_id, pk, place)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def muted(self, model_id: str) -> set[str]:
        """Text hashes of the questions set aside for ``model_id`` (``recall.ranking.muting``)."""
        return {h for (h,) in self.db.execute("SELECT text_hash FROM muted WHERE model_id = ?", (model_id,))}

    def set_muted(self, model_id: str, hashes: Iterable[str]) -> bool:
        """Set aside exactly these questions for ``model_id``; whether that changed anything."""
        new = set(hashes)
        if new == self.muted(model_id):
            return False
        with self.transaction():
            self.db.execute("DELETE FROM muted WHERE model_id = ?", (model_id,))
            self.db.executemany("INSERT INTO muted VALUES (?, ?)", [(model_id, h) for h in sorted(new)])
        return True

    def notes_with_questions(self) -> set[int]:
        """pks of the notes that have at least one question chunk."""
        return {int(pk) for (pk,) in self.db.execute("SELECT DISTINCT note_id FROM chunks WHERE role = 'question'")}

    def chunk_texts(self, role: str | None = None) -> dict[int, list[str]]:
        """note pk -> its chunk texts in order; ``role`` keeps only 'text' or 'question'."""
        out: dict[int, list[str]] = {}
        sql = "SELECT note_id, text FROM chunks" + (" WHERE role=?" if role else "") + " ORDER BY note_id, ord"
        for pk, text in self.db.execute(sql, (role,) if role else ()):
            out.setdefault(int(pk), []).append(text)
        return out

    def chunk_texts_by_hash(self) -> dict[str, str]:
        """text hash -> text of every chunk (to embed the ones a new model has no vector for)."""
        return dict(self.db.execute("SELECT text_hash, text FROM chunks"))

    def unembedded(self, model_id: str) -> dict[str, tuple[str, str]]:
        """text hash -> (text, role) of the chunks with no vector for ``model_id``: every
        note's text first (what makes a note searchable), then questions, then restatements."""
        order = " ".join(f"WHEN '{r}' THEN {i}" for i, r in enumerate(ROLE_ORDER))
        out: dict[str, tuple[str, str]] = {}
        for h, text, role in self.db.execute(
            "SELECT c.text_hash, c.text, c.role FROM chunks c LEFT JOIN vectors v"
            " ON v.text_hash = c.text_hash AND v.model_id = ? WHERE v.text_hash IS NULL"
            f" ORDER BY CASE c.role {order} ELSE {len(ROLE_ORDER)} END, c.note_id, c.ord",
            (model_id,),
        ):
            out.setdefault(h, (text, role))
        return out

    def notes_searchable(self, model_id: str) -> int:
        """Notes with at least one chunk of their text embedded for ``model_id``."""
        return int(self.db.execute(
            "SELECT COUNT(DISTINCT c.note_id) FROM chunks c JOIN vectors v"
            " ON v.text_hash = c.text_hash AND v.model_id = ? WHERE c.role = 'text'", (model_id,)).fetchone()[0])

    def note_detail(self, pk: int) -> dict | None:
        """One note's file mtime, when it was indexed, and its chunks as (role, text) in
        order (for ``recall ui``); None when no such note."""
        row = self.db.execute("SELECT mtime, indexed_at FROM notes WHERE id=?", (pk,)).fetchone()
        if row is None:
            return None
        chunks = list(self.db.execute("SELECT role, text FROM chunks WHERE note_id=? ORDER BY ord", (pk,)))
        return {"mtime": row[0], "indexed_at": row[1], "chunks": [(r, t) for r, t in chunks]}

    def counts(self) -> dict[str, int]:
        one = self.db.execute
        return {
            "sources": one("SELECT COUNT(*) FROM sources").fetchone()[0],
            "notes": one("SELECT COUNT(*) FROM notes").fetchone()[0],
            "chunks": one("SELECT COUNT(*) FROM chunks").fetchone()[0],
            "questions": one("SELECT COUNT(*) FROM chunks WHERE role='question'").fetchone()[0],
            "vectors": one("SELECT COUNT(*) FROM vectors").fetchone()[0],
        }

    def setting(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_setting(self, key: str, value: str) -> None:
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (key, value))

    def notes_masked_before(self, rules_version: int) -> int:
        """Notes whose fingerprint (``recall.indexing.indexer.fingerprint``) names older masking rules."""
        return int(self.db.execute("SELECT COUNT(*) FROM notes WHERE content_hash NOT LIKE ?",
                                   (f"%{masking.rules_mark(rules_version)}%",)).fetchone()[0])

    def settle(self) -> None:
        """The log written into the file and emptied now, not when the last connection closes (the
        daemon's stays open for hours): until then the file kept a deleted note's text (stop 48, V01)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def scrub(self) -> None:
        """Rewrite the file without any trace of deleted rows: VACUUM (free pages and old
        row copies from before secure_delete), then empty the write-ahead log, which still
        holds the pages as they were before the delete."""
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def note_extras(self, source_id: int) -> dict[str, tuple[int, dict]]:
        """path -> (note pk, extra) for one source."""
        return {path: (pk, json.loads(extra)) for pk, path, extra in self.db.execute(
            "SELECT id, path, extra FROM notes WHERE source_id=?", (source_id,))}

    def record_index_run(self, model_id: str, generation: int, chunks: int) -> None:
        """Dated after every other run, whatever the clock says (a clock set back made a later run "older")."""
        with self.transaction():
            latest = self.db.execute("SELECT MAX(built_at) FROM index_runs WHERE model_id != ?", (model_id,)).fetchone()
            when = max(time.time(), float(latest[0] or 0) + 0.001)
            self.db.execute("INSERT OR REPLACE INTO index_runs VALUES (?,?,?,?)", (model_id, generation, when, chunks))

    def forget_index_runs(self, keep_model_id: str) -> None:  # their files were removed
        with self.transaction():
            self.db.execute("DELETE FROM index_runs WHERE model_id != ?", (keep_model_id,))

    def index_runs(self) -> list[tuple[str, int, float, int]]:
        return list(self.db.execute("SELECT model_id, generation, built_at, chunks FROM index_runs"))


def lenient_text(raw: bytes) -> str:
    """A text column as ``str``, a byte SQLite cannot vouch for (one flipped bit on the disk, an
    outside writer's bytes) read as U+FFFD: one damaged value must not stop every read of the
    store, nor the ``--rebuild`` that rewrites it (an outside tester's store: stop 44)."""
    return raw.decode("utf-8", errors="replace")



class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
