"""Setting up a team store on the server: ``recall team init`` and ``recall team add-member``.

Run by whoever administers the database: a superuser, or a role with CREATEROLE that may
create the schema (CREATE on the database) and owns what is in it. ``init`` does, in one
transaction (all or nothing), whatever is missing of:

* the ``vector`` extension (only a superuser may create it: pgvector is not a trusted
  extension);
* the schema and its tables (``recall.team.schema.MIGRATIONS``), with row-level security
  enabled and forced on every table recall writes; a schema made by a recall from before
  roles is detected and upgraded;
* two group roles, ``<schema>_member`` (read team rows and one's own, write one's own) and
  ``<schema>_reader`` (read only), and their grants.

It returns one line per thing done or found, and says why where it refuses.
``add-member`` creates a login role (or takes an existing one) and grants it one group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recall.team.connect import PgStoreError, connect
from recall.team.schema import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    MIGRATIONS,
    POLICIES,
    RLS_TABLES,
    newer_than_this,
    restore_vectors,
    schema_state,
)

ROLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.@-]{0,62}$")
ADMIN_HINT = ("connect as the database administrator (a superuser, or a role with CREATEROLE that "
              "owns this database) with --url or RECALL_PG_URL")


def group_roles(schema: str) -> tuple[str, str]:
    """(member group, read-only group) of a schema: ``recall_member``, ``recall_reader``."""
    return f"{schema}_member", f"{schema}_reader"


@dataclass
class _Me:
    name: str
    superuser: bool
    createrole: bool


def _me(conn) -> _Me:
    row = conn.execute("SELECT current_user, rolsuper, rolcreaterole FROM pg_roles"
                       " WHERE rolname = current_user").fetchone()
    return _Me(str(row[0]), bool(row[1]), bool(row[2]))


def _refuse(me: _Me, reason: str) -> PgStoreError:
    return PgStoreError(f"role {me.name!r} may not set up the team store: {reason}; {ADMIN_HINT}")


def sql_errors(me: _Me, conn, schema: str):
    """psycopg errors met half-way (the transaction is rolled back) as one clean line; a lock
    waited for ``LOCK_TIMEOUT_S`` names the sessions holding it and the repair."""
    import contextlib

    import psycopg

    from recall.team.connect import STATEMENT_TIMEOUT_S, lock_holders

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except psycopg.errors.InsufficientPrivilege as exc:
            raise _refuse(me, str(exc).strip().splitlines()[0]) from exc
        except psycopg.errors.LockNotAvailable as exc:
            raise PgStoreError(f"{lock_holders(conn, schema)} (nothing was changed)") from exc
        except psycopg.errors.QueryCanceled as exc:
            raise PgStoreError(f"the server ended a statement after {STATEMENT_TIMEOUT_S} s (nothing was changed): "
                               "it is overloaded, or another session holds a lock; run the command again") from exc
        except psycopg.Error as exc:
            raise PgStoreError(f"the server refused: {str(exc).strip().splitlines()[0]} (nothing was changed)") from exc
    return guard()


def init_store(url: str, schema: str, model_id: str, dim: int, adopt: dict[str, str] | None = None, *,
               wait_s: float) -> list[str]:
    """Create or upgrade the team store in ``schema``; the lines say what was done."""
    conn = connect(url, wait_s)
    try:
        me = _me(conn)
        _check_init_rights(conn, me, schema)
        with sql_errors(me, conn, schema), conn.transaction():
            return _init(conn, me, schema, model_id, int(dim), adopt or {})
    finally:
        conn.close()


def _check_init_rights(conn, me: _Me, schema: str) -> None:
    """Refuse before changing anything when this role cannot finish the job."""
    if me.superuser:
        return
    if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        raise _refuse(me, "the pgvector extension is not installed in this database and only a superuser "
                          "may install it (CREATE EXTENSION vector)")
    owner = conn.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s",
                         (schema,)).fetchone()
    if owner is None:
        if not conn.execute("SELECT has_database_privilege(current_database(), 'CREATE')").fetchone()[0]:
            raise _refuse(me, f"it may not create schema {schema!r} (no CREATE on this database)")
    else:
        others = [r[0] for r in conn.execute(
            "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class"
            " WHERE relnamespace = to_regnamespace(%s) AND relkind IN ('r', 'S', 'i')", (schema,))
            if r[0] != me.name]
        if owner[0] != me.name or others:
            raise _refuse(me, f"schema {schema!r} or its tables belong to "
                              f"{', '.join(sorted({owner[0], *others} - {me.name}))}")
    member, reader = group_roles(schema)
    present = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)",
                                          ([member, reader],))}
    if len(present) < 2 and not me.createrole:
        raise _refuse(me, f"it may not create the roles {member} and {reader} (no CREATEROLE)")


def _init(conn, me: _Me, schema: str, model_id: str, dim: int, adopt: dict[str, str]) -> list[str]:
    from psycopg import sql

    lines: list[str] = []
    s = sql.Identifier(schema)
    # Two administrators at once: one sets up, the other waits and then finds it done.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"recall-migrate:{schema}",))

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        lines.append("extension vector: present")
    else:
        conn.execute("CREATE EXTENSION vector")
        lines.append("extension vector: created")

    if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
        lines.append(f"schema {schema}: present")
    else:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(s))
        lines.append(f"schema {schema}: created")
    conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(s))
    lines += _migrate(conn, me, schema, dim)
    lines += restore_vectors(conn, schema, dim)
    lines += _restore_policies(conn, schema)
    lines += _record_model(conn, schema, model_id, dim)
    lines += _grant(conn, schema, new_schema=f"schema {schema}: created" in lines)
    lines += _legacy_owners(conn, schema, adopt)
    return lines


def _migrate(conn, me: _Me, schema: str, dim: int) -> list[str]:
    """The tables (``recall.team.schema.MIGRATIONS``), upgrading a schema from before roles."""
    lines: list[str] = []
    if (newer := newer_than_this(conn, schema)) is not None:
        raise newer
    state = schema_state(conn, schema)
    if state == "legacy":
        lines.append(f"schema {schema}: tables without row-level security found (made by recall before roles: "
                     "every row readable and changeable by anyone with the URL); upgrading them")
        lines += _take_ownership(conn, me, schema)
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)")
    if state == "legacy" and not conn.execute("SELECT 1 FROM migrations").fetchone():
        # The very first recall versions recorded nothing; their tables are 0001's.
        conn.execute("INSERT INTO migrations VALUES ('0001_initial', now())")
    applied = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    for name, ddl in MIGRATIONS:
        if name in applied:
            continue
        conn.execute(ddl.format(dim=dim, m=HNSW_M, efc=HNSW_EF_CONSTRUCTION))
        conn.execute("INSERT INTO migrations VALUES (%s, now())", (name,))
        lines.append(f"migration {name}: applied")
    if all(name in applied for name, _ in MIGRATIONS):
        lines.append("tables and row-level security policies: up to date")
    return lines


def _restore_policies(conn, schema: str) -> list[str]:
    """Row-level security on and every policy as recall makes it, also where someone switched
    it off, dropped or changed a policy, or added a permissive one, by hand since."""
    from psycopg import sql

    from recall.team.schema import policy_drift

    lines: list[str] = []
    # Only what is off: each ALTER TABLE waits for every open transaction on the table, and the
    # whole team's commands queue behind it (an outside tester's, D4).
    for t, on, forced in conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class WHERE relnamespace = "
            "to_regnamespace(%s) AND relname = ANY(%s)", (schema, list(RLS_TABLES))).fetchall():
        for what, done in (("ENABLE", on), ("FORCE", forced)):
            if not done:
                conn.execute(sql.SQL("ALTER TABLE {} {} ROW LEVEL SECURITY").format(sql.Identifier(t), sql.SQL(what)))
    wrong, foreign = policy_drift(conn, schema)
    for t, name in foreign:
        conn.execute(sql.SQL("DROP POLICY {} ON {}").format(sql.Identifier(name), sql.Identifier(t)))
        lines.append(f"policy {name} on {t}: dropped (a permissive policy recall did not make opens the "
                     "table to whom it names; make it RESTRICTIVE to narrow access)")
    present = {r[0] for r in conn.execute("SELECT policyname FROM pg_policies WHERE schemaname = %s", (schema,))}
    for t, name in wrong:
        conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(sql.Identifier(name), sql.Identifier(t)))
        rule = POLICIES[name.removeprefix(f"{t}_")]
        conn.execute(sql.SQL("CREATE POLICY {} ON {} " + rule).format(sql.Identifier(name), sql.Identifier(t)))
        lines.append(f"policy {name}: restored (it was {'changed' if name in present else 'missing'})")
    return lines


def _record_model(conn, schema: str, model_id: str, dim: int) -> list[str]:
    """One embedding model per schema: recorded once, then checked."""
    from recall.team.schema import column_dim, recorded_model

    conn.execute("INSERT INTO meta VALUES ('model_id', %s), ('dim', %s) ON CONFLICT (key) DO NOTHING",
                 (model_id, str(dim)))
    lines = []
    recorded, recorded_dim = recorded_model(conn)
    if (recorded is None or recorded_dim is None) and column_dim(conn) == dim:
        # a row lost or not recall's (a hand edit): the table's own column says which dimension
        # its vectors have; the model's name is taken on the administrator's word
        conn.execute("UPDATE meta SET value = %s WHERE key = 'model_id'", (recorded or model_id,))
        conn.execute("UPDATE meta SET value = %s WHERE key = 'dim'", (str(dim),))
        recorded, recorded_dim = recorded_model(conn)
        lines.append("meta: recorded again (a row was missing or unreadable)")
    if recorded != model_id or recorded_dim != dim:
        raise PgStoreError(f"schema {schema!r} holds vectors of {recorded} ({recorded_dim} dims), "
                           f"not {model_id} ({dim}): run init with the team's model, or use another [team] schema")
    return [*lines, f"model: {model_id} ({dim} dims)"]


def _grant(conn, schema: str, new_schema: bool) -> list[str]:
    """The two group roles and what each may do. Roles are the server's, not one database's:
    group roles that already exist for a schema made just now serve a team of that name in
    another database, whose members get this one too (said, with the way to keep them apart)."""
    from psycopg import sql

    lines: list[str] = []
    s = sql.Identifier(schema)
    member, reader = group_roles(schema)
    for role, what in ((member, "reads team rows and its own, writes its own"), (reader, "reads team rows only")):
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            lines.append(f"role {role}: present ({what})")
            others = [r[0] for r in conn.execute(
                "SELECT pg_get_userbyid(member) FROM pg_auth_members WHERE roleid = to_regrole(%s)", (role,))]
            if new_schema and others:
                lines.append(f"warning: {role} already has members ({', '.join(sorted(others))}), from an earlier "
                             f"schema {schema} of this database or a team in another database of this server (roles "
                             "are the server's): they may use this schema too. If they are not this team, revoke "
                             "each with `recall team remove-member NAME`, or give each team its own [team] schema")
        else:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
            lines.append(f"role {role}: created ({what})")
    m, r = sql.Identifier(member), sql.Identifier(reader)
    rls = sql.SQL(", ").join(sql.Identifier(schema, t) for t in RLS_TABLES)
    admin_only = sql.SQL(", ").join(sql.Identifier(schema, t) for t in ("meta", "migrations"))
    for stmt in (
        sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM PUBLIC").format(s),
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}, {}").format(s, m, r),
        sql.SQL("GRANT SELECT ON {} TO {}, {}").format(admin_only, m, r),
        sql.SQL("GRANT SELECT ON {} TO {}").format(rls, r),
        # No TRUNCATE, REFERENCES or TRIGGER: TRUNCATE would skip the row policies.
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(rls, m),
        sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(s, m),
    ):
        conn.execute(stmt)
    lines.append(f"grants: {member} may read and write (own rows), {reader} may read; "
                 "row-level security on " + ", ".join(RLS_TABLES))
    return lines


def _take_ownership(conn, me: _Me, schema: str) -> list[str]:
    """An old schema's tables belong to whichever role first connected: often one user the
    whole team shared. An owner may switch the policies off, so the administrator takes
    them (only a superuser gets here with tables of another owner)."""
    from psycopg import sql

    rows = conn.execute(
        "SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner) FROM pg_class c"
        " WHERE c.relnamespace = to_regnamespace(%s) AND c.relkind IN ('r', 'S')"
        " AND pg_get_userbyid(c.relowner) <> current_user", (schema,)).fetchall()
    previous = sorted({r[2] for r in rows})
    for name, kind, _ in rows:
        if kind == "S" and conn.execute("SELECT 1 FROM pg_depend d JOIN pg_class c ON c.oid = d.objid"
                                        " WHERE c.relname = %s AND c.relnamespace = to_regnamespace(%s)"
                                        " AND d.deptype = 'a'", (name, schema)).fetchone():
            continue  # a serial's sequence follows its table
        what = "SEQUENCE" if kind == "S" else "TABLE"
        conn.execute(sql.SQL("ALTER {} {} OWNER TO CURRENT_USER").format(sql.SQL(what),
                                                                         sql.Identifier(schema, name)))
    owner = conn.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s",
                         (schema,)).fetchone()[0]
    if owner != me.name:
        conn.execute(sql.SQL("ALTER SCHEMA {} OWNER TO CURRENT_USER").format(sql.Identifier(schema)))
        previous = sorted({*previous, owner})
    if not previous:
        return []
    return [f"ownership: schema {schema} and its tables now belong to {me.name} (were {', '.join(previous)}); "
            "if teammates shared that login, give each their own role (recall team add-member NAME) and change "
            "its password or ALTER ROLE ... NOLOGIN"]


def _legacy_owners(conn, schema: str, adopt: dict[str, str]) -> list[str]:
    """Rows pushed before roles carry a ``user@host`` label as owner, and a role dropped since
    leaves its name: no role matches either, so no member can see their private rows or change
    any of them. ``adopt`` hands a label's rows to a role (notes and chunks follow by ON UPDATE CASCADE)."""
    from psycopg import sql

    from recall.team.schema import every_row

    lines = []
    src = sql.Identifier(schema, "sources")
    with every_row(conn, schema):
        for label, role in adopt.items():
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                raise PgStoreError(f"--adopt {label}={role}: there is no role {role!r}; "
                                   f"create it first: recall team add-member {role}")
            _adopt_check(conn, src, label, role)
            n = conn.execute(sql.SQL("UPDATE {} SET owner = %s WHERE owner = %s").format(src),
                             (role, label)).rowcount
            lines.append(f"adopted: {n} source(s) of {label!r} now belong to role {role}")
        rows = conn.execute(sql.SQL(
            "SELECT owner, count(*), count(*) FILTER (WHERE NOT team) FROM {} "
            "WHERE owner NOT IN (SELECT rolname FROM pg_roles) GROUP BY owner ORDER BY owner").format(src)).fetchall()
    for label, n, private in rows:
        lines.append(f"owner {label!r} is no role: {n} source(s) ({private} private) pushed before roles, or by a "
                     f"role dropped since; no member can change them and only the administrator reads the private "
                     f"ones: give them to a role with `recall team init --adopt '{label}=ROLE'`, or delete them "
                     f"with `recall team remove-member '{label}'`")
    return lines


def _adopt_check(conn, src, label: str, role: str) -> None:
    """Refuse an adoption that would give ``role`` a folder twice (it pushed it again since): the
    unique key refused it half-way, in words that named neither the folder nor the repair."""
    from psycopg import sql

    clash = conn.execute(sql.SQL("SELECT a.kind, a.root FROM {} a JOIN {} b ON b.kind = a.kind AND b.root = a.root"
                                 " WHERE a.owner = %s AND b.owner = %s ORDER BY a.root").format(src, src),
                         (label, role)).fetchall()
    if clash:
        kind, root = clash[0]
        more = f" and {len(clash) - 1} more" if len(clash) > 1 else ""
        raise PgStoreError(f"--adopt {label}={role}: {role} pushed {root} ({kind}){more} again since, so it holds "
                           f"them twice; nothing was changed. Keep {role}'s copy and delete {label!r}'s: "
                           f"`recall team remove-member '{label}'`, then init again without this --adopt")
