"""What `recall install` did in a new user's first hour (an outside tester's walk)."""

from __future__ import annotations

import subprocess

import pytest

from helpers.cli import run_cli


def _queries_logged() -> int:
    out = run_cli("log", "-n", "1000")
    assert out.returncode == 0, out.stderr
    return sum(" INFO query " in line for line in out.stdout.splitlines())


@pytest.mark.process
def test_the_install_check_is_not_logged_as_your_messages(indexed, daemons, tmp_path):
    """`recall install --project` timed 9 warm questions, logged as 9 `query` lines: the web
    page's Injections then said "10 messages searched: 1 got notes, 9 got nothing" after one
    real message. The check's questions are logged as checks, a message of yours as a query."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    out = run_cli("install", "--project", "--form", "command", cwd=project)
    assert out.returncode == 0 and "warm question through the daemon" in out.stdout, out.stdout + out.stderr
    assert _queries_logged() == 0
    from recall.ipc import client

    reply = client.request({"cmd": "query", "prompt": "how do we roll back a failed deploy to production?",
                            "cwd": str(project)}, timeout=30)  # what the hook asks for a message typed
    assert reply.get("ok") is True, reply
    assert _queries_logged() == 1
