"""`recall status` tries the python of each entry an agent's settings name, to say which cannot run
recall. A project's settings are files someone else may have written (a cloned repository, a shared
checkout): status ran whatever they named, from the current folder too, as the user who typed
`recall status` (an outside tester's H1). It now starts only an absolute path to a Python that only
the user or root could have placed; any other is never started."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.cli import run_cli

SPY = "#!/bin/sh\necho ran > {canary}\nexit 1\n"


def spy(path: Path, canary: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SPY.format(canary=canary))
    path.chmod(0o755)
    return path


def plant(project: Path, command: str) -> None:
    """The project's files name ``command`` as recall's python, every way an agent reads one."""
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"recall": {"command": command,
                                                                               "args": ["-m", "recall.mcp"]}}}))
    hook = {"type": "command", "command": f"{command} -E -P -m recall.agents.hook || exit 1"}
    for folder in (".claude", ".gemini", ".codex"):
        (project / folder).mkdir(exist_ok=True)
    settings = json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}})
    (project / ".claude" / "settings.json").write_text(settings)
    (project / ".gemini" / "settings.json").write_text(settings)
    (project / ".codex" / "hooks.json").write_text(settings)
    (project / ".codex" / "config.toml").write_text(
        f'[mcp_servers.recall]\ncommand = "{command}"\nargs = ["-m", "recall.mcp"]\n')


def named_by_the_project(tmp_path: Path, where: str) -> tuple[Path, str, Path]:
    project, canary = tmp_path / "project", tmp_path / "canary"
    project.mkdir()
    if where == "relative":
        spy(project / "python", canary)
        return project, "./python", canary
    if where == "shared folder":
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # anyone could have put it there
        return project, str(spy(shared / "python", canary)), canary
    if where == "another user's":
        if os.geteuid() != 0:
            pytest.skip("needs root to give a file to another user")
        theirs = tmp_path / "theirs"
        spy(theirs / "python", canary)
        os.chown(theirs / "python", 65534, 65534)
        return project, str(theirs / "python"), canary
    if where == "not a python":
        return project, str(spy(tmp_path / "bin" / "evil", canary)), canary
    raise AssertionError(where)


@pytest.mark.parametrize("where", ["relative", "shared folder", "another user's", "not a python"])
def test_status_starts_no_program_a_project_names_that_others_could_have_placed(tmp_path, where, monkeypatch):
    project, command, canary = named_by_the_project(tmp_path, where)
    plant(project, command)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    out = run_cli("status", cwd=project)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert not canary.exists(), f"recall status started {command}"


def test_a_python_of_the_users_own_is_still_tried(tmp_path):
    """The check stays: a python the user's own venv holds, which cannot run recall, is named."""
    canary = tmp_path / "canary"
    python = spy(tmp_path / "venv" / "bin" / "python", canary)
    project = tmp_path / "project"
    project.mkdir()
    plant(project, str(python))
    lines = run_cli("status", cwd=project).stdout.splitlines()
    assert canary.exists()
    assert any(line.startswith("agent_hooks:") and str(project) in line for line in lines), lines
