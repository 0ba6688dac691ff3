"""A team store: PostgreSQL + pgvector behind the store contract (``recall.store.records``).

Each member pushes their notes (embedded locally) and searches their own rows plus the
rows teammates pushed as ``team`` (shared) ones. What reaches the server:

* note metadata and chunk texts, secrets masked (``recall.privacy.masking.mask_secrets``): they
  come from the one write path (``recall.indexing.indexer``, ``recall team push``), masked before
  embedding, and are masked again here on write (``recall.store.records.mask_note``);
* one vector per chunk, and at search time the query's *vector* only: prompts never
  leave the machine.

Who may read and change what is the **server's** business, not this client's: every
member connects as their own PostgreSQL role, ``owner`` is that role (column default
``session_user``, never sent by the client), and row-level security policies (ENABLE +
FORCE) let a role read team rows and its own rows and write only its own, whatever SQL
it sends. ``recall.team.admin`` sets this up (``recall team init``, ``recall team
add-member``); this module only connects and refuses a schema that lacks it. Connection and
settings: ``recall.team.connect``; the schema and its row-level security: ``recall.team.schema``.
A note is replaced in one transaction: a reader sees the old note or the new one, never both.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from recall.notes.files import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from recall.ranking.scope import Scope
from recall.ranking.search import CHUNKS_PER_QUERY
from recall.ranking.selector import Hit
from recall.store.records import Chunk, NoteRecord, NoteRejected, SourceRef, as_query_matrix, mask_note
from recall.team import rows
from recall.team.connect import DEFAULT_SCHEMA, LOCK_TIMEOUT_S, STATEMENT_TIMEOUT_S, PgStoreError, connect
from recall.team.queries import CUTS, SEARCH_SQL, scope_sql, team_project
from recall.team.schema import HNSW_EF_CONSTRUCTION, HNSW_M, check_ready

if TYPE_CHECKING:
    import numpy as np

__all__ = ["LOCK_TIMEOUT_S", "STATEMENT_TIMEOUT_S", "PgIndex", "PgStoreError"]

# HNSW candidate list per search. A search fetches CHUNKS_PER_QUERY chunks before
# grouping them by note; pgvector returns at most ef_search rows per index pass, so it
# must be at least that many (pgvector's default of 40 would cap the ranking at 40 chunks).
EF_SEARCH = max(40, CHUNKS_PER_QUERY)
TEAM_KEY_FILE = "team.key"


def _root(source: SourceRef) -> str:
    """The folder as the team store keeps it: its secrets masked, like every path others read
    (teammates see a team row's source); the same folder masks the same way every push."""
    from recall.privacy.masking import mask_path

    return mask_path(source.root)


def _team_key() -> bytes:
    """This user's key for ``PgIndex.sealed`` (32 random bytes in RECALL_HOME/team.key, 0600,
    made on first use; lost, every note is pushed again once)."""
    import secrets

    from recall.privacy.paths import make_missing_dirs, private_open, read_bytes, recall_home

    path = recall_home() / TEAM_KEY_FILE
    try:
        key = read_bytes(path, 4096)
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    make_missing_dirs(path.parent)
    key = secrets.token_bytes(32)
    with private_open(path, "wb") as fh:
        fh.write(key)
    return key


class PgIndex:
    """``NoteStore`` over one schema of a PostgreSQL database with pgvector.

    The schema must have been set up by ``recall team init`` (``recall.team.admin``); this
    class creates nothing. ``owner`` is the role the server knows this connection as.
    One connection, used under a lock (psycopg connections are not meant for concurrent
    transactions); open one ``PgIndex`` per thread for parallel work.
    """

    def __init__(self, url: str, model_id: str, dim: int, *, wait_s: float, schema: str = DEFAULT_SCHEMA,
                 connect_timeout: int = 10) -> None:
        self.model_id = model_id
        self.dim = int(dim)
        self.schema = schema
        self._lock = threading.Lock()
        self._vectors: dict[str, np.ndarray] = {}  # put_vectors, until the notes are upserted
        self._key: bytes | None = None  # sealed()'s, read on first use
        self.conn = connect(url, wait_s, connect_timeout)
        try:
            self.owner = str(self.conn.execute("SELECT session_user").fetchone()[0])  # type: ignore[index]
            info = self.conn.info  # which store this is, for the folders pushed to it (recall.team.pushed)
            self.identity = f"{self.owner}@{info.host}:{info.port}/{info.dbname}#{schema}"
            check_ready(self.conn, schema)
            from pgvector.psycopg import register_vector
            from psycopg import sql

            # The schema first, then public (where CREATE EXTENSION put the vector type).
            self.conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
            register_vector(self.conn)
            self._check_model()
            self.conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
            if self._iterative_scan_supported():
                # A scoped search filters chunks after the index scan; iterative scans keep
                # walking the graph until LIMIT rows pass the filter (pgvector >= 0.8).
                self.conn.execute("SET hnsw.iterative_scan = relaxed_order")
        except BaseException:
            self.conn.close()
            raise

    # --- setup ---------------------------------------------------------------
    def _check_model(self) -> None:
        from recall.team.schema import recorded_model

        model, dim = recorded_model(self.conn)
        if model is None or dim is None:
            raise PgStoreError(f"schema {self.schema!r} records no usable model (its meta table lacks a row or holds "
                               "one that is not recall's): an administrator runs `recall team init` to record it again")
        if model != self.model_id or dim != self.dim:
            # Scores of different models are not comparable, and dimensions differ.
            raise PgStoreError(
                f"schema {self.schema!r} holds vectors of {model} ({dim} dims), "
                f"not {self.model_id} ({self.dim}); use the same model as your team or another [team] schema"
            )

    def _iterative_scan_supported(self) -> bool:
        row = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        parts = tuple(int(p) for p in str(row[0]).split(".")[:2] if p.isdigit()) if row else ()
        return parts >= (0, 8)

    def drop_vector_index(self) -> None:
        """Before a bulk load: building HNSW once afterwards is far faster than per row."""
        with self._lock:
            self.conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")

    def create_vector_index(self, maintenance_work_mem: str = "1GB") -> None:
        with self._lock:
            # The graph must fit in maintenance_work_mem or the build slows down a lot.
            self.conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
            self.conn.execute(
                "CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks USING hnsw "
                f"(embedding vector_cosine_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            )
            self.conn.execute("ANALYZE chunks")

    # --- the contract --------------------------------------------------------
    def _source_row(self, source: SourceRef) -> tuple[int, str | None, bool]:
        """Create or update the source row: (id, project, team). The owner is never sent:
        the server fills it in (``session_user``) and its policies check it."""
        row = self.conn.execute(
            "INSERT INTO sources (kind, root, project, team) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (owner, kind, root) DO UPDATE"
            " SET project = COALESCE(EXCLUDED.project, sources.project), team = EXCLUDED.team"
            " RETURNING id, project, team",
            (source.kind, _root(source), team_project(source.project), source.team),
        ).fetchone()
        assert row is not None
        sid, project, team = int(row[0]), row[1], bool(row[2])
        # The chunks carry a copy of the project for join-free filtering: keep it equal
        # (owner and team follow the source by ON UPDATE CASCADE).
        self.conn.execute(
            "UPDATE chunks SET project = %s WHERE source_id = %s AND project IS DISTINCT FROM %s",
            (project, sid, project),
        )
        return sid, project, team

    def note_hashes(self, source: SourceRef) -> dict[str, str]:
        """What a push starts from: a copy an older recall pushed under the folder's unmasked
        name is deleted; the folder is shared or private as this push says, notes changed or not."""
        with self._lock:
            if source.root != _root(source):
                self._drop_clear_copy(source)
            self.conn.execute("UPDATE sources SET team = %s WHERE owner = session_user AND kind = %s AND root = %s"
                              " AND team <> %s", (source.team, source.kind, _root(source), source.team))  # CASCADE
            rows = self.conn.execute(
                "SELECT n.path, n.content_hash FROM notes n JOIN sources s ON s.id = n.source_id"
                " WHERE s.owner = session_user AND s.kind = %s AND s.root = %s",
                (source.kind, _root(source)),
            ).fetchall()
        return {path: h for path, h in rows}

    def _drop_clear_copy(self, source: SourceRef) -> None:
        """Delete the copy an older recall pushed under the folder's clear name, found here among
        this role's folders of that kind and deleted by id: the clear name as a query parameter
        reached the server's log (``log_statement``) on every push (an outside tester's, D1).
        No value this module sends holds an unmasked path or text."""
        ids = [sid for sid, root in self.conn.execute(
            "SELECT id, root FROM sources WHERE owner = session_user AND kind = %s", (source.kind,))
            if root == source.root]
        if ids:
            self.conn.execute("DELETE FROM sources WHERE id = ANY(%s)", (ids,))

    def sealed(self, fingerprint: str) -> str:
        """A keyed hash (HMAC-SHA256) of the fingerprint, the key in this user's RECALL_HOME
        (``team.key``, 0600): teammates read a note's row, and the bare hash of the unmasked
        file let them try every value a masked secret may take (a PIN took 5 ms)."""
        import hmac

        if self._key is None:  # asked once per note of a push: the file is read once
            self._key = _team_key()
        return "k1:" + hmac.new(self._key, fingerprint.encode("utf-8"), "sha256").hexdigest()[:40]

    def missing_vectors(self, hashes: Iterable[str]) -> set[str]:
        """Hashes with no vector at hand: not put since the last ``rebuild``, nor found in
        this role's own chunks (a teammate's row could carry a wrong vector: never reused)."""
        wanted = set(hashes) - set(self._vectors)
        if wanted:
            with self._lock:
                rows = self.conn.execute(
                    "SELECT DISTINCT ON (text_hash) text_hash, embedding FROM chunks"
                    " WHERE owner = session_user AND text_hash = ANY(%s)", (list(wanted),)).fetchall()
            for h, vector in rows:
                self._vectors[h] = vector
        return wanted - set(self._vectors)

    def put_vectors(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Held here until the notes that use them are upserted (chunks carry their vector)."""
        import numpy as np

        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(hashes), -1)
        if matrix.shape[1] != self.dim:
            raise PgStoreError(f"vectors have {matrix.shape[1]} dims; this store holds {self.dim}")
        self._vectors.update(zip(hashes, matrix, strict=True))

    def upsert_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[Chunk]) -> None:
        # The team search scores a note by its best chunk in SQL: a header chunk (which only
        # reorders notes locally, recall.ranking.search) is not pushed.
        note, masked = mask_note(note, [c for c in chunks if c.role != "header"])
        lacking = [c for c in masked if c.hash not in self._vectors]
        if lacking:
            # A chunk masking changed (its caller skipped recall.indexing.indexer) has no vector of its
            # masked text: refuse rather than send the vector of a secret.
            raise PgStoreError(f"{note.path}: {len(lacking)} chunk(s) without a vector of their masked text; "
                               "write notes through recall.indexing.indexer (recall team push)")
        import psycopg

        try:
            self._write_note(source, note, masked)
        except psycopg.DataError as exc:  # this note's text (a NUL, a bad encoding): it alone is refused
            raise NoteRejected(f"the team store refused it ({str(exc).splitlines()[0]})") from None

    def _write_note(self, source: SourceRef, note: NoteRecord, masked: Sequence[Chunk]) -> None:
        from psycopg.types.json import Jsonb

        with self._lock, self.conn.transaction():
            sid, project, team = self._source_row(source)
            row = self.conn.execute(
                "INSERT INTO notes (source_id, team, path, note_id, name, description, type, content_hash,"
                " mtime, extra) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (source_id, path) DO UPDATE SET note_id = EXCLUDED.note_id,"
                " name = EXCLUDED.name, description = EXCLUDED.description, type = EXCLUDED.type,"
                " content_hash = EXCLUDED.content_hash, mtime = EXCLUDED.mtime, extra = EXCLUDED.extra,"
                " pushed_at = now()"
                " RETURNING id",
                (sid, team, note.path, note.note_id, note.name, note.description,
                 note.type, self.sealed(note.content_hash), note.mtime, Jsonb(note.extra)),
            ).fetchone()
            assert row is not None
            pk = int(row[0])
            self.conn.execute("DELETE FROM chunks WHERE note_pk = %s", (pk,))
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chunks (note_pk, ord, text, text_hash, embedding, source_id, team,"
                    " kind, project) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(pk, i, c.text, c.hash, self._vectors[c.hash], sid, team, source.kind, project)
                     for i, c in enumerate(masked)],
                )

    def rebuild(self, keep_previous: bool = True) -> None:
        """Writes are searchable as soon as committed (the server keeps its HNSW index up to
        date): only the vectors held for them are let go."""
        self._vectors.clear()

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int:
        paths = list(paths)
        if not paths:
            return 0
        # The notes are found by the paths the server holds and deleted by id: a path as a
        # parameter is sent only masked, and a note an older recall kept under its clear path
        # is deleted all the same.
        wanted = set(paths)
        with self._lock:
            ids = [pk for pk, path in self.conn.execute(
                "SELECT n.id, n.path FROM notes n JOIN sources s ON s.id = n.source_id"
                " WHERE s.owner = session_user AND s.kind = %s AND s.root = %s", (source.kind, _root(source)))
                if path in wanted]
            if not ids:
                return 0
            return self.conn.execute("DELETE FROM notes WHERE id = ANY(%s)", (ids,)).rowcount

    def delete_source(self, source: SourceRef) -> int:
        """Remove one folder this role pushed, with its notes (a folder gone where it was
        pushed from, ``recall.team.pushed``); returns how many notes went with it."""
        with self._lock:
            where = "s.owner = session_user AND s.kind = %s AND s.root = %s"
            notes = self.conn.execute("SELECT count(*) FROM notes n JOIN sources s ON s.id = n.source_id WHERE "
                                      + where, (source.kind, _root(source))).fetchone()
            self.conn.execute("DELETE FROM sources s WHERE " + where, (source.kind, _root(source)))
        return int(notes[0]) if notes else 0

    def delete_own(self) -> int:
        """Remove everything this role pushed (``recall team forget``). The server's policy
        limits any DELETE to the role's rows; the filter keeps an administrator (who
        bypasses the policies) to their own rows too."""
        with self._lock:
            return self.conn.execute("DELETE FROM sources WHERE owner = session_user").rowcount

    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        """The ``k_notes`` notes in scope with the nearest chunks. The nearest chunks are fetched
        again, four times as many, while they hold fewer notes than that and more are left: one
        note's many chunks (a member can write any number by SQL) cannot hide the others."""
        where, params = scope_sql(scope)
        q = as_query_matrix(qvec)[0]
        limit = CHUNKS_PER_QUERY
        while True:
            with self._lock:
                found = self.conn.execute(
                    SEARCH_SQL.format(where=where, **CUTS), {**params, "q": q, "limit": limit, "k": k_notes}).fetchall()
            if len(found) >= k_notes or not found or found[0][-1] < limit:
                break
            limit *= 4
        hits = []
        for pk, kind, project, root, path, note_id, name, desc, type_, extra, owner, team, score, _ in found:
            if score is None or not math.isfinite(score):  # no vector, or a zero one a member wrote: no score
                continue
            # What the server returns, a member may have written with plain SQL (its policies let a
            # member update their own rows): capped and masked as recall's own write path does.
            note = {"pk": pk, "kind": rows.kind(kind), "project": rows.text(project, 4_096),
                    "root": rows.text(root, 4_096), "path": rows.text(path, 4_096),
                    "id": rows.text(note_id, MAX_NAME_CHARS), "name": rows.text(name, MAX_NAME_CHARS),
                    "description": rows.text(desc, MAX_DESCRIPTION_CHARS), "type": rows.text(type_, 40),
                    "extra": rows.extra(extra), "owner": rows.text(owner, 64), "team": team is True}
            hits.append(Hit(note, float(score)))
        return hits

    def counts(self) -> dict[str, int]:
        """Rows this role sees (its own and the team's)."""
        with self._lock:
            sources, own = self.conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE owner = session_user) FROM sources"
                " WHERE owner = session_user OR team").fetchone() or (0, 0)
            notes = self.conn.execute(
                "SELECT count(*) FROM notes WHERE owner = session_user OR team").fetchone()
            chunks = self.conn.execute(
                "SELECT count(*) FROM chunks WHERE owner = session_user OR team").fetchone()
        return {"sources": int(sources), "own_sources": int(own), "notes": int(notes[0] if notes else 0),
                "chunks": int(chunks[0] if chunks else 0)}

    def access(self) -> str:
        """What the server lets this role do here, in words (``recall team status``)."""
        member, reader = f"{self.schema}_member", f"{self.schema}_reader"
        with self._lock:
            su, bypass, is_member, is_reader = self.conn.execute(
                "SELECT rolsuper, rolbypassrls,"
                " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) AND pg_has_role(session_user, %s, 'USAGE'),"
                " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) AND pg_has_role(session_user, %s, 'USAGE')"
                " FROM pg_roles WHERE rolname = session_user", (member, member, reader, reader)).fetchone()
        if su or bypass:
            return "administrator (no row policies apply: you could read every row)"
        if is_member:
            return f"member ({member}: read team rows and your own, change your own)"
        if is_reader:
            return f"read-only ({reader}: read team rows)"
        return "owner of the tables (the row policies apply to you too)"

    def close(self) -> None:
        self.conn.close()
