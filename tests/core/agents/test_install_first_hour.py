"""What `recall install` did in a new user's first hour (an outside tester's walk)."""

from __future__ import annotations

import os
import subprocess
import sys

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


def _claude_on_path(tmp_path, version: str | None) -> dict[str, str]:
    """PATH with a `claude` that prints ``version`` (None: no `claude` at all)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    if version is not None:
        (fake_bin / "claude").write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
        (fake_bin / "claude").chmod(0o755)
    return {"PATH": f"{fake_bin}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}/usr/bin:/bin"}


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_install_without_claude_on_path_says_the_form_was_chosen_blind(tmp_path, recall_home, scope):
    """Without `claude` on PATH, `recall install` picked the mcp_tool hook silently: on Claude
    Code older than 2.1.118 that hook does nothing. One line says so, with the other form."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    out = run_cli("install", scope, "--skip-check", cwd=project, env=_claude_on_path(tmp_path, None))
    assert out.returncode == 0, out.stderr
    [line] = [ln for ln in out.stdout.splitlines() if "version could not be checked" in ln]
    assert "`claude` is not on PATH" in line and "mcp_tool hook was chosen" in line and "older than 2.1.118" in line
    assert f"`recall install{' --project' if scope == '--project' else ''} --form command`" in line
    for version in ("2.1.197", "2.0.5"):  # checked: no such line
        again = run_cli("install", scope, "--skip-check", cwd=project, env=_claude_on_path(tmp_path, version))
        assert again.returncode == 0 and "could not be checked" not in again.stdout, again.stdout
