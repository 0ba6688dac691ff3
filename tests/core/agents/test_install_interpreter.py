"""The interpreter an installed entry names, after install: a venv rebuilt with an older Python (its
``-P`` an unknown option, exit 2, which every agent reads as "block this prompt"), a venv deleted,
a reinstall from another venv, and an agent started without the RECALL_HOME install ran under (an
outside tester's D5, D6, D7)."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers.cli import run_cli
from recall.agents.install import is_ours

ROOT = Path(__file__).resolve().parents[3]
TOO_OLD = (
    '#!/bin/sh\necho "Unknown option: -P" >&2\necho "usage: python [option] ..." >&2\n'
    'echo "Try python -h for more information." >&2\nexit 2\n'
)


def venv(where: Path) -> Path:
    """A venv of its own whose python runs this checkout's recall (its packages from this one's)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60)
    [packages] = list(where.glob("lib/python*/site-packages"))
    (packages / "main.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return where / "bin" / "python"


def install_from(python: Path, *args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [str(python), "-m", "recall.cli", "install", "--skip-check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def rebuilt_too_old(python: Path) -> None:
    """The venv rebuilt at the same path with a Python that does not know ``-P``."""
    python.unlink()
    python.write_text(TOO_OLD)
    python.chmod(0o755)


def status_lines() -> list[str]:
    return run_cli("status", check=True).stdout.splitlines()


def command_hooks(settings: Path) -> list[dict]:
    data = json.loads(settings.read_text())
    return [h for groups in data["hooks"].values() for g in groups for h in g["hooks"] if h.get("type") == "command"]


@pytest.mark.process
def test_no_installed_hook_can_exit_2_when_its_python_rejects_its_flags(tmp_path, monkeypatch):
    """Claude Code runs a hook's command through its shell, Codex and Gemini CLI too: each guarded line
    exits 1 (a hook error, the message goes through) where the interpreter exits 2 (D6)."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    python = venv(tmp_path / "venv")
    install_from(python, "--user", "--form", "command", "--track-reads")
    install_from(python, "--agent", "codex", "--user")
    install_from(python, "--agent", "gemini", "--user")
    files = [
        tmp_path / "claude" / "settings.json",
        tmp_path / "cx" / "hooks.json",
        tmp_path / "h" / ".gemini" / "settings.json",
    ]
    hooks = [h for f in files for h in command_hooks(f)]
    assert len(hooks) == 7 and all(is_ours(h) or "recall.agents.track" in h["command"] for h in hooks)
    rebuilt_too_old(python)
    for hook in hooks:
        for shell in ("/bin/sh", "/bin/bash"):
            proc = subprocess.run([shell, "-c", hook["command"]], input=b"{}", capture_output=True, timeout=10)
            assert proc.returncode == 1, (hook, proc)
    said = [line for line in status_lines() if line.startswith("agent_hooks:")]
    assert said and all(str(f) in said[0] for f in files) and "Unknown option: -P" in said[0], said
    assert "message still goes through" in said[0] and "recall install" in said[0]


def test_status_says_an_older_unguarded_hook_blocks_every_message(tmp_path):
    """An entry an older install wrote (exec form: its exit status the interpreter's): status says it
    blocks, and asks for the install that writes the guarded line (D6)."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(TOO_OLD)
    python.chmod(0o755)
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    entry = {"type": "command", "command": str(python), "args": ["-E", "-P", "-m", "recall.agents.hook"]}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [entry]}]}}))
    lines = status_lines()
    [said] = [line for line in lines if line.startswith("agent_hooks:")]
    assert str(settings) in said and "exits 2" in said and "erased" in said, said
    assert any(line.startswith("agent_entries:") and str(settings) in line for line in lines)


def test_status_tries_a_python_as_the_agent_starts_it(tmp_path, monkeypatch):
    """From a folder holding a ``recall`` package (a checkout), ``python -c "import recall"`` found that
    one: a python that cannot run recall passed (D13). It is tried with ``-E -P``."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\nfor a; do [ "$a" = -P ] && exit 1; done\nexit 0\n')  # "runs" only without -P
    python.chmod(0o755)
    (tmp_path / "recall").mkdir()
    (tmp_path / "recall" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    entry = {"type": "command", "command": f"{python} -E -P -m recall.agents.hook || exit 1"}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [entry]}]}}))
    assert any(line.startswith("agent_hooks:") and str(settings) in line for line in status_lines())


@pytest.mark.process
def test_a_codex_server_reinstalled_from_another_venv_runs_that_venv(tmp_path, monkeypatch):
    """The second install left ``command`` on the first venv's python (only ``args`` compared), and
    status never read config.toml's server nor OpenCode's plugin (D5)."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    run_cli("install", "--agent", "codex", "--user", "--skip-check", "--form", "mcp_tool", check=True)
    python = venv(tmp_path / "venv")
    done = install_from(python, "--agent", "codex", "--user", "--form", "mcp_tool")
    config = tmp_path / "cx" / "config.toml"
    assert tomllib.loads(config.read_text())["mcp_servers"]["recall"]["command"] == str(python), done
    assert "updated recall's MCP server" in done
    install_from(python, "--agent", "opencode", "--user")
    python.unlink()  # the venv deleted
    [said] = [line for line in status_lines() if line.startswith("agent_hooks:")]
    plugin = tmp_path / "xdg" / "opencode" / "plugins" / "recall.js"
    assert str(config) in said and str(plugin) in said and "it is gone" in said, said


def test_every_entry_install_writes_pins_a_home_that_is_not_the_default(tmp_path, monkeypatch, recall_home):
    """Installed under RECALL_HOME=X, an agent started without it (an IDE, a desktop launcher) read the
    default home and handed nothing over, in silence (D7): every form carries ``--home X``."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    pin = ["--home", str(recall_home)]
    run_cli("install", "--user", "--skip-check", "--form", "command", "--track-reads", check=True)
    hooks = command_hooks(tmp_path / "claude" / "settings.json")
    run_cli("install", "--user", "--skip-check", "--form", "mcp_tool", check=True)
    server = json.loads((tmp_path / "claude" / ".claude.json").read_text())["mcpServers"]["recall"]
    run_cli("install", "--agent", "codex", "--user", "--skip-check", "--form", "mcp_tool", check=True)
    run_cli("install", "--agent", "gemini", "--user", "--skip-check", check=True)
    run_cli("install", "--agent", "opencode", "--user", "--skip-check", check=True)
    hooks += command_hooks(tmp_path / "h" / ".gemini" / "settings.json")
    assert len(hooks) == 5 and all(h["command"].endswith(f"--home {recall_home} || exit 1") for h in hooks), hooks
    assert server["args"][-2:] == pin
    assert tomllib.loads((tmp_path / "cx" / "config.toml").read_text())["mcp_servers"]["recall"]["args"][-2:] == pin
    plugin = (tmp_path / "xdg" / "opencode" / "plugins" / "recall.js").read_text()
    assert json.dumps(pin)[1:-1] in plugin
    assert not [line for line in status_lines() if line.startswith(("agent_entries:", "agent_hooks:"))]
    run_cli("install", "--user", "--skip-check", "--form", "mcp_tool", check=True)  # the same: unchanged
    assert json.loads((tmp_path / "claude" / ".claude.json").read_text())["mcpServers"]["recall"] == server


@pytest.mark.process
def test_the_hook_reads_the_home_pinned_on_its_command_line(tmp_path):
    """Started with ``--home X`` and no RECALL_HOME (an agent launched from a desktop), the hook reads
    X, and makes no default home of its own (D7)."""
    home, pinned = tmp_path / "h", tmp_path / "pinned"
    pinned.mkdir()
    (pinned / "config.toml").write_text('model = "hash"\n')
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    event = json.dumps(
        {"prompt": "how do we roll back a failed deploy?", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    ).encode()
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "recall.agents.hook", "--home", str(pinned)],
        input=event,
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert proc.returncode == 0
    assert (pinned / "hook.json").exists() and not (home / ".local" / "share" / "recall").exists()
