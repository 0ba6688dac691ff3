"""A push whose connection the server ends half-way (its backend terminated, a restart, a
failover): said as a connection lost, with what was pushed before it and what was not, and the
repair (push again: a push sends only what the server lacks), never as the server refusing."""

from __future__ import annotations

import re

import pytest

from helpers.notes import write_note
from helpers.team import cli

KILL = """
CREATE FUNCTION "{s}".kill_push() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF NEW.path LIKE '%/n3.md' THEN  -- the push's own backend, ended as pg_terminate_backend ends one
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER kill_push BEFORE INSERT ON "{s}".notes FOR EACH ROW EXECUTE FUNCTION "{s}".kill_push();
"""


@pytest.mark.pg
def test_a_push_whose_connection_is_killed_midway_is_said_as_lost_and_a_second_push_finishes_it(
        server, schema, team, tmp_path):
    notes = tmp_path / "notes"
    for i in range(1, 6):
        write_note(notes, f"n{i}", f"Rule {i}", f"rule number {i}", f"Rule {i}: always do thing {i} first.")
    with server.sql() as conn:
        conn.execute(KILL.format(s=schema))
    push = cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"))
    assert push.returncode == 1 and "Traceback" not in push.stderr, push.stderr
    line = push.stderr.strip()
    assert len(line.splitlines()) == 1 and "refused" not in line, line
    assert "connection to the team store was lost" in line and "run `recall team push` again" in line, line
    done = re.search(r"added (\d+), changed (\d+) before it", line)
    assert done, line
    with server.sql() as conn:
        conn.execute(f'DROP TRIGGER kill_push ON "{schema}".notes')
    again = cli("team", "push", "--kind", "rule", str(notes), url=server.url("alice"))
    assert again.returncode == 0, again.stderr
    pushed = int(done.group(1))
    assert 0 < pushed < 5 and f"added {5 - pushed}, changed 0, removed 0, unchanged {pushed}" in again.stdout, \
        again.stdout
