"""What a new user's first hour with questions showed (an outside tester's walk): each line a
command prints about questions says the truth for the agent, the folders and the state it is about."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers.cli import run_cli
from recall.authoring import notegen
from recall.authoring.agentcli import Agent, agent_cost


def _agents_on_path(tmp_path, *names: str) -> dict[str, str]:
    """Stand-ins for agent CLIs (never run here: only found on PATH)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    for name in names:
        (fake_bin / name).write_text("#!/bin/sh\nexit 3\n")
        (fake_bin / name).chmod(0o755)
    return {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_install_for_an_agent_quotes_that_agents_cost(folder, tmp_path, recall_home, hash_model, agent):
    """`recall install --agent codex` printed "claude would be asked 7 time(s), about 66,406
    tokens": Claude's estimate, a quarter to a third of what Codex or Gemini CLI would spend."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**_agents_on_path(tmp_path, "claude", "codex", "gemini"), "HOME": str(tmp_path / "home"),
           "CODEX_HOME": str(tmp_path / "codex")}
    assert run_cli("index", str(folder), env=env).returncode == 0
    out = run_cli("install", "--agent", agent, "--skip-check", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("questions:"))
    cost = agent_cost(notegen.cost(notegen.folder_state(folder), batch_notes=8), Agent(agent, agent))
    assert f"{agent} would be asked" in line and f"about {cost.total:,} tokens" in line, line
    assert "claude" not in line and f"`recall questions on --agent {agent}`" in line
