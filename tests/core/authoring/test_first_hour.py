"""What a new user's first hour with questions showed (an outside tester's walk): each line a
command prints about questions says the truth for the agent, the folders and the state it is about."""

from __future__ import annotations

import os
import subprocess
import time

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


def _failing_agent(tmp_path, name: str, stdout: str) -> dict[str, str]:
    """An agent CLI on PATH that prints ``stdout`` (nothing on stderr) and exits 1."""
    env = _agents_on_path(tmp_path, name)
    (tmp_path / "bin" / name).write_text(f"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{stdout}'\nexit 1\n")
    return env | {"RECALL_QUESTIONS_GENERATE": name}


KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(("agent", "stdout", "said", "repair"), [
    ("claude", "Not logged in · Please run /login", "Not logged in · Please run /login",
     "log in to Claude Code (run `claude`, then /login)"),
    ("codex", f"Error: 401 Unauthorized for key {KEY}; run codex login",
     "Error: 401 Unauthorized for key [REDACTED]; run codex login", "log in to Codex (`codex login`)"),
])
def test_an_agent_logged_out_says_so_from_stdout_with_log_in_as_the_repair(folder, tmp_path, recall_home, hash_model,
                                                                          agent, stdout, said, repair):
    """claude exited 1 saying "Not logged in · Please run /login" on stdout; recall said "claude
    exited 1: nothing on stderr" and to try again, which could never work. In questions.log (a
    run in the background, as `recall index` starts it; `recall questions` shows its end) and in
    the CLI: the agent's own last line, secrets masked, and the repair: log in."""
    env = _failing_agent(tmp_path, agent, stdout)
    assert run_cli("index", str(folder), env=env).returncode == 0  # starts a run in the background
    log = recall_home / "questions.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "Error:" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    logged = log.read_text()
    assert f"Error: {agent} exited 1: {said}" in logged and repair in logged and KEY not in logged, logged
    shown = run_cli("questions", env=env).stdout
    assert f"failed: {agent} exited 1: {said}" in shown and repair in shown, shown

    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 1 and f"{agent} exited 1: {said}" in out.stderr, out.stderr
    assert repair in out.stderr and "to try again" not in out.stderr and KEY not in out.stderr
    assert [ln for ln in out.stderr.splitlines() if ln.startswith("Error:")] == [out.stderr.splitlines()[-1]]


def test_questions_run_writes_what_recall_questions_counted(folder, tmp_path, recall_home, hash_model):
    """`recall questions` said "3 new or changed note(s): claude would be asked …", then `recall
    questions run` said "every note has its questions; nothing to send": with no folder, run
    looked only at this project's Claude Code memory folder (none here), not the folders
    indexed before that `recall questions` counts. The same folders now, for both."""
    from helpers.fake_agent import fake_claude

    record, env = fake_claude(tmp_path)
    project = tmp_path / "project"  # no memory folder of Claude Code's for it
    project.mkdir()
    assert run_cli("index", str(folder), cwd=project, env={**env, "RECALL_QUESTIONS_GENERATE": None}).returncode == 0
    counted = run_cli("questions", cwd=project, env=env)
    assert "3 new or changed note(s): claude would be asked" in counted.stdout, counted.stdout
    ran = run_cli("questions", "run", cwd=project, env=env)
    assert ran.returncode == 0 and "nothing to send" not in ran.stderr, ran.stderr
    assert "questions for 3 note(s)" in ran.stdout and notegen.folder_state(folder).pending == []
    assert "every note has its questions" in run_cli("questions", cwd=project, env=env).stdout


def test_once_allowed_index_no_longer_says_questions_on_writes_them(folder, tmp_path, recall_home, hash_model):
    """After `recall questions on`, `recall index DIR` still said "(no note questions: `recall
    questions on` writes them)": a repair already done. Once allowed, the line names the run."""
    asked = run_cli("index", str(folder), env={"RECALL_QUESTIONS_GENERATE": None})
    assert "no note questions: `recall questions on` writes them" in asked.stdout, asked.stdout
    env = {**_agents_on_path(tmp_path, "claude"), "RECALL_QUESTIONS_GENERATE": "claude",
           "RECALL_GENERATING": "1"}  # no run in the background from this test
    for out in (run_cli("index", str(folder), env=env), run_cli("calibrate", env=env)):
        assert out.returncode == 0, out.stderr
        assert "recall questions on" not in out.stdout, out.stdout
        assert "no note questions: `recall questions run` writes them now" in out.stdout, out.stdout
