"""How install and uninstall write the user's agent files (recall/agents/writes.py): all of an
edit's files or none, never a file left damaged, what install added recorded only once it is
written, a file an agent changed meanwhile edited again, every TOML shape Codex reads (an
outside tester's D1, D2, D3, D4, D8, D9)."""

from __future__ import annotations

import functools
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import ROOT
from recall.agents.records import installed_state
from recall.agents.settings_file import write_settings
from recall.agents.writes import current_text, run
from recall.cli.agents import install as install_cmd
from recall.cli.agents import uninstall as uninstall_cmd

USERS = {"permissions": {"allow": [f"Bash(tool{i}:*)" for i in range(150)], "deny": ["Read(./.env)"]}}


def invoke(command, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, [*args, "--skip-check"] if command is install_cmd else list(args))
    return result.exit_code, result.output


def snapshot(*folders: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for folder in folders
        if folder.exists()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _small_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # a full disk, for files past ``limit`` bytes
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_a_hard_linked_settings_file_on_a_full_disk_is_left_whole(tmp_path):
    """The in-place write of a hard-linked settings file stopped at the disk's end: the file was
    cut short, no longer JSON (Claude Code then ignored it, its deny rules included), and the
    error named "a file under RECALL_HOME"."""
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    text = json.dumps(USERS, indent=2) + "\n"
    settings.write_text(text)
    os.link(settings, tmp_path / "dotfiles-settings.json")
    command = [
        sys.executable,
        "-c",
        "from recall.cli import run; run()",
        "install",
        "--form",
        "command",
        "--skip-check",
    ]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=functools.partial(_small_files, len(text) + 40),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1 and str(settings) in proc.stderr + proc.stdout, proc.stderr
    assert settings.read_text() == text and os.stat(settings).st_nlink == 2
    assert not [p for p in settings.parent.iterdir() if p.name != "settings.json"]  # no copy left behind
    assert installed_state() == {}


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_read_only_file_refuses_the_whole_install_and_uninstall(tmp_path, monkeypatch, project, agent):
    """Files were written one by one: ~/.claude.json got the server while settings.json was
    read-only, hooks.json was written before config.toml was refused, and uninstall took the MCP
    server out and left the hook that calls it; a failed install recorded flags it never set."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    read_only = {
        "claude": tmp_path / "claude" / "settings.json",
        "codex": tmp_path / "codex" / "config.toml",
        "gemini": project / ".gemini" / "settings.json",
    }[agent]
    read_only.parent.mkdir(parents=True)
    read_only.write_text("{}\n" if read_only.suffix == ".json" else 'model = "o3"\n')
    read_only.chmod(0o444)
    scope = ["--project"] if agent == "gemini" else []
    form = {"claude": ["--form", "mcp_tool"], "codex": ["--form", "mcp_tool"], "gemini": []}[agent]
    before = snapshot(tmp_path, project)
    rc, out = invoke(install_cmd, "--agent", agent, *scope, *form)
    assert rc == 1 and str(read_only) in out and out.count("\n") == 1, out
    assert snapshot(tmp_path, project) == before and installed_state() == {}

    read_only.chmod(0o644)
    assert invoke(install_cmd, "--agent", agent, *scope, *form)[0] == 0
    read_only.chmod(0o444)
    installed = snapshot(tmp_path, project), installed_state()
    rc, out = invoke(uninstall_cmd, "--agent", agent, *scope)
    assert rc == 1 and str(read_only) in out, out
    assert (snapshot(tmp_path, project), installed_state()) == installed


def test_recalls_own_config_is_read_before_an_agent_file_is_written(tmp_path, recall_home):
    recall_home.mkdir()
    (recall_home / "config.toml").write_text("[embedding]\nmodel = 'hash'\n")
    result = CliRunner().invoke(install_cmd, ["--form", "command", "--skip-check"])
    assert "embedding" in str(result.exception), result.output  # said by the CLI's error filter
    assert not (tmp_path / "claude").exists() and installed_state() == {}


def test_a_record_of_another_recall_home_takes_nothing_of_the_users(tmp_path, monkeypatch, project):
    """Installed under one RECALL_HOME, uninstalled under another: the first home's record stayed,
    and a later uninstall there took the user's own `[features] hooks`, deleted their config.toml
    and ~/.codex, and took Gemini's hooksConfig.enabled."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    first = tmp_path / "first-home"
    for home in (first, tmp_path / "second-home"):
        monkeypatch.setenv("RECALL_HOME", str(home))
        assert invoke(install_cmd if home == first else uninstall_cmd, "--agent", "codex")[0] == 0
        assert invoke(install_cmd if home == first else uninstall_cmd, "--agent", "gemini", "--project")[0] == 0
    assert not (tmp_path / "codex").exists()
    (tmp_path / "codex").mkdir()
    config = tmp_path / "codex" / "config.toml"
    config.write_text("[features]\nhooks = true\n")
    gemini = project / ".gemini" / "settings.json"
    gemini.parent.mkdir(exist_ok=True)
    gemini.write_text('{"hooksConfig": {"enabled": true}}\n')
    monkeypatch.setenv("RECALL_HOME", str(first))
    for args in (["--agent", "codex"], ["--agent", "gemini", "--project"]):
        rc, out = invoke(uninstall_cmd, *args)
        assert rc == 0 and "removed" not in out, out
    assert config.read_text() == "[features]\nhooks = true\n"
    assert gemini.read_text() == '{"hooksConfig": {"enabled": true}}\n'


def test_a_flag_recall_set_beside_the_users_hooks_goes_with_it(tmp_path, monkeypatch, project):
    """Hooks there before install ran without the flag (Codex 0.171.0 and Gemini CLI 0.61 run them
    by default): uninstall kept it, and the file did not come back as it was."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    files = {
        tmp_path / "codex" / "hooks.json": '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": '
        '"notify-send done"}]}]}}\n',
        tmp_path / "codex" / "config.toml": 'model = "o3"\n',
        project / ".gemini" / "settings.json": '{"hooks": {"AfterAgent": [{"hooks": [{"type": "command", '
        '"command": "log.sh"}]}]}}\n',
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for args in (["--agent", "codex"], ["--agent", "gemini", "--project"]):
        assert "set " in invoke(install_cmd, *args)[1]
        rc, out = invoke(uninstall_cmd, *args)
        assert rc == 0 and "kept" not in out, out
    assert {path: path.read_text() for path in files} == files


def test_a_file_the_agent_changes_meanwhile_is_edited_again(tmp_path):
    """Claude Code rewrites ~/.claude.json while a session is open; recall's rename threw away what
    it wrote between recall's read and recall's write (its login among it)."""
    path = tmp_path / ".claude.json"
    path.write_text('{"numStartups": 3}\n')
    reads = []

    def edit() -> None:
        data = json.loads(current_text(path) or "{}")
        reads.append(data)
        if len(reads) == 1:  # the agent writes its own, after recall read the file
            path.write_text('{"numStartups": 99, "oauthAccount": {"id": 1}}\n')
        write_settings(path, {**data, "mcpServers": {"recall": {}}})

    run(edit)
    assert json.loads(path.read_text()) == {"numStartups": 99, "oauthAccount": {"id": 1}, "mcpServers": {"recall": {}}}


@pytest.mark.parametrize(
    "text", ['mcp_servers = { other = { command = "node" } }\n', "mcp_servers = {}\n", "features = { other = true }\n"]
)
def test_codex_inline_tables_are_edited_and_given_back(tmp_path, monkeypatch, text):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    rc, out = invoke(install_cmd, "--agent", "codex", "--form", "mcp_tool")
    assert rc == 0, out
    import tomllib

    args = tomllib.loads(config.read_text())["mcp_servers"]["recall"]["args"]
    assert args[args.index("-m") + 1] == "recall.mcp", args  # then the pinned --home, where there is one
    assert invoke(uninstall_cmd, "--agent", "codex")[0] == 0
    assert config.read_text() == text


@pytest.mark.parametrize("text", ["features = []\n", "mcp_servers = 1\n"])
def test_a_codex_value_that_is_not_a_table_is_one_line_and_nothing_written(tmp_path, monkeypatch, text):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    rc, out = invoke(install_cmd, "--agent", "codex", "--form", "mcp_tool")
    assert rc == 1 and str(config) in out and "not a table" in out and out.count("\n") == 1, out
    assert os.listdir(config.parent) == ["config.toml"] and config.read_text() == text
    assert installed_state() == {}


@pytest.mark.parametrize("text", ["", "  \n"])
def test_an_empty_settings_file_comes_back_empty(tmp_path, monkeypatch, project, text):
    """An empty (or white-space only) settings file came back as `{}` after install + uninstall."""
    files = [tmp_path / "claude" / "settings.json", project / ".gemini" / "settings.json"]
    for path in files:
        path.parent.mkdir(parents=True)
        path.write_text(text)
    for args, form in ((["--agent", "claude"], ["--form", "command"]), (["--agent", "gemini", "--project"], [])):
        assert invoke(install_cmd, *args, *form)[0] == 0
        assert invoke(uninstall_cmd, *args)[0] == 0
    assert [path.read_text() for path in files] == [text, text]


@pytest.mark.parametrize("text", ['model = "o3"', 'model = "o3"\n\n', 'model = "o3"\r\n'])
def test_codex_config_ends_as_it_did(tmp_path, monkeypatch, text):
    """A final newline was added where there was none, and a trailing blank line was lost."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(text.encode())
    assert invoke(install_cmd, "--agent", "codex", "--form", "mcp_tool")[0] == 0
    assert invoke(uninstall_cmd, "--agent", "codex")[0] == 0
    assert config.read_bytes() == text.encode() and installed_state() == {}


def test_a_record_of_another_recall_home_keeps_the_users_own_server_approved(tmp_path, monkeypatch, project):
    first = tmp_path / "first-home"
    for home in (first, tmp_path / "second-home"):
        monkeypatch.setenv("RECALL_HOME", str(home))
        command = install_cmd if home == first else uninstall_cmd
        assert invoke(command, "--project", *(["--form", "mcp_tool"] if home == first else []))[0] == 0
    settings, servers = project / ".claude" / "settings.json", project / ".mcp.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text('{"enabledMcpjsonServers": ["recall"]}\n')
    servers.write_text('{"mcpServers": {"recall": {"command": "my-recall", "args": []}}}\n')
    monkeypatch.setenv("RECALL_HOME", str(first))
    assert invoke(uninstall_cmd, "--project")[0] == 0
    assert settings.read_text() == '{"enabledMcpjsonServers": ["recall"]}\n'


def test_a_value_on_one_line_with_spaces_inside_its_brackets_stays_as_written(tmp_path):
    """`{ "allow": [ "Bash(ls)" ] }` (Prettier's style, or by hand) came back spread over lines,
    though recall never touched it: only json.dumps' own spacing was kept on one line."""
    from recall.agents.install import install, uninstall

    text = '{\n  "permissions": { "allow": [ "Bash(ls)" ], "deny": [] },\n  "model": "opus"\n}\n'
    path = tmp_path / "settings.json"
    path.write_text(text)
    assert install(path) == "added"
    assert '  "permissions": { "allow": [ "Bash(ls)" ], "deny": [] },\n' in path.read_text()
    assert uninstall(path) == 1 and path.read_text() == text
