"""recall closes up its own files in its home, and only its own.

An outside tester pointed RECALL_HOME at an existing project: `recall query` made every file
in it 0600 and every folder 0700 (scripts lost their execute bits, a 1777 folder became
0700). Now a home that holds anything recall does not keep there has its own mode and those
entries left alone; recall's entries (``recall.privacy.paths.HOME_ENTRIES``) are still made
private. The list must be whole: a fresh home, used the way a user does, holds nothing else.
"""

from __future__ import annotations

import os
import stat

import pytest

from helpers.cli import run_cli, run_cli_process
from helpers.notes import write_note
from recall.privacy.paths import recalls

pytestmark = pytest.mark.process


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_home_that_is_an_existing_folder_keeps_the_modes_of_what_is_not_recalls(tmp_path, monkeypatch, hash_model):
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "shared").mkdir()
    tool = project / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    for path, m in ((project, 0o755), (project / "bin", 0o755), (tool, 0o755), (project / "shared", 0o1777)):
        path.chmod(m)
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploys", "how we deploy", "Run compose up.")
    monkeypatch.setenv("RECALL_HOME", str(project))
    assert run_cli_process("index", str(notes)).returncode == 0
    (project / "recall.db").chmod(0o644)  # an old version's, or a copy's
    (project / "logs").mkdir(exist_ok=True)
    (project / "logs").chmod(0o755)
    out = run_cli_process("query", "how do we deploy")
    assert out.returncode == 0, out.stderr
    assert (mode(project), mode(project / "bin"), mode(tool), mode(project / "shared")) == (0o755, 0o755, 0o755, 0o1777)
    assert mode(project / "recall.db") == 0o600 and mode(project / "logs") == 0o700


def test_a_home_of_recalls_own_is_closed_up_whole(tmp_path, monkeypatch, hash_model):
    home = tmp_path / "home"
    monkeypatch.setenv("RECALL_HOME", str(home))
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploys", "how we deploy", "Run compose up.")
    assert run_cli_process("index", str(notes)).returncode == 0
    home.chmod(0o777)
    (home / "recall.db").chmod(0o666)
    assert run_cli_process("query", "how do we deploy").returncode == 0
    assert mode(home) == 0o700 and mode(home / "recall.db") == 0o600


def test_everything_recall_keeps_in_its_home_is_on_its_list(tmp_path, recall_home, hash_model, daemons):
    notes = tmp_path / "notes"
    write_note(notes, "deploy", "Deploys", "how we deploy", "Run compose up.")
    for args in (("index", str(notes)), ("query", "how do we deploy"), ("status",), ("log",), ("calibrate",),
                 ("questions", "on", "--agent", "claude"), ("questions",), ("questions", "off"), ("config",)):
        run_cli(*args)
    daemons.start()
    assert run_cli_process("query", "how do we deploy").returncode == 0
    run_cli("stop")
    strays = [name for name in os.listdir(recall_home) if not recalls(name)]
    assert strays == []
