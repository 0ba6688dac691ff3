"""The team store's schema on the server: tables, row-level security, migrations.

``recall.team.admin`` applies it (``recall team init``); ``recall.team.store`` refuses a schema
that lacks it (``check_ready``).

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

Backup and restore (the schema only; the ``vector`` extension must exist in the target)::

    pg_dump --format=custom --schema=recall --file=recall-team.dump "$RECALL_PG_URL"
    pg_restore --clean --if-exists --no-owner --dbname="$RECALL_PG_URL" recall-team.dump

Nothing here is irreplaceable: every member can push their notes again
(``recall team push``), so a lost server costs one push per teammate.
"""

from __future__ import annotations

from recall.team.connect import PgStoreError

# pgvector's build defaults (m=16, ef_construction=64). Raising them buys recall with
# build time; `python -m bench.bench_store` measures both against exact search.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64

# The tables recall writes, all under the policies below (meta and migrations are
# written by `recall team init` only; members get SELECT on them).
RLS_TABLES = ("sources", "notes", "chunks")
# Row-level security, the same on each of RLS_TABLES: a role reads its own rows and team
# rows, and writes only rows it owns. session_user is the login role (SET ROLE cannot
# change it). `recall team init` restores any of these found missing or changed.
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
        # schemas (0001 only) get here through `recall team init` (recall.team.admin).
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
    if not done >= {name for name, _ in MIGRATIONS}:
        return "partial"
    wrong, foreign = policy_drift(conn, schema)
    return "ready" if not wrong and not foreign and has_vectors(conn, schema) else "partial"


def _norm(expr: str | None) -> str:
    """A policy's expression as compared: no brackets, spaces or case (the server's deparsed
    ``((owner = SESSION_USER) OR team)`` is POLICIES' ``owner = session_user OR team``)."""
    return "".join(ch for ch in (expr or "").lower() if ch not in "() \t\n")


def _wanted(rule: str) -> tuple[str, str, str]:
    """(command, USING, WITH CHECK) of one of POLICIES, compared as ``_norm`` gives them."""
    import re

    m = re.fullmatch(r"FOR (\w+)(?: USING \((.*?)\))?(?: WITH CHECK \((.*)\))?", rule)
    assert m is not None, rule
    return m[1], _norm(m[2]), _norm(m[3])


def policy_drift(conn, schema: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(table, policy) pairs on recall's tables that differ from POLICIES: recall's own missing or
    changed, and permissive ones recall did not make (permissive policies add up: any one of
    them opens a table to whom it names). Restrictive ones only narrow access: left alone."""
    found = {(t, name): (permissive, list(roles), (cmd, _norm(qual), _norm(check)))
             for t, name, permissive, roles, cmd, qual, check in conn.execute(
                 "SELECT tablename, policyname, permissive, roles, cmd, qual, with_check FROM pg_policies"
                 " WHERE schemaname = %s AND tablename = ANY(%s)", (schema, list(RLS_TABLES))).fetchall()}
    wrong = [(t, f"{t}_{name}") for t in RLS_TABLES for name, rule in POLICIES.items()
             if found.pop((t, f"{t}_{name}"), None) != ("PERMISSIVE", ["public"], _wanted(rule))]
    return wrong, [key for key, (permissive, _, _) in found.items() if permissive == "PERMISSIVE"]


def has_vectors(conn, schema: str) -> bool:
    """Whether ``chunks`` has its ``embedding`` column (``DROP EXTENSION vector CASCADE`` drops it)."""
    return conn.execute("SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
                        " WHERE c.relnamespace = to_regnamespace(%s) AND c.relname = 'chunks'"
                        " AND a.attname = 'embedding' AND NOT a.attisdropped", (schema,)).fetchone() is not None


def newer_than_this(conn, schema: str) -> PgStoreError | None:
    """The error for a schema a newer recall migrated (a migration this one does not know): it
    was taken as "up to date", and a member's push failed on the newer recall's columns (D8)."""
    from psycopg import sql

    if conn.execute("SELECT to_regclass(%s)", (f'"{schema}".migrations',)).fetchone()[0] is None:
        return None
    done = {r[0] for r in conn.execute(sql.SQL("SELECT name FROM {}").format(sql.Identifier(schema, "migrations")))}
    unknown = sorted(done - {name for name, _ in MIGRATIONS})
    if not unknown:
        return None
    return PgStoreError(f"schema {schema!r} was migrated by a newer recall ({', '.join(unknown)}): upgrade recall "
                        "(pip install -U recall-memory) on this machine to use it")


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
        raise PgStoreError(f"schema {schema!r} needs an upgrade or a repair (a migration pending, row-level "
                           "security off on a table or its policies changed, or its vectors dropped): the database "
                           "administrator runs `recall team init`")
    if state == "no-access":
        who = conn.execute("SELECT session_user").fetchone()[0]
        raise PgStoreError(f"role {who!r} may not use schema {schema!r}: the database administrator runs "
                           f"`recall team add-member {who}`")
    if (newer := newer_than_this(conn, schema)) is not None:
        raise newer


def recorded_model(conn) -> tuple[str | None, int | None]:
    """The model and dimension ``meta`` records; None for a row missing or not readable as one
    (another version's schema, a hand edit)."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    model = meta.get("model_id")
    try:
        dim = int(str(meta.get("dim", "")).strip())
    except ValueError:
        dim = None
    return (model if isinstance(model, str) and model else None), dim


def column_dim(conn) -> int | None:
    """The dimension of ``chunks.embedding`` as the table declares it (the truth ``meta`` records)."""
    row = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass"
                       " AND attname = 'embedding' AND NOT attisdropped").fetchone()
    return int(row[0]) if row and row[0] and int(row[0]) > 0 else None


def restore_vectors(conn, schema: str, dim: int) -> list[str]:
    """``chunks.embedding`` back where ``DROP EXTENSION vector CASCADE`` took it (``recall team
    init``), its vectors lost with it: the notes are cleared, so that every member's next push
    sends theirs again (a push sends only notes the store lacks)."""
    if has_vectors(conn, schema):
        return []
    conn.execute(f"ALTER TABLE chunks ADD COLUMN embedding vector({int(dim)})")
    conn.execute("TRUNCATE notes CASCADE")  # chunks with no vector: nothing to search
    conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET NOT NULL")
    conn.execute(f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks USING hnsw (embedding "
                 f"vector_cosine_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})")
    return ["chunks.embedding: restored (dropped with the vector extension, and its vectors with it): "
            "the notes are cleared; each member runs `recall team push` to send theirs again"]


def every_row(conn, schema: str):
    """A context, inside the administrator's transaction, in which every row is theirs to read and
    change: the tables' owner is bound by the forced policies unless they bypass them (a superuser,
    BYPASSRLS), so FORCE is lifted (other sessions wait on the table lock) and put back after. Not in
    a ``finally``: a failed transaction's rollback puts it back, and statements sent in a failed
    transaction hid its first error under "current transaction is aborted" (an outside tester's, D5)."""
    import contextlib

    from psycopg import sql

    @contextlib.contextmanager
    def lifted():
        bypass = conn.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
                              ).fetchone()[0]
        tables = [sql.Identifier(schema, t) for t in ([] if bypass else RLS_TABLES)]
        for t in tables:
            conn.execute(sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(t))
        yield
        for t in tables:
            conn.execute(sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(t))
    return lifted()
