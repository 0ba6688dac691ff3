"""What an older ``recall install`` wrote, met by this one after an upgrade with state kept: recall's
own entries (an MCP server from before ``-E``, a plugin file of an older template) are recall's
still, so install updates them, uninstall removes them and ``recall status`` names a repair that
works (an outside tester's upgrade, class 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import run_cli
from recall.agents.shared import mcp_server_entry

OLD_ARGS = ["-P", "-m", "recall.mcp"]  # what `recall install` wrote before -E (commit 24168b2)


def _older_release_wrote(recall_home: Path, path: Path, key: str, text: str) -> None:
    """``path`` as an older ``recall install`` left it, and its record in installed.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    recall_home.mkdir(parents=True, exist_ok=True)
    record = recall_home / "installed.json"
    state = json.loads(record.read_text()) if record.exists() else {}
    state[str(path)] = sorted({*state.get(str(path), []), key})
    record.write_text(json.dumps(state))


def _named_by_status(path: Path) -> bool:
    said = run_cli("status", check=True).stdout
    return any(line.startswith("agent_entries:") and str(path) in line for line in said.splitlines())


@pytest.fixture
def old_server() -> dict:
    return {"type": "stdio", "command": sys.executable, "args": OLD_ARGS}


def test_an_older_installs_mcp_server_is_updated_by_install_and_removed_by_uninstall(tmp_path, recall_home,
                                                                                    old_server):
    state = tmp_path / "claude" / ".claude.json"
    _older_release_wrote(recall_home, state, "mcpServers.recall",
                         json.dumps({"numStartups": 3, "mcpServers": {"recall": old_server}}, indent=2) + "\n")
    assert _named_by_status(state)
    done = run_cli("install", "--user", "--skip-check", "--form", "mcp_tool", check=True).stdout
    assert "updated: the recall MCP server" in done, done
    assert json.loads(state.read_text())["mcpServers"]["recall"] == mcp_server_entry()
    assert not _named_by_status(state)  # the repair it named worked
    state.write_text(json.dumps({"numStartups": 3, "mcpServers": {"recall": old_server}}))  # and again, unrepaired
    run_cli("uninstall", check=True)
    assert json.loads(state.read_text()) == {"numStartups": 3}


def test_an_older_installs_project_server_is_named_by_status_and_removed_by_uninstall(tmp_path, recall_home,
                                                                                     old_server, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    mcp = repo / ".mcp.json"
    _older_release_wrote(recall_home, mcp, "mcpServers.recall",
                         json.dumps({"mcpServers": {"recall": old_server, "other": {"command": "x"}}}))
    assert _named_by_status(mcp)
    run_cli("uninstall", "--project", check=True)
    assert json.loads(mcp.read_text()) == {"mcpServers": {"other": {"command": "x"}}}
    assert not _named_by_status(mcp)


def test_a_server_of_your_own_is_not_named_by_status(tmp_path, recall_home):
    """`claude mcp add recall -- python -m recall.mcp`: the user's, as they wrote it; install keeps
    it, so status must not ask for an install that changes nothing."""
    state = tmp_path / "claude" / ".claude.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"mcpServers": {"recall": {"type": "stdio", "command": sys.executable,
                                                           "args": ["-m", "recall.mcp"], "env": {}}}}))
    assert not _named_by_status(state)


def test_an_older_installs_codex_server_is_updated(tmp_path, recall_home, monkeypatch):
    codex = tmp_path / "cx"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    config = codex / "config.toml"
    _older_release_wrote(recall_home, config, "mcp_servers.recall",
                         f'[mcp_servers.recall]\ncommand = "{sys.executable}"\nargs = {json.dumps(OLD_ARGS)}\n')
    assert _named_by_status(config)
    done = run_cli("install", "--agent", "codex", "--user", "--skip-check", "--form", "mcp_tool", check=True).stdout
    assert "recall's MCP server" in done, done
    import tomllib

    assert tomllib.loads(config.read_text())["mcp_servers"]["recall"]["args"] == mcp_server_entry()["args"]
    assert not _named_by_status(config)
    run_cli("uninstall", "--agent", "codex", check=True)
    assert "recall" not in tomllib.loads(config.read_text()).get("mcp_servers", {})


def test_an_older_opencode_plugin_is_named_by_status(tmp_path, recall_home, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    run_cli("install", "--agent", "opencode", "--user", "--skip-check", check=True)
    plugin = tmp_path / "xdg" / "opencode" / "plugins" / "recall.js"
    assert not _named_by_status(plugin)
    plugin.write_text(plugin.read_text().replace('"-E", ', ""))  # the command an older release wrote
    assert _named_by_status(plugin)
    run_cli("install", "--agent", "opencode", "--user", "--skip-check", check=True)
    assert not _named_by_status(plugin)
