"""The session-start entry `recall install` registers beside a command hook (Claude Code's
SessionStart, Codex's SessionStart, Gemini CLI's SessionStart): the same hook module, run as the
session starts, starts a missing daemon, so that the first message is answered warm instead of
waiting for the model's load (issue #22's cold start). Where the route has an MCP server (the
mcp_tool form), the server starts the daemon as the session starts it: no entry there.

Through the public interface: `recall install` / `recall uninstall` on real settings files, and
the registered command run as the agent runs it, against a real daemon over its socket."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from helpers.agents import cli, hook_calls, run_command_hook
from helpers.daemon import daemon_pids, wait_for, write_config
from recall.cli.agents import install as install_cmd
from recall.cli.agents import uninstall as uninstall_cmd

SESSION_START = "SessionStart"
# What each agent's settings file is, relative to the project, and its session-start event's input
# (Claude Code's hooks reference; codex-rs session-start.command.input; gemini-cli docs/hooks/reference.md).
AGENTS = {
    "claude": (".claude/settings.json", {"session_id": "s1", "transcript_path": "/nonexistent.jsonl",
                                         "hook_event_name": SESSION_START, "source": "startup", "model": "opus"}),
    "codex": (".codex/hooks.json", {"session_id": "s1", "transcript_path": None, "hook_event_name": SESSION_START,
                                    "model": "gpt-5-codex", "permission_mode": "default", "source": "startup"}),
    "gemini": (".gemini/settings.json", {"session_id": "s1", "transcript_path": "/nonexistent.json",
                                         "hook_event_name": SESSION_START, "timestamp": "2026-11-30T12:00:00Z",
                                         "source": "startup"}),
}
# Another tool's own session-start hook, which install and uninstall leave as it is.
THEIRS = {"matcher": "startup", "hooks": [{"type": "command", "command": "~/bin/greet.sh", "timeout": 3}]}


def install(agent: str) -> str:
    return cli(install_cmd, "--project", "--agent", agent, "--form", "command", "--skip-check")


def settings_of(project: Path, agent: str) -> dict:
    return json.loads((project / AGENTS[agent][0]).read_text(encoding="utf-8"))


def session_entry(project: Path, agent: str) -> dict:
    """Our one session-start entry in the agent's settings (the test fails where there is none, or more)."""
    [entry] = [h for h in hook_calls(settings_of(project, agent), SESSION_START) if h != THEIRS["hooks"][0]]
    return entry


def session_event(agent: str, cwd: Path) -> bytes:
    return json.dumps({**AGENTS[agent][1], "cwd": str(cwd)}).encode()


@pytest.mark.parametrize("agent", list(AGENTS))
def test_install_adds_one_session_start_entry_and_uninstall_takes_only_it(project, agent):
    path = project / AGENTS[agent][0]
    path.parent.mkdir(parents=True)
    original = json.dumps({"hooks": {SESSION_START: [THEIRS]}}, indent=2) + "\n"
    path.write_text(original)
    first = install(agent)
    assert f"added: the daemon's early start ({SESSION_START}) in {path}" in first
    prompt_hook = hook_calls(settings_of(project, agent), "BeforeAgent" if agent == "gemini" else "UserPromptSubmit")
    # the same command: the hook module tells the events apart (Gemini CLI's description says what it does)
    assert session_entry(project, agent)["command"] == prompt_hook[0]["command"]
    assert f"unchanged: the daemon's early start ({SESSION_START}) in {path}" in install(agent)
    session_entry(project, agent)  # still one
    assert THEIRS in settings_of(project, agent)["hooks"][SESSION_START]
    out = cli(uninstall_cmd, "--project", "--agent", agent)
    assert f"removed the daemon's early start ({SESSION_START}) from {path}" in out
    after = settings_of(project, agent)
    assert after["hooks"][SESSION_START] == [THEIRS]  # the user's own, as it was


def test_the_mcp_tool_form_registers_none_its_server_starts_the_daemon(project):
    """In the mcp_tool form the MCP server starts the daemon as the session starts it
    (``recall.mcp.server``): a session-start entry would start it twice over. Switching from the
    command form takes the entry out; uninstall leaves the file as install found it."""
    install("claude")
    assert session_entry(project, "claude")
    out = cli(install_cmd, "--project", "--form", "mcp_tool", "--skip-check")
    assert "the daemon's early start" in out and "the MCP server starts it" in out
    assert SESSION_START not in settings_of(project, "claude").get("hooks", {})
    cli(uninstall_cmd, "--project")
    assert not (project / ".claude" / "settings.json").exists()


@pytest.mark.process
@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_registered_session_start_starts_the_daemon_and_prints_nothing(indexed, daemons, project, agent):
    install(agent)
    assert daemon_pids(indexed) == []
    t0 = time.monotonic()
    proc = run_command_hook(session_entry(project, agent), session_event(agent, project), project)
    wall = time.monotonic() - t0
    # exit 0 and not a byte: a SessionStart hook's stdout is the model's context (Claude Code, Codex)
    # or parsed as JSON (Gemini CLI)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b"", proc.stderr
    assert wall < 3.0  # the daemon is started detached: the session does not wait for its load
    assert wait_for(lambda: daemon_pids(indexed), 10), "no daemon started"
    from recall.ipc import client

    assert client.wait_until_ready(timeout_s=20) is not None
    again = run_command_hook(session_entry(project, agent), session_event(agent, project), project)
    assert again.returncode == 0 and again.stdout == b""
    time.sleep(0.5)
    assert len(daemon_pids(indexed)) == 1  # one that runs is left as it is


@pytest.mark.process
@pytest.mark.parametrize("case", ["no index", "automated session"])
def test_a_session_start_with_nothing_to_answer_starts_no_daemon(recall_home, daemons, project, case):
    """No index yet (a hook installed before `recall index`): the first message gets nothing either,
    so no daemon is started for it; nor for a session recall's prompt hook skips (``claude -p``)."""
    write_config(recall_home)
    install("claude")
    env = {}
    if case == "automated session":
        from helpers.daemon import index_dirs
        from helpers.paths import SAMPLE_NOTES

        index_dirs(SAMPLE_NOTES)
        env = {"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}
    proc = run_command_hook(session_entry(project, "claude"), session_event("claude", project), project, **env)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    time.sleep(1.0)
    assert daemon_pids(recall_home) == []
    assert not (recall_home / "run" / "spawn.stamp").exists()


@pytest.mark.process
@pytest.mark.parametrize("stdin", [
    b"", b"{not json", b"[1, 2, 3]", b'"SessionStart"', b'{"hook_event_name": ["SessionStart"]}',
    b'{"hook_event_name": "SessionStart", "cwd": 5, "source": {"x": 1}}', b'{"hook_event_name": "SessionStart\xff"}',
], ids=["empty", "malformed", "list", "string", "name-not-str", "odd-fields", "bad-utf8"])
def test_a_broken_session_start_event_exits_0_silently(indexed, daemons, project, stdin):
    install("claude")
    proc = run_command_hook(session_entry(project, "claude"), stdin, project)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
