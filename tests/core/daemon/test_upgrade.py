"""An upgrade under a running daemon (``pip install -U``, a ``git pull`` of a checkout): the
daemon the older recall started must not answer every hook with its older code and model for
good (stop 47, an outside tester's S02). Each test runs a real daemon from a copy of the
package, whose files the test then changes as an upgrade does."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.daemon import MATCHING, wait_for
from helpers.env import env_with
from helpers.paths import PY, ROOT
from recall.ipc import client

pytestmark = pytest.mark.process


def _copy_package(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(ROOT / "recall", site / "recall", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _ask_as_the_hook() -> bytes:
    event = json.dumps({"session_id": "s1", "cwd": "/", "hook_event_name": "UserPromptSubmit",
                        "prompt": MATCHING}).encode()
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=event, capture_output=True,
                          env=env_with(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_daemon_ends_itself_once_recalls_files_change_under_it(indexed, daemons, tmp_path):
    site = _copy_package(tmp_path)
    proc = daemons.start(PYTHONPATH=str(site))
    assert "code" in client.read_status()
    api = site / "recall" / "api.py"
    api.write_text(api.read_text() + "\n# upgraded\n")  # what pip or git leaves: other files
    assert wait_for(lambda: proc.poll() is not None, 30), "the daemon kept running the files it was started from"
    log = (indexed / "logs" / "daemon.log").read_text()
    assert "recall's files changed" in log
    assert b"Feature flags via Unleash" in _ask_as_the_hook() or wait_for(
        lambda: b"Feature flags via Unleash" in _ask_as_the_hook(), 30)  # the next start is this code's


def test_the_hook_retires_a_daemon_from_before_the_check(indexed, daemons, tmp_path):
    site = _copy_package(tmp_path)
    files = site / "recall" / "daemon" / "files.py"
    older = files.read_text().replace(' "code": s.code,', "")  # what every daemon before this check wrote
    assert older != files.read_text()
    files.write_text(older)
    proc = daemons.start(PYTHONPATH=str(site))
    assert "code" not in client.read_status()
    assert b"Feature flags via Unleash" in _ask_as_the_hook()  # answered by it, this once
    assert wait_for(lambda: proc.poll() is not None, 10), "the older daemon was left answering"
    assert wait_for(lambda: b"Feature flags via Unleash" in _ask_as_the_hook(), 30)
    status = client.read_status()
    assert status is not None and "code" in status and status["pid"] != proc.pid


def _start_from_before_the_check(daemons, tmp_path):
    site = _copy_package(tmp_path)
    files = site / "recall" / "daemon" / "files.py"
    files.write_text(files.read_text().replace(' "code": s.code,', ""))  # what every daemon before this check wrote
    proc = daemons.start(PYTHONPATH=str(site))
    assert "code" not in client.read_status()
    return proc


@pytest.mark.parametrize("command", [["status"], ["index", "--quiet"],
                                     ["install", "--user", "--skip-check", "--form", "command"]])
def test_a_command_of_this_code_retires_a_daemon_from_before_the_check(indexed, daemons, tmp_path,
                                                                       sample_notes, command):
    """With the default mcp_tool route the daemon's one client is the session's MCP server, which
    runs the older code and never retires it: the daemon served the older code as long as the
    session stayed open, and `recall status` said it would end "at the next message" (an outside
    tester's upgrade, class 3). A command of this code that sees it asks it to stop."""
    from helpers.cli import run_cli

    proc = _start_from_before_the_check(daemons, tmp_path)
    said = run_cli(*command, *([sample_notes] if command[0] == "index" else []), check=True)
    assert wait_for(lambda: proc.poll() is not None, 15), "the older daemon was left answering"
    if command == ["status"]:
        assert "asked to stop" in said.stdout and "at the next message" not in said.stdout, said.stdout


def test_a_daemon_whose_package_folder_was_deleted_ends_itself(indexed, daemons, tmp_path):
    """A reinstall at another path deletes the folder the daemon was started from: its stamp read
    "" (unknown), no upgrade, and the daemon served the deleted code for good while `recall status`
    said it would end within seconds (an outside tester's upgrade, class 5)."""
    site = _copy_package(tmp_path)
    proc = daemons.start(PYTHONPATH=str(site))
    shutil.rmtree(site / "recall")
    assert wait_for(lambda: proc.poll() is not None, 30), "the daemon kept running a package that is gone"


@pytest.mark.parametrize("older", ["stamped", "from before the check"])
def test_serve_replaces_a_daemon_of_older_code(indexed, daemons, tmp_path, older):
    """Right after an upgrade `recall serve` said "already running: pid N" of a daemon of the older
    code, which ended seconds later (or never, from before the check): an outside tester's upgrade,
    class 4. It stops that one, waits for it and starts this code's."""
    from helpers.cli import run_cli
    from recall.ipc.code import code_stamp

    if older == "stamped":
        site = _copy_package(tmp_path)
        api = site / "recall" / "api.py"
        api.write_text(api.read_text() + "\n# the older release\n")
        proc = daemons.start(PYTHONPATH=str(site))
    else:
        proc = _start_from_before_the_check(daemons, tmp_path)
    said = run_cli("serve", check=True).stdout
    assert "already running" not in said and "started" in said, said
    assert proc.poll() is not None
    status = client.read_status()
    assert status["pid"] != proc.pid and status["code"] == code_stamp()
