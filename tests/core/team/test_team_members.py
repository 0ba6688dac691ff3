"""A teammate's whole time in the team store: let in, removed, and a name used again (an outside
tester's, D3: no way to remove a member, a revoked member's team rows stayed in every search, and a
new role under a removed member's name inherited their rows, private ones included); and the
administrator's commands bounded like a member's (D4: `init` waited 90 s on a teammate's lock,
blocking the team meanwhile, then blamed the network)."""

from __future__ import annotations

import time
import uuid

import pytest

from helpers.notes import write_note
from helpers.team import PASSWORDS, alice_pushes_a_rule, cli
from recall.team.store import LOCK_TIMEOUT_S


def _bob_pushes(server, tmp_path) -> None:
    shared, private = tmp_path / "bob-rules", tmp_path / "bob-private"
    write_note(shared, "review", "Code review", "how bob reviews", "two approvals zebrafalcon")
    write_note(private, "salary", "Bob salary review", "hr", "salary raise zebrafalcon")
    b = server.url("bob")
    assert cli("team", "push", "--kind", "rule", str(shared), url=b).returncode == 0
    assert cli("team", "push", "--kind", "memory", "--private", str(private), url=b).returncode == 0


def _owned(server, schema, name: str) -> int:
    with server.sql() as conn:
        return conn.execute(f"SELECT count(*) FROM {schema}.sources WHERE owner = %s", (name,)).fetchone()[0]


@pytest.mark.pg
def test_remove_member_revokes_and_deletes_their_rows_and_the_name_can_be_given_again(server, schema, team, tmp_path):
    alice_pushes_a_rule(server, tmp_path)
    _bob_pushes(server, tmp_path)
    removed = cli("team", "remove-member", "bob", "--yes", url=server.admin)
    assert removed.returncode == 0, removed.stderr
    assert "revoked" in removed.stdout and "deleted 2 source(s)" in removed.stdout, removed.stdout
    assert _owned(server, schema, "bob") == 0
    seen = cli("team", "search", "--all", "two approvals zebrafalcon", url=server.url("alice"))
    assert seen.returncode == 0 and "Code review" not in seen.stdout, seen.stdout
    refused = cli("team", "status", url=server.url("bob"))
    assert refused.returncode == 1 and "add-member" in refused.stderr, refused.stderr
    pw = tmp_path / "bob.pw"
    pw.write_text(PASSWORDS["bob"] + "\n")
    again = cli("team", "add-member", "bob", "--password-file", str(pw), url=server.admin)
    assert again.returncode == 0, again.stderr  # nothing of the former bob is left to inherit


@pytest.mark.pg
def test_a_name_whose_rows_are_kept_is_not_given_to_a_new_role_without_saying_so(server, schema, team, tmp_path):
    dave, pw = "dave_" + uuid.uuid4().hex[:6], "dave-Pw-" + uuid.uuid4().hex[:8]
    (tmp_path / "dave.pw").write_text(pw + "\n")
    with server.pgpass.open("a") as fh:
        fh.write(f"*:*:*:{dave}:{pw}\n")
    assert (
        cli("team", "add-member", dave, "--password-file", str(tmp_path / "dave.pw"), url=server.admin).returncode == 0
    )
    notes = tmp_path / "dave-private"
    write_note(notes, "salary", "Dave salary review", "hr", "salary raise zebrafalcon")
    write_note(tmp_path / "dave-rules", "review", "Code review", "how dave reviews", "two approvals")
    assert cli("team", "push", "--kind", "memory", "--private", str(notes), url=server.url(dave)).returncode == 0
    assert cli("team", "push", "--kind", "rule", str(tmp_path / "dave-rules"), url=server.url(dave)).returncode == 0
    kept = cli("team", "remove-member", dave, "--keep-rows", "--yes", url=server.admin)
    assert kept.returncode == 0 and "kept 2 source(s) (1 private)" in kept.stdout, kept.stdout + kept.stderr
    with server.sql() as conn:  # the role dropped, as remove-member says; months later, a new dave
        conn.execute(f'DROP ROLE "{dave}"')
    refused = cli("team", "add-member", dave, "--password-file", str(tmp_path / "dave.pw"), url=server.admin)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "2 source(s) (1 private)" in refused.stderr and f"remove-member {dave}" in refused.stderr, refused.stderr
    with server.sql() as conn:
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (dave,)).fetchone() is None  # nothing made
    back = cli(
        "team", "add-member", dave, "--password-file", str(tmp_path / "dave.pw"), "--keep-rows", url=server.admin
    )
    assert back.returncode == 0, back.stderr  # the same person, back: their rows are theirs again
    mine = cli("team", "search", "--all", "salary raise zebrafalcon", url=server.url(dave))
    assert "Dave salary review" in mine.stdout, mine.stdout + mine.stderr
    with server.sql() as conn:
        conn.execute(f'REVOKE "{schema}_member" FROM "{dave}"')
        conn.execute(f'DROP ROLE "{dave}"')


@pytest.mark.pg
def test_the_rows_of_a_dropped_role_are_said_as_such_and_removed(server, schema, team, tmp_path):
    gone = "erin_" + uuid.uuid4().hex[:6]
    with server.sql() as conn:
        conn.execute(
            f"INSERT INTO {schema}.sources (owner, kind, root, team) VALUES (%s, 'memory', '/x', false)", (gone,)
        )
    init = cli("team", "init", url=server.admin)
    assert init.returncode == 0 and f"remove-member '{gone}'" in init.stdout and "dropped" in init.stdout, init.stdout
    added = cli("team", "add-member", gone, "--no-password", url=server.admin)
    assert added.returncode == 1 and "1 source(s) (1 private)" in added.stderr, added.stderr
    removed = cli("team", "remove-member", gone, "--yes", url=server.admin)
    assert removed.returncode == 0 and "deleted 1 source(s)" in removed.stdout, removed.stdout + removed.stderr
    assert cli("team", "add-member", gone, "--no-password", url=server.admin).returncode == 0
    with server.sql() as conn:
        conn.execute(f'REVOKE "{schema}_member" FROM "{gone}"')
        conn.execute(f'DROP ROLE "{gone}"')


@pytest.mark.pg
def test_init_gives_up_on_a_teammates_lock_in_seconds_and_names_the_session(server, schema, team, tmp_path):
    alice_pushes_a_rule(server, tmp_path)
    with server.sql("alice") as conn:
        conn.execute("BEGIN")
        conn.execute(f"SELECT count(*) FROM {schema}.chunks")  # a plain read, left open
        t0 = time.monotonic()
        unchanged = cli("team", "init", url=server.admin)  # nothing to change: no table lock wanted
        quick = time.monotonic() - t0
        conn.execute("ROLLBACK")
        with server.sql() as admin:  # something to restore: init must lock the table
            admin.execute(f"ALTER TABLE {schema}.chunks NO FORCE ROW LEVEL SECURITY")
        conn.execute("BEGIN")
        conn.execute(f"SELECT count(*) FROM {schema}.chunks")
        t0 = time.monotonic()
        blocked = cli("team", "init", url=server.admin)
        took = time.monotonic() - t0
        pid = conn.info.backend_pid
        conn.execute("ROLLBACK")
    assert unchanged.returncode == 0 and quick < LOCK_TIMEOUT_S, (quick, unchanged.stderr)
    assert blocked.returncode == 1 and took < LOCK_TIMEOUT_S + 15, (took, blocked.stderr)
    err = blocked.stderr.strip()
    assert len(err.splitlines()) == 1 and "another session holds a lock on" in err and str(pid) in err, err
    assert "network" not in err and "pg_terminate_backend" in err, err
    assert cli("team", "init", url=server.admin).returncode == 0  # the session ended: init finishes


@pytest.mark.pg
def test_an_adoption_that_would_hold_a_folder_twice_names_it_and_changes_nothing(server, schema, team):
    """The teammate pushed the folder again before the administrator adopted the old label's copy:
    "current transaction is aborted" named neither the folder nor the repair (an outside tester's, D5)."""
    with server.sql() as conn:
        for owner in ("alice", "alice@laptop"):
            conn.execute(
                f"INSERT INTO {schema}.sources (owner, kind, root, team) VALUES (%s, 'dir', '/srv/runbooks', true)",
                (owner,),
            )
    out = cli("team", "init", "--adopt", "alice@laptop=alice", url=server.admin)
    err = out.stderr.strip()
    assert out.returncode == 1 and len(err.splitlines()) == 1 and "aborted" not in err, err
    assert "/srv/runbooks" in err and "remove-member 'alice@laptop'" in err and "nothing was changed" in err, err
    with server.sql() as conn:
        owners = sorted(r[0] for r in conn.execute(f"SELECT owner FROM {schema}.sources").fetchall())
    assert owners == ["alice", "alice@laptop"]


@pytest.mark.pg
def test_a_schema_migrated_by_a_newer_recall_is_said_so_not_up_to_date(server, schema, team):
    """A migration this recall does not know was taken as "up to date", and a member's push then
    failed on the newer recall's column (an outside tester's, D8)."""
    with server.sql() as conn:
        conn.execute(f"INSERT INTO {schema}.migrations VALUES ('0099_future', now())")
    for url in (server.admin, server.url("alice")):
        out = cli("team", "init" if url == server.admin else "status", url=url)
        err = out.stderr.strip()
        assert out.returncode == 1 and len(err.splitlines()) == 1, out.stdout + err
        assert "newer recall (0099_future)" in err and "upgrade recall" in err and "up to date" not in out.stdout, err


@pytest.mark.pg
def test_a_schema_made_again_in_the_same_database_is_not_blamed_on_another(server, schema, team):
    """DROP SCHEMA then init warned of "a team in another database" and advised dropping the schema
    again, which would orphan this team's own members (an outside tester's, D7)."""
    with server.sql() as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    out = cli("team", "init", url=server.admin)
    assert out.returncode == 0, out.stderr
    warning = next(line for line in out.stdout.splitlines() if line.startswith("warning:"))
    assert "earlier schema" in warning and "DROP SCHEMA" not in warning and "remove-member" in warning, warning
