"""Letting teammates in and out: ``recall team add-member`` and ``recall team remove-member``.

A member is a login role the server knows by name, and every row it pushes carries that name
(``owner``, the column default ``session_user``): a name, not a role's lifetime. So removing a
member revokes the schema's groups and deletes the rows of that name (or, asked, keeps them), and
a role created under a name that still owns rows (the former role dropped) is refused unless
``--keep-rows`` says it is the same person: a new ``dave`` read the former ``dave``'s private
notes, and a revoked member's team rows stayed in every teammate's search (an outside tester's,
D3). Run by the database administrator (a superuser, or a role with CREATEROLE that owns the
schema), like ``recall.team.admin``.
"""

from __future__ import annotations

from recall.team.admin import ADMIN_HINT, ROLE_NAME, _me, group_roles, sql_errors
from recall.team.connect import PgStoreError, connect
from recall.team.schema import every_row, schema_state


def _session(url: str, schema: str, name: str, wait_s: float):
    """The administrator's connection, once ``name`` and the schema are fit for it."""
    if not ROLE_NAME.match(name) or name.startswith("pg_"):
        raise PgStoreError(
            f"{name!r} is not a usable role name: letters, digits, _ . @ - (63 at most), "
            "not starting with a digit or pg_"
        )
    conn = connect(url, wait_s)
    try:
        me = _me(conn)
        groups = {
            r[0]
            for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (list(group_roles(schema)),))
        }
        if schema_state(conn, schema) != "ready" or len(groups) < 2:
            raise PgStoreError(f"schema {schema!r} is not set up for members yet: run `recall team init` first")
        if not (me.superuser or me.createrole):
            raise PgStoreError(f"role {me.name!r} may not create or grant roles (no CREATEROLE); {ADMIN_HINT}")
    except BaseException:
        conn.close()
        raise
    return conn, me


def _groups_of(conn, name: str) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT g.rolname FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid"
            " JOIN pg_roles u ON u.oid = a.member WHERE u.rolname = %s",
            (name,),
        )
    }


def _owned(conn, schema: str, name: str) -> tuple[int, int]:
    """(sources, private ones) of owner ``name``: every row, whatever the policies show the administrator."""
    from psycopg import sql

    with every_row(conn, schema):
        n, private = conn.execute(
            sql.SQL("SELECT count(*), count(*) FILTER (WHERE NOT team) FROM {} WHERE owner = %s").format(
                sql.Identifier(schema, "sources")
            ),
            (name,),
        ).fetchone()
    return int(n), int(private)


def add_member(
    url: str,
    schema: str,
    name: str,
    *,
    read_only: bool = False,
    password: str | None = None,
    keep_rows: bool = False,
    wait_s: float,
) -> list[str]:
    """Create login role ``name`` (or take the existing one), set its password if given
    (sent as a SCRAM hash, never in clear), and make it a member or a reader of ``schema``.
    A role to be created under a name that owns rows (its former holder's role dropped) is refused
    unless ``keep_rows`` says it is the same person."""
    conn, me = _session(url, schema, name, wait_s)
    try:
        with sql_errors(me, conn, schema), conn.transaction():
            lines = _let_in(conn, schema, name, read_only, password, keep_rows)
        lines.append(_connect_hint(conn, name))
        return lines
    finally:
        conn.close()


def _let_in(conn, schema: str, name: str, read_only: bool, password: str | None, keep_rows: bool) -> list[str]:
    from psycopg import sql

    member, reader = group_roles(schema)
    lines: list[str] = []
    ident = sql.Identifier(name)
    row = conn.execute(
        "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", (name,)
    ).fetchone()
    if row is None:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
        lines.append(f"role {name}: created (login)")
    else:
        if row[0] or row[1]:
            # its password and grants left as they are: a slip of the name must not lock an
            # administrator's other clients out, nor make a member of a role no policy holds
            raise PgStoreError(
                f"{name} is a superuser or has BYPASSRLS: not made a member, nothing "
                "changed (the server applies no row policies to it); a member is an "
                "ordinary login role: choose another name"
            )
        lines.append(f"role {name}: present")
        if not row[2]:
            lines.append(f"note: {name} cannot log in (NOLOGIN); ALTER ROLE {name} LOGIN if it should")
    inside = _groups_of(conn, name)
    if row is None and not keep_rows:
        n, private = _owned(conn, schema, name)
        if n:
            raise PgStoreError(
                f"{name} would inherit {n} source(s) ({private} private) a former {name} pushed "
                f"(a removed member's, or a dropped role's); nothing changed: delete them first "
                f"with `recall team remove-member {name}`, or, if {name} is that same person, add "
                "--keep-rows"
            )
    if password is not None:
        hashed = conn.pgconn.encrypt_password(password.encode(), name.encode(), b"scram-sha-256")
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, sql.Literal(hashed.decode())))
        lines.append(f"role {name}: password set (sent to the server as a SCRAM hash)")
    want, other = (reader, member) if read_only else (member, reader)
    if want in inside:
        lines.append(f"role {name}: already in {want}")
    else:
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(want), ident))
        lines.append(f"role {name}: granted {want} ({'read only' if read_only else 'read and write own rows'})")
    if other in inside:
        conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(other), ident))
        lines.append(f"role {name}: revoked {other}")
    return lines


def remove_member(url: str, schema: str, name: str, *, keep_rows: bool = False, wait_s: float) -> list[str]:
    """Revoke ``name``'s groups of ``schema`` and delete every row of that owner (or keep them)."""
    from psycopg import sql

    conn, me = _session(url, schema, name, wait_s)
    try:
        lines: list[str] = []
        with sql_errors(me, conn, schema), conn.transaction():
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is None:
                lines.append(f"role {name}: no such role (dropped, or an owner label from before roles)")
            else:
                inside = sorted(_groups_of(conn, name) & set(group_roles(schema)))
                for group in inside:
                    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(group), sql.Identifier(name)))
                    lines.append(f"role {name}: revoked {group}")
                if not inside:
                    lines.append(f"role {name}: in neither {' nor '.join(group_roles(schema))} already")
                lines.append(
                    f"role {name} may still log in to the server: DROP ROLE {name} (or ALTER ROLE "
                    f"{name} NOLOGIN) if it serves nothing else"
                )
            n, private = _owned(conn, schema, name)
            if keep_rows:
                lines.append(
                    f"kept {n} source(s) ({private} private) of {name}, their team ones still in every "
                    f"search; `recall team remove-member {name}` deletes them later; a role made again "
                    f"under this name takes them only with `add-member {name} --keep-rows`"
                )
            elif n:
                with every_row(conn, schema):  # notes and chunks go with their source (ON DELETE CASCADE)
                    conn.execute(
                        sql.SQL("DELETE FROM {} WHERE owner = %s").format(sql.Identifier(schema, "sources")), (name,)
                    )
                lines.append(f"deleted {n} source(s) ({private} private) of {name}, with their notes")
            else:
                lines.append(f"no rows of {name} to delete")
        return lines
    finally:
        conn.close()


def _connect_hint(conn, name: str) -> str:
    from urllib.parse import quote

    info = conn.info
    host, port, db = info.host, info.port, info.dbname
    user = quote(name, safe="")  # alice@corp -> alice%40corp
    if host.startswith("/"):
        url = f"postgresql://{user}@/{db}?host={host}&port={port}"
        pgpass = f"{host}:{port}:{db}:{name}:PASSWORD"  # a socket folder stands for the host
    else:
        url = f"postgresql://{user}@{host}:{port}/{db}?sslmode=verify-full"
        pgpass = f"{host}:{port}:{db}:{name}:PASSWORD"
    return (
        f"{name} connects with RECALL_PG_URL={url} and keeps the password in ~/.pgpass (chmod 600), one line: {pgpass}"
    )
