"""What install and status say about the agent's side of things: a file of the agent's that recall
cannot write or that is in a folder's place (in the agent's terms, not RECALL_HOME's), the agent's
own switches that turn recall's hook off, and the hook installed for the user and the project at
once (an outside tester's D12, D13)."""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers.cli import run_cli


def status_line(key: str) -> str:
    return next((line for line in run_cli("status", check=True).stdout.splitlines() if line.startswith(key)), "")


def test_a_read_only_agent_file_is_said_to_be_unwritable_not_unreadable(tmp_path):
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    settings.chmod(0o444)
    said = run_cli("install", "--user", "--form", "command", "--skip-check")
    assert said.returncode == 1 and "cannot write it" in said.stderr and "chmod u+w" in said.stderr, said.stderr
    assert "RECALL_HOME" not in said.stderr and "cannot read" not in said.stderr
    assert settings.read_text() == "{}\n"


@pytest.mark.parametrize(
    "agent, blocker, variable",
    [
        ("opencode", ".config/opencode", "XDG_CONFIG_HOME"),
        ("codex", ".codex", "CODEX_HOME"),
        ("gemini", ".gemini", None),
    ],
)
def test_a_file_in_the_place_of_an_agents_folder_is_named_with_its_variable(
    tmp_path, monkeypatch, agent, blocker, variable
):
    home = tmp_path / "h"
    (home / blocker).parent.mkdir(parents=True, exist_ok=True)
    (home / blocker).write_text("x")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    said = run_cli("install", "--agent", agent, "--user", "--skip-check")
    assert said.returncode == 1 and f"{home / blocker} is a file where the agent keeps a folder" in said.stderr
    assert f"mv {home / blocker} {home / blocker}.old" in said.stderr and "RECALL_HOME" not in said.stderr
    assert variable is None or variable in said.stderr, said.stderr


def test_claudes_switches_that_turn_recalls_hook_off_are_said(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    user = tmp_path / "claude" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"disableAllHooks": True}))
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text(json.dumps({"disabledMcpjsonServers": ["recall"]}))
    said = run_cli("install", "--project", "--form", "mcp_tool", "--skip-check", check=True).stdout
    assert f'{user} sets "disableAllHooks": true' in said, said
    assert "settings.local.json lists 'recall' in \"disabledMcpjsonServers\"" in said, said
    line = status_line("agent_switches:")
    assert "disableAllHooks" in line and "disabledMcpjsonServers" in line, line


def test_geminis_switch_for_recalls_hook_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    settings = tmp_path / "h" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooksConfig": {"enabled": True, "disabled": ["recall"]}}))
    said = run_cli("install", "--agent", "gemini", "--user", "--skip-check", check=True).stdout
    assert "lists 'recall' in hooksConfig.disabled" in said, said
    assert "hooksConfig.disabled" in status_line("agent_switches:")
    run_cli("uninstall", "--agent", "gemini", check=True)
    assert status_line("agent_switches:") == ""  # uninstalled: nothing of recall's to switch off


def test_the_hook_installed_for_you_and_for_the_project_is_said(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    run_cli("install", "--agent", "codex", "--user", "--skip-check", check=True)
    said = run_cli("install", "--agent", "codex", "--project", "--skip-check", check=True).stdout
    assert "installed for you" in said and "for this project" in said and "twice" in said, said
    assert "recall uninstall --agent codex --project" in said
    assert "twice" in status_line("agent_switches:")
    run_cli("uninstall", "--agent", "codex", "--project", check=True)
    assert status_line("agent_switches:") == ""
