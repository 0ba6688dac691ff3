"""What a teammate can learn from, or do to, the rows others push (stop 42: an outside tester,
given only the docs and a real server, found each of these).

* the stored hash of a note's unmasked file let any member try every value a masked secret
  may take (a PIN in 5 ms): the store keeps a keyed hash now (``PgIndex.sealed``);
* a secret in a folder's name reached every teammate through ``sources.root``;
* a member who locks a table held every teammate's search for ever: statements are bounded;
* an all-zero vector a member wrote scored NaN at the top of every search, and NaN is no JSON;
* a password with spaces in the team URL was printed as written.
"""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from helpers.notes import write_note
from helpers.team import alice_pushes_a_rule, cli
from recall.team.store import LOCK_TIMEOUT_S


@pytest.mark.pg
def test_a_teammate_cannot_recover_a_masked_secret_from_the_stored_hash(server, schema, team, tmp_path):
    notes = tmp_path / "notes"
    path = write_note(notes, "door", "Server room", "door", "PIN: 4821 today")
    a = server.url("alice")
    assert cli("team", "push", "--kind", "rule", str(notes), url=a).returncode == 0
    with server.sql("bob") as conn:
        rows = conn.execute(f"SELECT n.content_hash, c.text FROM {schema}.notes n "
                            f"JOIN {schema}.chunks c ON c.note_pk = n.id").fetchall()
    assert rows and all("4821" not in text for _, text in rows)
    raw = hashlib.sha256(path.read_bytes()).hexdigest()
    tries = {hashlib.sha256(path.read_bytes().replace(b"4821", str(pin).zfill(4).encode())).hexdigest()[:16]
             for pin in range(10_000)}
    for stored, _ in rows:
        assert raw[:16] not in stored and not any(t in stored for t in tries), stored
    # the keyed hash still tells recall what changed: a second push sends nothing
    again = cli("team", "push", "--kind", "rule", str(notes), url=a)
    assert again.returncode == 0 and "unchanged 1" in again.stdout, again.stdout + again.stderr


@pytest.mark.pg
def test_a_secret_in_a_folder_name_reaches_no_teammate(server, schema, team, tmp_path):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    notes = tmp_path / f"x-{token}"
    write_note(notes, "deploy", "Deploys", "how we ship", "Blue-green deploys.")
    pushed = cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"))
    assert pushed.returncode == 0 and token not in pushed.stdout + pushed.stderr
    with server.sql("bob") as conn:
        roots = [r[0] for r in conn.execute(f"SELECT root FROM {schema}.sources").fetchall()]
    assert roots and not any(token in r for r in roots), roots
    # the copy an older recall pushed under the clear name goes at the next push
    with server.sql("alice") as conn:
        conn.execute(f"INSERT INTO {schema}.sources (kind, root, team) VALUES ('rule', %s, true)", (str(notes),))
    cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"))
    with server.sql("bob") as conn:
        roots = [r[0] for r in conn.execute(f"SELECT root FROM {schema}.sources").fetchall()]
    assert len(roots) == 1 and token not in roots[0], roots
    again = cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"))
    assert "unchanged 1" in again.stdout, again.stdout + again.stderr  # the masked root finds its rows again


@pytest.mark.pg
def test_a_member_holding_a_lock_cannot_hold_a_teammates_search(server, schema, team, tmp_path):
    alice_pushes_a_rule(server, tmp_path)
    with server.sql("alice") as conn:
        conn.execute("BEGIN")
        conn.execute(f"LOCK TABLE {schema}.chunks IN ACCESS EXCLUSIVE MODE")
        t0 = time.monotonic()
        out = cli("team", "search", "--all", "deploys", url=server.url("bob"))
        took = time.monotonic() - t0
        conn.execute("ROLLBACK")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "did not answer in time" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert took < LOCK_TIMEOUT_S + 20


@pytest.mark.pg
def test_a_zero_vector_a_member_wrote_scores_nothing_and_json_stays_json(server, schema, team, tmp_path):
    alice_pushes_a_rule(server, tmp_path)
    with server.sql("alice") as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        conn.execute(
            "WITH s AS (INSERT INTO sources (kind, root, team) VALUES ('rule', '/z', true) RETURNING id),"
            " n AS (INSERT INTO notes (source_id, path, note_id, name, description, type, content_hash, mtime, team)"
            "  SELECT id, '/z.md', 'z', 'PINNED', 'd', 'rule', 'h', 0, true FROM s RETURNING id, source_id)"
            " INSERT INTO chunks (note_pk, ord, text, text_hash, embedding, source_id, team, kind)"
            " SELECT id, 0, 'z', 't', array_fill(0::real, ARRAY[256])::vector, source_id, true, 'rule' FROM n")
    out = cli("team", "search", "--all", "--json", "what is the capital of France", url=server.url("bob"))
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    assert "z" not in [h["id"] for h in hits]


def test_a_password_with_spaces_in_the_team_url_is_never_printed(tmp_path):
    from helpers.cli import run_cli

    secret = "correct horse battery"
    config = tmp_path / "config.toml"
    config.write_text(f'[team]\nurl = "postgresql://frank:{secret}@127.0.0.1:1/recall"\n')
    shown = run_cli("config", env={"RECALL_CONFIG": str(config)})
    assert shown.returncode == 0 and "postgresql://frank:" in shown.stdout
    assert secret not in shown.stdout + shown.stderr
    status = run_cli("team", "status", env={"RECALL_CONFIG": str(config)})
    assert status.returncode == 1 and secret not in status.stdout + status.stderr
    assert len(status.stderr.strip().splitlines()) == 1, status.stderr


@pytest.mark.pg
def test_a_folder_deleted_or_moved_here_leaves_the_team_store_at_the_next_push(server, schema, team, tmp_path,
                                                                                recall_home):
    """The next push deleted what was deleted inside a pushed folder, never a folder deleted
    or moved whole: its notes stayed in every teammate's search (stop 48, tester V's 05)."""
    import shutil

    runbooks, rules = tmp_path / "runbooks", tmp_path / "rules"
    write_note(runbooks, "deploy", "Deploy procedure zebrafalcon", "how billing deploys", "blue green")
    write_note(rules, "style", "Style", "how we name things", "snake case")
    a = server.url("alice")
    assert cli("team", "push", "--kind", "rule", str(runbooks), str(rules), url=a).returncode == 0
    shutil.rmtree(runbooks)
    again = cli("team", "push", "--kind", "rule", str(rules), url=a)
    assert again.returncode == 0, again.stderr
    assert "gone here, so removed from the team store with its 1 note(s)" in again.stdout
    with server.sql("bob") as conn:
        names = {r[0] for r in conn.execute(f"SELECT name FROM {schema}.notes").fetchall()}
    assert names == {"Style"}


@pytest.mark.pg
def test_private_or_team_follows_the_push_that_says_it_even_when_no_note_changed(server, schema, team, tmp_path):
    """`push --private` on a folder pushed as team said "private" and left every note in every
    teammate's search: the flag was written only with a changed note (an outside tester's, stop 56)."""
    rules = tmp_path / "rules"
    write_note(rules, "migrations", "Never edit applied migrations zebrafalcon", "write a new one", "follow up")
    a = server.url("alice")

    def bob_sees() -> set[str]:
        with server.sql("bob") as conn:
            return {r[0] for r in conn.execute(f"SELECT name FROM {schema}.chunks c JOIN {schema}.notes n"
                                               " ON n.id = c.note_pk").fetchall()}

    assert cli("team", "push", "--kind", "rule", str(rules), url=a).returncode == 0
    assert bob_sees() == {"Never edit applied migrations zebrafalcon"}
    private = cli("team", "push", "--kind", "rule", "--private", str(rules), url=a)
    assert private.returncode == 0 and "private" in private.stdout and "unchanged 1" in private.stdout
    assert bob_sees() == set()
    assert cli("team", "push", "--kind", "rule", "--team", str(rules), url=a).returncode == 0
    assert bob_sees() == {"Never edit applied migrations zebrafalcon"}


@pytest.mark.pg
def test_the_folders_pushed_are_kept_per_store(server, schema, team, team_env, tmp_path, recall_home):
    """The list of folders pushed from this home was one for every store: a push to another schema
    took a gone folder off the list, where it was never pushed, so its notes stayed on the first
    store for good; `forget` on one store forgot the others' (an outside tester's, stop 56)."""
    import shutil
    from pathlib import Path

    import psycopg

    runbooks, rules = tmp_path / "runbooks", tmp_path / "rules"
    write_note(runbooks, "deploy", "Deploy procedure zebrafalcon", "how billing deploys", "blue green")
    write_note(rules, "style", "Style", "how we name things", "snake case")
    a = server.url("alice")
    assert cli("team", "push", "--kind", "rule", str(runbooks), url=a).returncode == 0
    other = schema + "_b"
    config = Path(team_env["RECALL_CONFIG"])
    first = config.read_text()
    config.write_text(first.replace(f'schema = "{schema}"', f'schema = "{other}"'))
    try:
        assert cli("team", "init", url=server.admin).returncode == 0
        assert cli("team", "add-member", "alice", "--no-password", url=server.admin).returncode == 0
        shutil.rmtree(runbooks)
        elsewhere = cli("team", "push", "--kind", "rule", str(rules), url=a)
        assert elsewhere.returncode == 0 and "gone here" not in elsewhere.stdout, elsewhere.stdout
        assert cli("team", "forget", "--yes", url=a).returncode == 0
        config.write_text(first)
        back = cli("team", "push", "--kind", "rule", str(rules), url=a)
        assert "runbooks (rule): gone here, so removed from the team store with its 1 note(s)" in back.stdout, \
            back.stdout
        with server.sql("bob") as conn:
            assert {r[0] for r in conn.execute(f"SELECT name FROM {schema}.notes").fetchall()} == {"Style"}
    finally:
        config.write_text(first)
        with psycopg.connect(server.admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{other}" CASCADE')
            for group in (f"{other}_member", f"{other}_reader"):
                conn.execute(f'DROP ROLE IF EXISTS "{group}"')


@pytest.mark.pg
def test_a_secret_in_a_projects_name_is_not_on_the_server_and_its_memory_still_scopes(server, schema, team, tmp_path):
    """The project's key went to the server in clear, in every source and chunk row, while the
    folder's path was masked (an outside tester's, stop 58): masked too, and the project's own
    search still finds its memory by it."""
    from helpers.cli import run_cli

    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    project = tmp_path / f"deploy-{token}"
    write_note(project / "mem", "ship", "Deploys", "how we ship", "Blue-green deploys on Tuesdays.")
    env = {"RECALL_PG_URL": server.url("alice")}
    pushed = run_cli("team", "push", "--kind", "memory", "--team", "mem", cwd=project, env=env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    with server.sql() as conn:  # the administrator's view: every row the server holds
        kept = conn.execute(f"SELECT project FROM {schema}.sources UNION ALL SELECT project FROM {schema}.chunks"
                            ).fetchall()
    assert kept and all(p is not None and token[4:] not in p and token[4:].lower() not in p.lower()
                        for (p,) in kept), kept
    found = run_cli("team", "search", "blue-green deploys", cwd=project, env=env)
    assert found.returncode == 0 and "ship" in found.stdout, found.stdout + found.stderr


@pytest.mark.pg
def test_a_teammates_huge_fields_are_cut_on_the_server(server, schema, team, tmp_path):
    """A member's 100 MB description was fetched whole by every teammate's search (3.2 s, 1.5 GB for
    one note: an outside tester's, stop 58); each field comes cut to what is kept of it."""
    from helpers.team import alice_pushes_a_rule
    from recall.team.queries import CUTS, SEARCH_SQL

    alice_pushes_a_rule(server, tmp_path)
    with server.sql("alice") as conn:
        conn.execute(f"UPDATE {schema}.notes SET description = repeat('d', 20000000), name = repeat('n', 5000000)")
    with server.sql("bob") as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        q = "[" + ",".join(["0.1"] * 256) + "]"
        rows = conn.execute(SEARCH_SQL.format(where="TRUE", **CUTS), {"q": q, "limit": 10, "k": 5}).fetchall()
    assert rows and all(len(r[6]) <= CUTS["cut_name"] and len(r[7]) <= CUTS["cut_description"] for r in rows)
    out = cli("team", "search", "--all", "deploys", url=server.url("bob"))
    assert out.returncode == 0 and "ddddd" in out.stdout and len(out.stdout) < 20_000, out.stderr
