"""What a member's commands send to the team store's server, and what a bare push shares.

* every value sent is masked, query parameters too, not only what is stored: the cleanup of a
  folder an older recall pushed under its clear name sent that name as a parameter on every
  push, into the server's log under ``log_statement`` (an outside tester's, D1);
* a bare ``recall team push`` sends this project's memory (private) and the rule folders (team),
  as the docs say, not ``[sources] libraries`` (D2).
"""

from __future__ import annotations

import pytest

from helpers.notes import write_note
from helpers.team import cli

TOKEN = "ghp_" + "QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"


@pytest.mark.pg
def test_no_secret_in_a_path_reaches_the_server_even_as_a_query_parameter(server, schema, team, tmp_path):
    notes = tmp_path / f"leak-{TOKEN}"
    write_note(notes, "deploy", "Deploys", "how we ship", "Blue-green deploys.")
    gone = write_note(notes, f"old-{TOKEN}", "Old", "an old note", "Retired procedure.")
    a = server.url("alice")
    assert cli("team", "push", "--kind", "rule", str(notes), url=a).returncode == 0
    with server.sql() as conn:  # a copy an older recall pushed under the folder's clear name
        conn.execute(
            f"INSERT INTO {schema}.sources (owner, kind, root, team) VALUES ('alice', 'rule', %s, true)", (str(notes),)
        )
        conn.execute("ALTER ROLE alice SET log_statement = 'all'")
    gone.unlink()
    assert server.log is not None
    start = server.log.stat().st_size
    try:
        pushed = cli("team", "push", "--kind", "rule", str(notes), url=a)
        found = cli("team", "search", "--repo", f"proj-{TOKEN}", "deploys", url=a)
    finally:
        with server.sql() as conn:
            conn.execute("ALTER ROLE alice RESET log_statement")
    assert pushed.returncode == 0 and "removed 1" in pushed.stdout, pushed.stdout + pushed.stderr
    assert found.returncode == 0, found.stderr
    with server.log.open("rb") as fh:
        fh.seek(start)
        logged = fh.read().decode("utf-8", "replace")
    assert "DELETE FROM" in logged and "parameters:" in logged.lower(), logged[-2000:]  # the log did record them
    assert TOKEN[4:] not in logged and TOKEN[4:].lower() not in logged.lower(), [
        line for line in logged.splitlines() if TOKEN[4:] in line
    ]
    with server.sql() as conn:  # the clear-named copy went all the same
        roots = [r[0] for r in conn.execute(f"SELECT root FROM {schema}.sources").fetchall()]
    assert len(roots) == 1 and TOKEN not in roots[0], roots


@pytest.mark.pg
def test_a_bare_push_sends_the_projects_memory_and_the_rules_never_the_libraries(
    server, schema, team, team_env, tmp_path
):
    from pathlib import Path

    from helpers.cli import run_cli

    rules, lib, project = tmp_path / "rules", tmp_path / "lib", tmp_path / "proj"
    write_note(rules, "style", "Style", "how we name things", "snake case everywhere")
    lib.mkdir()
    (lib / "README.md").write_text("# Internal API docs zebrafalcon\nOur internal endpoint list, confidential.\n")
    project.mkdir()
    config = Path(team_env["RECALL_CONFIG"])
    config.write_text(config.read_text() + f'[sources]\nrules = ["{rules}"]\nlibraries = ["{lib}"]\n')
    pushed = run_cli("team", "push", cwd=project, env={"RECALL_PG_URL": server.url("alice")})
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert "(rule, team): added 1" in pushed.stdout and "library" not in pushed.stdout, pushed.stdout
    with server.sql() as conn:  # the administrator's view: every row the server holds
        kinds = {r[0] for r in conn.execute(f"SELECT kind FROM {schema}.sources").fetchall()}
    assert kinds == {"rule"}, kinds
    found = cli("team", "search", "--all", "internal endpoint list confidential", url=server.url("bob"))
    assert "zebrafalcon" not in found.stdout, found.stdout
