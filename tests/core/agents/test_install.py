"""`recall install` / `recall uninstall` against real settings files."""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from helpers.daemon import write_config
from helpers.env import env_with
from recall.agents.install import (
    InstallError,
    add_hook,
    hook_entry,
    install,
    is_ours,
    remove_hook,
    settings_path,
    uninstall,
)
from recall.agents.records import installed_state
from recall.cli.agents import install as install_cmd
from recall.cli.agents import uninstall as uninstall_cmd
from recall.ipc import client

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(make test)"], "deny": []},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/bin/prompt-logger.sh", "timeout": 2}]},
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]},
        ],
    },
    "env": {"FOO": "bar"},
}


def ours(settings: dict) -> list[dict]:
    groups = settings.get("hooks", {}).get("UserPromptSubmit", [])
    return [h for g in groups for h in g["hooks"] if is_ours(h)]


def test_entry_is_a_guarded_shell_line_with_this_python(recall_home):
    entry = hook_entry()
    argv = [os.path.abspath(sys.executable), "-E", "-P", "-m", "recall.agents.hook", "--home", str(recall_home)]
    assert entry == {"type": "command", "timeout": 5, "command": shlex.join(argv) + " || exit 1"}
    assert is_ours(entry)
    assert is_ours({"type": "command", "command": "/usr/bin/python3 -m recall.agents.hook"})  # shell form
    assert not is_ours({"type": "command", "command": "~/bin/prompt-logger.sh"})
    assert not is_ours({"type": "command", "command": "python", "args": ["-m", "recall.hooks"]})


@pytest.mark.parametrize("theirs", [
    {"type": "command", "command": "env RECALL_HOME=/srv/team-recall /opt/py/bin/python -m recall.agents.hook",
     "timeout": 10},
    {"type": "command", "command": "RECALL_HOME=/srv/team /usr/bin/python3 -m recall.agents.hook"},
    {"type": "command", "command": "/usr/bin/env", "args": ["RECALL_MODEL=e5", "python3", "-m", "recall.agents.hook"]},
    {"type": "mcp_tool", "server": "team-memory", "tool": "recall_context", "input": {"prompt": "${prompt}"}},
    {"type": "command", "command": "cd /srv/proj && /usr/bin/python3 -m recall.agents.hook"},
    {"type": "command", "command": "/usr/bin/env", "args": ["-i", "/usr/bin/python3", "-m", "recall.agents.hook"]},
    {"type": "command", "command": ". /srv/myenv.sh && python3 -m recall.agents.hook"}])
def test_an_entry_the_user_wrote_for_another_setup_is_not_recalls(tmp_path, theirs):
    """An entry with its own environment (another RECALL_HOME) or another MCP server's tool of the
    same name was replaced by install and deleted by uninstall (an outside tester's, stop 56)."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}))
    assert not is_ours(theirs)
    assert install(path) == "added"
    assert theirs in json.loads(path.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"]
    assert uninstall(path) == 1
    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}


def test_a_settings_file_keeps_its_owner_and_hard_links_and_read_only_is_refused(tmp_path):
    """A rename gave root's file where the user's was (`sudo recall install`), left a hard link
    in a dotfiles folder with the old text, and replaced a file its owner made read-only (an
    outside tester's, stop 56)."""
    path = tmp_path / "settings.json"
    path.write_text('{"model": "opus"}\n')
    linked = tmp_path / "dotfiles-settings.json"
    os.link(path, linked)
    assert install(path) == "added"
    assert ours(json.loads(linked.read_text())) == [hook_entry()] and os.stat(path).st_nlink == 2
    assert uninstall(path) == 1 and linked.read_text() == '{"model": "opus"}\n'
    linked.unlink()
    if os.geteuid() == 0:  # only root may give a file to another user
        os.chown(path, 65534, 65534)
        assert install(path) == "added"
        assert (os.stat(path).st_uid, os.stat(path).st_gid) == (65534, 65534)
    path.chmod(0o444)
    with pytest.raises(PermissionError, match="read-only"):
        install(path) if not ours(json.loads(path.read_text())) else uninstall(path)
    assert path.stat().st_mode & 0o777 == 0o444


def test_an_entry_of_a_release_before_the_packages_is_replaced_and_removed(tmp_path):
    """``-m recall.hook`` was the hook's module before recall/ was split into packages: an
    upgrade's ``recall install`` leaves one entry, the current one; ``uninstall`` takes it out."""
    former = {"type": "command", "command": "/usr/bin/python3", "args": ["-P", "-m", "recall.hook"], "timeout": 5}
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [former]}]}}))
    assert is_ours(former)
    assert install(path) == "updated"
    assert ours(json.loads(path.read_text())) == [hook_entry()]
    uninstall(path)
    assert ours(json.loads(path.read_text())) == []


def test_install_merges_is_idempotent_and_uninstall_restores_exactly(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(EXISTING, indent=4))
    assert install(path) == "added"
    after = json.loads(path.read_text())
    assert len(ours(after)) == 1
    # Everything else is still there, in the same order.
    assert list(after) == list(EXISTING)
    assert after["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert after["hooks"]["UserPromptSubmit"][0] == EXISTING["hooks"]["UserPromptSubmit"][0]
    assert path.read_text().startswith('{\n    "model": "opus"')  # the file's own indentation

    assert install(path) == "unchanged"
    assert len(ours(json.loads(path.read_text()))) == 1

    assert uninstall(path) == 1
    assert json.loads(path.read_text()) == EXISTING
    assert uninstall(path) == 0


@pytest.mark.parametrize("style", [
    {"indent": 4}, {"indent": "\t"}, {"indent": 2, "newline": "\r\n"}, {"indent": 2, "final": ""},
    {"indent": 2, "ensure_ascii": True}, {"indent": None}, {"indent": None, "separators": (",", ":")}])
def test_install_and_uninstall_give_a_settings_file_back_in_its_own_style(tmp_path, style):
    """Install + uninstall gave a settings file back with the same meaning but two-space
    indentation, LF line ends, escapes decoded and a one-line file spread over lines (an outside
    tester's AF05): a file in a dotfiles repository showed a diff of every line. The file's own
    style (its indentation, line ends, escapes, final newline) is kept."""
    newline, final = style.pop("newline", "\n"), style.pop("final", "\n")
    mine = {**EXISTING, "name": "caf\u00e9 \U0001f600"}
    text = (json.dumps(mine, ensure_ascii=style.pop("ensure_ascii", False), **style) + final).replace("\n", newline)
    path = tmp_path / "settings.json"
    path.write_bytes(text.encode())
    assert install(path) == "added"
    assert len(ours(json.loads(path.read_text()))) == 1
    if newline == "\r\n":
        assert path.read_bytes().count(b"\n") == path.read_bytes().count(b"\r\n")
    assert uninstall(path) == 1
    assert path.read_bytes() == text.encode()


def test_a_value_the_user_wrote_on_one_line_stays_on_one_line(tmp_path):
    """A file spread over lines with some values on one line (as people write them): those
    values came back spread like the rest (AF05's one-line ``permissions``)."""
    text = ('{\r\n\t"model": "opus",\r\n\t"permissions": {"allow": ["Bash(ls)", "Read"], "n": 1.50},\r\n'
            '\t"env": {"A":"1"},\r\n\t"hooks": {\r\n\t\t"Stop": [{"hooks": []}]\r\n\t}\r\n}\r\n')
    path = tmp_path / "settings.json"
    path.write_bytes(text.encode())
    assert install(path) == "added"
    assert b'"permissions": {"allow": ["Bash(ls)", "Read"], "n": 1.50},\r\n' in path.read_bytes()
    assert uninstall(path) == 1
    assert path.read_bytes() == text.encode()


@pytest.mark.parametrize("text", [
    '{"model": "opus", "hooks": {}, "env": {}}\n',
    '{"hooks": {"UserPromptSubmit": []}, "model": "opus"}\n',
    '{"hooks": null}\n', '{"hooks": {"UserPromptSubmit": null}}\n'])
def test_uninstall_keeps_the_empty_containers_the_user_wrote(tmp_path, recall_home, text):
    """Uninstall dropped every container its removal left empty, whoever wrote it: a user's
    ``"hooks": {}`` (or ``[]``, or ``null``) was gone (an outside tester's AF05). What install
    found empty or null is recorded and given back; what it made goes."""
    path = tmp_path / "settings.json"
    path.write_text(text)
    assert install(path) == "added"
    assert len(ours(json.loads(path.read_text()))) == 1
    assert uninstall(path) == 1
    assert path.read_text() == text
    assert not installed_state()  # nothing left recorded


def test_install_into_a_missing_file_and_remove_it_again(tmp_path):
    path = tmp_path / "nested" / "settings.json"
    assert install(path) == "added"
    settings = json.loads(path.read_text())
    assert settings == {"hooks": {"UserPromptSubmit": [{"hooks": [hook_entry()]}]}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert uninstall(path) == 1
    assert json.loads(path.read_text()) == {}


def test_reinstall_refreshes_a_stale_entry_and_drops_duplicates():
    settings = copy.deepcopy(EXISTING)
    stale = {"type": "command", "command": "/old/venv/bin/python", "args": ["-m", "recall.agents.hook"],
             "timeout": 5}
    settings["hooks"]["UserPromptSubmit"].append({"hooks": [stale]})
    settings["hooks"]["UserPromptSubmit"].append({"hooks": [dict(stale)]})
    assert add_hook(settings) == "updated"
    assert ours(settings) == [hook_entry()]
    assert remove_hook(settings) == 1
    assert settings == EXISTING


def test_our_entry_sharing_a_group_with_another_hook(tmp_path):
    path = tmp_path / "settings.json"
    other = {"type": "command", "command": "other.sh"}
    mixed = {"hooks": {"UserPromptSubmit": [{"hooks": [other, hook_entry()]}]}}
    path.write_text(json.dumps(mixed))
    assert install(path) == "unchanged"
    assert uninstall(path) == 1
    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [other]}]}}


def test_keeps_mode_and_writes_through_a_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps(EXISTING))
    os.chmod(real, 0o640)
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    install(link)
    assert link.is_symlink() and len(ours(json.loads(real.read_text()))) == 1
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert not list(real.parent.glob(".settings.*"))  # no temp file left behind


def test_numbers_are_written_back_as_the_file_wrote_them(tmp_path):
    """An outside tester's teammate committed 1e400 (Claude Code reads it): install wrote it back
    as Infinity, which is not JSON, and Claude Code then ignored the file, permission rules and all."""
    path = tmp_path / "settings.json"
    text = '{"permissions": {"deny": ["Bash(rm:*)"]}, "big": 1e400, "e": 1E5, "f": 1.10, "n": [-0.0, 2.5e-3]}'
    path.write_text(text)
    install(path)
    written = path.read_text()
    assert '"big": 1e400' in written and '"e": 1E5' in written and '"f": 1.10' in written and "2.5e-3" in written
    uninstall(path)
    assert json.loads(path.read_text(), parse_float=str) == json.loads(text, parse_float=str)


def test_invalid_settings_are_left_alone(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": ')
    with pytest.raises(InstallError):
        install(path)
    assert path.read_text() == '{"hooks": '


def test_user_settings_honour_claude_config_dir(tmp_path):
    assert settings_path(project=False) == tmp_path / "claude" / "settings.json"  # conftest sets it


def test_project_settings_are_at_the_git_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert settings_path(project=True, cwd=repo / "src" / "deep") == repo / ".claude" / "settings.json"


def test_cli_install_and_uninstall_user_settings(tmp_path):
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(EXISTING, indent=2) + "\n")
    runner = CliRunner()
    for expected in ("added", "unchanged"):
        result = runner.invoke(install_cmd, ["--user", "--skip-check"])
        assert result.exit_code == 0, result.output
        # the default form where supported: the mcp_tool hook (tests/core/agents/test_agents.py runs it)
        assert f"{expected}: the recall hook (mcp_tool form" in result.output
        assert result.output.rstrip().endswith(f"in {path}")
    assert len(ours(json.loads(path.read_text()))) == 1
    result = runner.invoke(uninstall_cmd, [])
    assert result.exit_code == 0 and "removed" in result.output
    assert json.loads(path.read_text()) == EXISTING


@pytest.mark.parametrize("text", ['{"hooks": []}', '{"hooks": {"UserPromptSubmit": "x"}}', "[]",
                                  '{"a": 1,}', "\ufeff// mine\n{}"])
def test_a_settings_file_recall_cannot_edit_is_refused_before_anything_is_written(tmp_path, recall_home, text):
    """stop 41: the MCP server went into .claude.json (and installed.json) before settings.json was
    read, so a refused install left it behind, and uninstall was refused too."""
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    recall_home.mkdir(parents=True, exist_ok=True)
    before = sorted(p.name for p in path.parent.iterdir()), sorted(p.name for p in recall_home.iterdir())
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 1 and str(path) in result.output and result.output.count("\n") == 1, result.output
    assert "fix" in result.output or "move" in result.output, result.output
    assert (sorted(p.name for p in path.parent.iterdir()), sorted(p.name for p in recall_home.iterdir())) == before
    assert path.read_text(encoding="utf-8") == text


def test_a_lone_surrogate_in_the_settings_is_kept_as_written(tmp_path):
    """A JSON escape of half a surrogate pair is valid JSON: install wrote it halfway and failed with
    a traceback (UTF-8 cannot carry it); it is written back escaped, as it was."""
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"note": "lone \\ud800 surrogate"}\n', encoding="utf-8")
    assert CliRunner().invoke(install_cmd, ["--user", "--skip-check"]).exit_code == 0
    assert "\\ud800" in path.read_text(encoding="utf-8") and len(ours(json.loads(path.read_text()))) == 1
    assert CliRunner().invoke(uninstall_cmd, []).exit_code == 0
    assert json.loads(path.read_text()) == {"note": "lone \ud800 surrogate"}


def test_a_settings_link_to_nothing_is_refused_and_kept(tmp_path):
    """stop 41: install made the folders and a file where a dangling link pointed, and uninstall then
    removed the user's link."""
    link = tmp_path / "claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "dotfiles" / "sub" / "settings.json")
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 1 and "does not exist" in result.output and str(link) in result.output
    assert link.is_symlink() and not (tmp_path / "dotfiles").exists()


def test_a_config_dir_that_is_a_file_is_one_line_with_the_repair(tmp_path, monkeypatch):
    (tmp_path / "cf").write_text("hi")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cf"))
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 1 and "CLAUDE_CONFIG_DIR" in result.output and "Errno" not in result.output, \
        result.output


def test_cli_install_project(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "sub")
    result = CliRunner().invoke(install_cmd, ["--project", "--skip-check"])
    assert result.exit_code == 0, result.output
    assert len(ours(json.loads((repo / ".claude" / "settings.json").read_text()))) == 1
    assert not (tmp_path / "claude" / "settings.json").exists()
    assert (repo / ".mcp.json").exists()  # the mcp_tool form's server, at the git root
    assert CliRunner().invoke(uninstall_cmd, ["--project"]).exit_code == 0
    # install created both files and nothing else was in them: uninstall removes them
    assert not (repo / ".claude" / "settings.json").exists() and not (repo / ".mcp.json").exists()


@pytest.mark.process
def test_the_installed_command_runs_as_claude_code_would(tmp_path):
    """Run exactly what the settings say, through a shell as Claude Code does, from a project folder
    that has its own ``recall`` package: -P keeps it from shadowing ours."""
    impostor = tmp_path / "project" / "recall"
    impostor.mkdir(parents=True)
    (impostor / "__init__.py").write_text("")
    (impostor / "hook.py").write_text("print('SHADOWED')\n")
    entry = hook_entry()
    proc = subprocess.run(["/bin/sh", "-c", entry["command"]], input=b'{"prompt": "ok"}',
                          capture_output=True, cwd=impostor.parent, env=env_with(), timeout=entry["timeout"])
    assert proc.returncode == 0 and proc.stdout == b""


@pytest.mark.process
def test_cli_install_times_a_warm_question(indexed, daemons):
    # the daemon the install starts is killed by the `daemons` fixture
    result = CliRunner().invoke(install_cmd, [])
    assert result.exit_code == 0, result.output
    assert "model: hash-256 on cpu" in result.output
    assert "warm question through the daemon: median" in result.output
    assert "fits in the hook's budget of 300 ms" in result.output or "hook_budget_ms =" in result.output
    assert client.daemon_status()["running"]


@pytest.mark.process
def test_cli_install_says_how_to_raise_the_cutoff_when_too_slow(indexed, daemons):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 350\n")  # every question takes > 300 ms
    result = CliRunner().invoke(install_cmd, [])
    assert result.exit_code == 0, result.output
    assert "over the hook's budget of 300 ms" in result.output
    assert "[daemon]\nhook_budget_ms = " in result.output
    assert str(indexed / "config.toml") in result.output


OWN_SERVER = {"type": "stdio", "command": "/opt/myrecall/bin/python", "args": ["-m", "recall.mcp"],
              "env": {"RECALL_HOME": "/data/my-recall-home"}}


def test_a_recall_mcp_server_of_your_own_is_kept_by_install_and_uninstall(tmp_path):
    """`claude mcp add ... recall -- python -m recall.mcp` (docs/mcp.md), with its own python and
    env: `recall install --user` replaced it, said "updated", and uninstall left recall's in its
    place: the user's entry lost for good (an outside tester's AF01)."""
    state = tmp_path / "claude" / ".claude.json"
    state.parent.mkdir(parents=True)
    text = json.dumps({"numStartups": 12, "mcpServers": {"recall": OWN_SERVER}}, indent=2) + "\n"
    state.write_text(text)
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 0 and "kept (yours, as it is): the recall MCP server" in result.output, result.output
    assert state.read_text() == text
    assert CliRunner().invoke(uninstall_cmd, []).exit_code == 0
    assert state.read_text() == text


def test_uninstall_finds_what_install_wrote_without_its_record(tmp_path, recall_home, monkeypatch):
    """With RECALL_HOME reset (or another one), uninstall said it was done and left recall's MCP
    server registered, Claude Code starting it in every session, its flags and files behind (an
    outside tester's AF02): install keeps a second record, in the user's state folder."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    state = tmp_path / "claude" / ".claude.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"numStartups": 3}, indent=2) + "\n")
    monkeypatch.chdir(repo)
    for scope in ("--user", "--project"):
        assert CliRunner().invoke(install_cmd, [scope, "--skip-check"]).exit_code == 0
    (recall_home / "installed.json").unlink()
    for scope in ("--user", "--project"):
        assert CliRunner().invoke(uninstall_cmd, [scope]).exit_code == 0
    assert json.loads(state.read_text()) == {"numStartups": 3}
    # what install made is gone too, as its second record says (the user's state folder)
    assert not (repo / ".mcp.json").exists() and not (repo / ".claude").exists()
    assert not (tmp_path / "claude" / "settings.json").exists()


@pytest.mark.process
def test_an_install_whose_write_failed_records_nothing_and_names_the_file(tmp_path, recall_home):
    """A long-used ~/.claude.json past a file-size limit: install failed naming "a file under
    RECALL_HOME", and recorded the server as its own anyway, so a later uninstall deleted the
    server the user then registered (an outside tester's AF07)."""
    state = tmp_path / "claude" / ".claude.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"projects": {f"/p/{i}": {"x": "y" * 100} for i in range(40)}}))
    script = f"ulimit -f 2; exec {sys.executable} -m recall.cli install --user --skip-check"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and str(state) in done.stderr, done.stderr
    record = recall_home / "installed.json"
    assert not record.exists() or "mcpServers.recall" not in record.read_text()


def test_with_the_plugin_enabled_install_adds_no_second_hook(tmp_path):
    """The plugin has its own hook and MCP server: `recall install` beside it handed every
    headline over twice (an outside tester's AF04). It adds only what the plugin lacks."""
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"enabledPlugins": {"recall@recall": True}}))
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 0 and "skipped: the recall plugin" in result.output, result.output
    assert ours(json.loads(path.read_text())) == [] and not (tmp_path / "claude" / ".claude.json").exists()
    result = CliRunner().invoke(install_cmd, ["--user", "--skip-check", "--track-reads"])
    assert result.exit_code == 0 and "the read tracker" in result.output, result.output
    settings = json.loads(path.read_text())
    assert ours(settings) == [] and settings["hooks"]["PostToolUse"]


def test_status_names_a_hook_whose_python_is_gone(tmp_path):
    """A venv deleted or rebuilt after install: every message showed the agent a hook error, and
    `recall status` said nothing (an outside tester's AF06)."""
    from helpers.cli import run_cli

    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(parents=True)
    entry = {"type": "command", "command": str(tmp_path / "gone" / "python"),
             "args": ["-E", "-P", "-m", "recall.agents.hook"], "timeout": 5}
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [entry]}]}}))
    said = run_cli("status", check=True).stdout
    assert "agent_hooks" in said and str(tmp_path / "gone" / "python") in said and "recall install" in said, said


def test_installs_at_once_keep_each_others_records(tmp_path, recall_home):
    """The record of what install added was read and written without a lock: installs run at
    once lost each other's, and uninstall left their entries behind (an outside tester's AF03)."""
    recall_home.mkdir(parents=True, exist_ok=True)
    code = ("import sys; from pathlib import Path; from recall.agents.records import state_note\n"
            "for i in range(30): state_note(Path(f'/x/{sys.argv[1]}/{i}'), 'file', True)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)], env={**os.environ}) for n in range(6)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert len(json.loads((recall_home / "installed.json").read_text())) == 6 * 30


def test_install_refuses_a_relative_recall_home(tmp_path, monkeypatch):
    """A relative RECALL_HOME names another folder in each project the agent runs the hook in
    (an outside tester's, stop 56): install says so and writes nothing."""
    monkeypatch.chdir(tmp_path)
    claude = tmp_path / "claude"
    result = CliRunner(env={"RECALL_HOME": "rh"}).invoke(install_cmd, ["--user", "--skip-check"])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "'rh', a relative path" in result.output and '"$PWD/rh"' in result.output, result.output
    assert not claude.exists() and not (tmp_path / "rh").exists()
