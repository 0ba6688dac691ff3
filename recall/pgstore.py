"""A team store: PostgreSQL + pgvector behind the ``recall.backends.NoteIndex`` contract.

Each member pushes their notes (embedded locally) and searches their own rows plus the
rows teammates pushed as ``team`` (shared) ones. What reaches the server:

* note metadata and chunk texts, secrets masked (``recall.masking.mask_secrets``; the
  chunks come from ``recall.backends.prepare_note``, masked before embedding, and are
  masked again here on write);
* one vector per chunk, and at search time the query's *vector* only: prompts never
  leave the machine.

Who may read and change what is the **server's** business, not this client's: every
member connects as their own PostgreSQL role, ``owner`` is that role (column default
``session_user``, never sent by the client), and row-level security policies (ENABLE +
FORCE) let a role read team rows and its own rows and write only its own, whatever SQL
it sends. ``recall.pgadmin`` sets this up (``recall team init``, ``recall team
add-member``); this module only connects and refuses a schema that lacks it.

Configuration: ``RECALL_PG_URL`` (env) or ``[team] url = "postgresql://role@host/db?sslmode=verify-full"``
in ``$RECALL_HOME/config.toml``; the env var wins. Keep the password out of the URL and
in ``~/.pgpass`` (libpq reads it). ``[team] schema`` names the schema (default ``recall``).

Schema (``<schema>.*``; one embedding model per schema, recorded in ``meta``)::

    sources (id, owner, kind, root, project, team)      UNIQUE (owner, kind, root)
    notes   (id, source_id, owner, team -> sources (id, owner, team), path, note_id, name,
             description, type, content_hash, mtime, extra jsonb, pushed_at)
                                                        UNIQUE (source_id, path)
    chunks  (note_pk, owner, team -> notes (id, owner, team), ord, text, text_hash,
             embedding vector(dim), source_id, kind, project)
    chunks_embedding_hnsw: USING hnsw (embedding vector_cosine_ops)

``owner`` and ``team`` are copied down to notes and chunks so that every policy and the
search filter need no join; the composite foreign keys (``ON UPDATE CASCADE``) keep the
copies equal to the source's and tie every note and chunk to a source of the same owner.

A note is replaced in one transaction (upsert the note row, delete its chunks, insert
the new ones), so a reader sees the old note or the new one, never both or neither.

Backup and restore (the schema only; the ``vector`` extension must exist in the target)::

    pg_dump --format=custom --schema=recall --file=recall-team.dump "$RECALL_PG_URL"
    pg_restore --clean --if-exists --no-owner --dbname="$RECALL_PG_URL" recall-team.dump

Nothing here is irreplaceable: every member can push their notes again
(``recall team push``), so a lost server costs one push per teammate.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .backends import NoteRecord, SourceRef, as_query_matrix
from .indexer import text_hash
from .masking import mask_secrets
from .search import CHUNKS_PER_QUERY, SHARED_KINDS, Scope
from .selector import Hit

if TYPE_CHECKING:
    from .settings import Settings

URL_ENV = "RECALL_PG_URL"
DEFAULT_SCHEMA = "recall"
# HNSW candidate list per search. A search fetches CHUNKS_PER_QUERY chunks before
# grouping them by note; pgvector returns at most ef_search rows per index pass, so it
# must be at least that many (pgvector's default of 40 would cap the ranking at 40 chunks).
EF_SEARCH = max(40, CHUNKS_PER_QUERY)
# pgvector's build defaults (m=16, ef_construction=64). Raising them buys recall with
# build time; `python -m bench.bench_store` measures both against exact search.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64

# The tables recall writes, all under the policies below (meta and migrations are
# written by `recall team init` only; members get SELECT on them).
RLS_TABLES = ("sources", "notes", "chunks")
# Row-level security, the same on each of RLS_TABLES: a role reads its own rows and team
# rows, and writes only rows it owns. session_user is the login role (SET ROLE cannot
# change it). `recall team init` restores any of these found missing.
POLICIES = {
    "read": "FOR SELECT USING (owner = session_user OR team)",
    "insert": "FOR INSERT WITH CHECK (owner = session_user)",
    "update": "FOR UPDATE USING (owner = session_user) WITH CHECK (owner = session_user)",
    "delete": "FOR DELETE USING (owner = session_user)",
}

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sources (
            id BIGSERIAL PRIMARY KEY,
            owner TEXT NOT NULL,             -- the pushing role (0002; a user@host label before)
            kind TEXT NOT NULL,              -- memory | rule | dir | conversation
            root TEXT NOT NULL,
            project TEXT,
            team BOOLEAN NOT NULL DEFAULT FALSE,  -- visible to every machine
            UNIQUE (owner, kind, root)
        );
        CREATE TABLE notes (
            id BIGSERIAL PRIMARY KEY,
            source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            note_id TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT NOT NULL,
            type TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            mtime DOUBLE PRECISION NOT NULL,
            extra JSONB NOT NULL DEFAULT '{{}}',
            pushed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            UNIQUE (source_id, path)
        );
        CREATE TABLE chunks (
            note_pk BIGINT NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            text TEXT NOT NULL,              -- secrets masked
            text_hash TEXT NOT NULL,
            embedding vector({dim}) NOT NULL,
            source_id BIGINT NOT NULL,
            owner TEXT NOT NULL,
            team BOOLEAN NOT NULL,
            kind TEXT NOT NULL,
            project TEXT,
            PRIMARY KEY (note_pk, ord)
        );
        CREATE INDEX chunks_source ON chunks (source_id);
        CREATE INDEX chunks_owner ON chunks (owner);
        CREATE INDEX chunks_project ON chunks (project);
        CREATE INDEX chunks_embedding_hnsw ON chunks
            USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {efc});
        """,
    ),
    (
        # Identity and row-level security. The owner is the connecting role, set by the
        # server; a role reads its own rows and team rows, and writes only its own. Old
        # schemas (0001 only) get here through `recall team init` (recall.pgadmin).
        "0002_row_security",
        """
        ALTER TABLE sources ALTER COLUMN owner SET DEFAULT session_user;
        ALTER TABLE sources ADD CONSTRAINT sources_id_owner_team UNIQUE (id, owner, team);
        ALTER TABLE notes ADD COLUMN owner TEXT, ADD COLUMN team BOOLEAN;
        UPDATE notes n SET owner = s.owner, team = s.team FROM sources s WHERE s.id = n.source_id;
        ALTER TABLE notes ALTER COLUMN owner SET NOT NULL, ALTER COLUMN owner SET DEFAULT session_user,
            ALTER COLUMN team SET NOT NULL, ALTER COLUMN team SET DEFAULT FALSE;
        ALTER TABLE notes ADD CONSTRAINT notes_id_owner_team UNIQUE (id, owner, team);
        ALTER TABLE notes ADD CONSTRAINT notes_source_owner FOREIGN KEY (source_id, owner, team)
            REFERENCES sources (id, owner, team) ON DELETE CASCADE ON UPDATE CASCADE;
        UPDATE chunks c SET owner = n.owner, team = n.team FROM notes n
            WHERE n.id = c.note_pk AND (c.owner <> n.owner OR c.team <> n.team);
        ALTER TABLE chunks ALTER COLUMN owner SET DEFAULT session_user,
            ALTER COLUMN team SET DEFAULT FALSE;
        ALTER TABLE chunks ADD CONSTRAINT chunks_note_owner FOREIGN KEY (note_pk, owner, team)
            REFERENCES notes (id, owner, team) ON DELETE CASCADE ON UPDATE CASCADE;
        CREATE INDEX notes_owner ON notes (owner);
        """ + "".join(f"""
        ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE {t} FORCE ROW LEVEL SECURITY;
        """ + "".join(f"CREATE POLICY {t}_{name} ON {t} {rule};\n" for name, rule in POLICIES.items())
            for t in RLS_TABLES),
    ),
]
SECURE_SSLMODES = {"verify-full", "verify-ca"}


class PgStoreError(RuntimeError):
    """A team store that cannot be used, with a message saying what to do."""


def team_url(config: Settings | None = None) -> str | None:
    """``RECALL_PG_URL``, else ``[team] url`` of the config, else None."""
    url = os.environ.get(URL_ENV)
    if url:
        return url
    return (config.team.url if config is not None else None) or None


def team_schema(config: Settings | None = None) -> str:
    return (config.team.schema if config is not None else None) or DEFAULT_SCHEMA


def transport_warning(url: str) -> str | None:
    """A warning line when ``url`` reaches a host over the network without verified TLS.

    libpq's default ``sslmode=prefer`` falls back to clear text and checks no certificate;
    ``verify-full`` (the documented default for a real server) refuses both. Unix sockets
    and loopback addresses need no TLS.
    """
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(url)
    except Exception:  # no psycopg, or a malformed URL: connecting says which, in one line
        return None
    hosts = str(params.get("host") or os.environ.get("PGHOST") or "").split(",")
    remote = [h for h in hosts if h and not h.startswith("/") and not _loopback(h)]
    if not remote:
        return None
    mode = str(params.get("sslmode") or os.environ.get("PGSSLMODE") or "prefer")
    if mode in SECURE_SSLMODES:
        return None
    what = ("TLS without checking the server's certificate" if mode == "require"
            else f"no guaranteed TLS (sslmode={mode})")
    return (f"warning: the team store at {', '.join(remote)} is reached with {what}; "
            "add sslmode=verify-full to the URL (docs/team-store.md, Transport)")


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def legacy_owner_label(config: Settings | None = None) -> str | None:
    """``RECALL_OWNER`` or ``[team] owner`` if set: settings that named the owner before the
    server did. They are ignored now; the CLI says so."""
    value = os.environ.get("RECALL_OWNER") or (config.team.owner if config is not None else None)
    return str(value) if value else None


def connect(url: str, connect_timeout: int = 10):
    """An autocommit psycopg connection, or PgStoreError with the server's reason."""
    try:
        import pgvector.psycopg  # noqa: F401  (the search needs it; fail here, with the hint)
        import psycopg
    except ImportError as exc:
        raise PgStoreError("the team store needs: pip install 'recall-memory[pg]'") from exc
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
    except psycopg.Error as exc:
        raise PgStoreError(f"cannot connect to the team store: {str(exc).strip()}") from exc


def schema_state(conn, schema: str) -> str:
    """``missing`` (no recall tables), ``legacy`` (tables without row-level security:
    recall before roles), ``partial`` (some migration pending) or ``ready``. The first two
    come from the catalog, which every role may read, so a member is told either way."""
    from psycopg import sql

    guarded = dict(conn.execute(
        "SELECT relname, relrowsecurity AND relforcerowsecurity FROM pg_class WHERE relkind = 'r'"
        " AND relnamespace = to_regnamespace(%s) AND relname = ANY(%s)", (schema, list(RLS_TABLES))).fetchall())
    if "sources" not in guarded:
        return "missing"
    if not any(guarded.values()):
        return "legacy"
    if len(guarded) < len(RLS_TABLES) or not all(guarded.values()):
        return "partial"  # row-level security switched off by hand on some table
    done = {r[0] for r in conn.execute(sql.SQL("SELECT name FROM {}").format(sql.Identifier(schema, "migrations")))}
    return "ready" if done >= {name for name, _ in MIGRATIONS} else "partial"


def check_ready(conn, schema: str) -> None:
    """PgStoreError unless ``schema`` is set up with row-level security and usable by this role."""
    import psycopg

    try:
        state = schema_state(conn, schema)
    except psycopg.errors.InsufficientPrivilege:
        state = "no-access"
    if state == "missing":
        raise PgStoreError(f"schema {schema!r} is not set up on this server: the database administrator "
                           "runs `recall team init` (docs/team-store.md)")
    if state == "legacy":
        raise PgStoreError(f"schema {schema!r} was made by an older recall without row-level security "
                           "(anyone with the URL can read and change every row): the database administrator "
                           "runs `recall team init` to upgrade it")
    if state == "partial":
        raise PgStoreError(f"schema {schema!r} needs an upgrade or a repair (a migration pending, or row-level "
                           "security off on a table): the database administrator runs `recall team init`")
    if state == "no-access":
        who = conn.execute("SELECT session_user").fetchone()[0]
        raise PgStoreError(f"role {who!r} may not use schema {schema!r}: the database administrator runs "
                           f"`recall team add-member {who}`")


def _scope_sql(scope: Scope | None) -> tuple[str, dict[str, Any]]:
    """The SQL twin of ``Scope.admits`` over the chunks' copied kind/project columns."""
    if scope is None or scope.everything:
        return "TRUE", {}
    if scope.repo is not None:
        wanted = "".join(c if c.isalnum() else "-" for c in scope.repo)  # as search._repo_matches
        # ``wanted`` holds only alphanumerics and '-', so it needs no LIKE escaping.
        return ("kind IN ('memory', 'conversation') AND (project = %(repo)s OR project LIKE %(repo_tail)s)",
                {"repo": wanted, "repo_tail": "%-" + wanted})
    shared = "kind = ANY(%(shared_kinds)s)" if scope.shared else "FALSE"
    own = ("(kind <> ALL(%(shared_kinds)s) AND project = %(project)s)"
           if scope.project is not None else "FALSE")
    return f"({shared} OR {own})", {"shared_kinds": list(SHARED_KINDS), "project": scope.project}


_SEARCH_SQL = """
WITH nearest AS MATERIALIZED (
    SELECT note_pk, embedding <=> %(q)s AS distance
    FROM chunks
    WHERE (owner = session_user OR team) AND {where}
    ORDER BY distance
    LIMIT %(limit)s
)
SELECT n.id, s.kind, s.project, s.root, n.path, n.note_id, n.name, n.description, n.type, n.extra,
       s.owner, s.team, 1 - min(t.distance) AS score
FROM nearest t JOIN notes n ON n.id = t.note_pk JOIN sources s ON s.id = n.source_id
GROUP BY n.id, s.id
ORDER BY score DESC, n.id
LIMIT %(k)s
"""


class PgIndex:
    """``NoteIndex`` over one schema of a PostgreSQL database with pgvector.

    The schema must have been set up by ``recall team init`` (``recall.pgadmin``); this
    class creates nothing. ``owner`` is the role the server knows this connection as.
    One connection, used under a lock (psycopg connections are not meant for concurrent
    transactions); open one ``PgIndex`` per thread for parallel work.
    """

    def __init__(self, url: str, model_id: str, dim: int, *, schema: str = DEFAULT_SCHEMA,
                 connect_timeout: int = 10) -> None:
        self.model_id = model_id
        self.dim = int(dim)
        self.schema = schema
        self._lock = threading.Lock()
        self.conn = connect(url, connect_timeout)
        try:
            self.owner = str(self.conn.execute("SELECT session_user").fetchone()[0])  # type: ignore[index]
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
        meta: dict[str, str] = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("model_id") != self.model_id or int(meta.get("dim", 0)) != self.dim:
            # Scores of different models are not comparable, and dimensions differ.
            raise PgStoreError(
                f"schema {self.schema!r} holds vectors of {meta.get('model_id')} ({meta.get('dim')} dims), "
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
            (source.kind, source.root, source.project, source.team),
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
        with self._lock:
            rows = self.conn.execute(
                "SELECT n.path, n.content_hash FROM notes n JOIN sources s ON s.id = n.source_id"
                " WHERE s.owner = session_user AND s.kind = %s AND s.root = %s",
                (source.kind, source.root),
            ).fetchall()
        return {path: h for path, h in rows}

    def replace_note(self, source: SourceRef, note: NoteRecord, chunks: Sequence[str], vectors) -> None:
        import numpy as np
        from psycopg.types.json import Jsonb

        texts = [mask_secrets(t) for t in chunks]
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        if matrix.shape[1] != self.dim:
            raise PgStoreError(f"vectors have {matrix.shape[1]} dims; this store holds {self.dim}")
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
                (sid, team, note.path, note.note_id, mask_secrets(note.name), mask_secrets(note.description),
                 note.type, note.content_hash, note.mtime, Jsonb(note.extra or {})),
            ).fetchone()
            assert row is not None
            pk = int(row[0])
            self.conn.execute("DELETE FROM chunks WHERE note_pk = %s", (pk,))
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chunks (note_pk, ord, text, text_hash, embedding, source_id, team,"
                    " kind, project) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(pk, i, t, text_hash(t), matrix[i], sid, team, source.kind, project)
                     for i, t in enumerate(texts)],
                )

    def delete_notes(self, source: SourceRef, paths: Iterable[str]) -> int:
        paths = list(paths)
        if not paths:
            return 0
        with self._lock:
            cur = self.conn.execute(
                "DELETE FROM notes n USING sources s WHERE n.source_id = s.id AND s.owner = session_user"
                " AND s.kind = %s AND s.root = %s AND n.path = ANY(%s)",
                (source.kind, source.root, paths),
            )
        return cur.rowcount

    def delete_own(self) -> int:
        """Remove everything this role pushed (``recall team forget``). The server's policy
        limits any DELETE to the role's rows; the filter keeps an administrator (who
        bypasses the policies) to their own rows too."""
        with self._lock:
            return self.conn.execute("DELETE FROM sources WHERE owner = session_user").rowcount

    def search(self, qvec, scope: Scope | None = None, k_notes: int = 20) -> list[Hit]:
        import json

        where, params = _scope_sql(scope)
        q = as_query_matrix(qvec)[0]
        with self._lock:
            rows = self.conn.execute(
                _SEARCH_SQL.format(where=where),
                {**params, "q": q, "limit": CHUNKS_PER_QUERY, "k": k_notes},
            ).fetchall()
        hits = []
        for pk, kind, project, root, path, note_id, name, desc, type_, extra, owner, team, score in rows:
            note = {"pk": pk, "kind": kind, "project": project, "root": root, "path": path, "id": note_id,
                    "name": name, "description": desc, "type": type_,
                    "extra": extra if isinstance(extra, dict) else json.loads(extra or "{}"),
                    "owner": owner, "team": team}
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
