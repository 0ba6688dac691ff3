"""The Claude Code plugin shipped at the repository root: its manifests against the documented
schema, and the plugin route run the way Claude Code runs it (SessionStart command, then the
MCP server from .mcp.json and the mcp_tool hook from hooks/hooks.json) against a real daemon."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers.agents import CLAUDE_EVENT, mcp_calls, plugin_installed_now, substitute
from helpers.daemon import CHITCHAT, HASH_CONFIG, MATCHING, Daemons, refreshes_done, wait_for
from helpers.paths import ROOT, SAMPLE_NOTES
from recall.ipc import client
from recall.privacy.claude_memory import memory_dir

pytest.importorskip("mcp")

PLUGIN_JSON = ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE_JSON = ROOT / ".claude-plugin" / "marketplace.json"
HOOKS_JSON = ROOT / "hooks" / "hooks.json"
MCP_JSON = ROOT / ".mcp.json"
SKILL_MD = ROOT / "skills" / "recall" / "SKILL.md"

# --- the documented schema ------------------------------------------------------------------------
# code.claude.com/docs/en/plugins-reference, "Plugin manifest schema": only `name` is required
# (kebab-case, no spaces); metadata fields and component path fields are optional.
PLUGIN_REQUIRED = {"name"}
PLUGIN_ALLOWED = {"name", "version", "description", "author", "homepage", "repository", "license", "keywords",
                  "commands", "agents", "skills", "hooks", "mcpServers", "outputStyles", "lspServers", "userConfig"}
# A userConfig field (Claude Code's plugin manifest schema); the key becomes CLAUDE_PLUGIN_OPTION_<KEY>
# in a hook's environment. No "options": Claude Code 2.1.197 refuses the whole plugin for that key
# (an outside tester, stop 46: `Unrecognized key: "options"`, no hooks, no server, no skill).
OPTION_ALLOWED = {"type", "title", "description", "required", "default", "multiple", "sensitive", "min", "max"}
AUTHOR_ALLOWED = {"name", "email", "url"}
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# code.claude.com/docs/en/plugins/marketplace-reference, "Top-level fields" and "Plugin entries":
# required name (kebab-case), owner (an object with a required name), plugins (a list); each entry
# requires name and source; a relative source starts with "./" and is resolved from the
# marketplace root (the folder holding .claude-plugin/).
MARKETPLACE_REQUIRED = {"name", "owner", "plugins"}
MARKETPLACE_ALLOWED = MARKETPLACE_REQUIRED | {"metadata", "description", "version"}
METADATA_ALLOWED = {"description", "version", "pluginRoot"}
ENTRY_REQUIRED = {"name", "source"}
ENTRY_ALLOWED = ENTRY_REQUIRED | {"description", "version", "author", "homepage", "repository", "license",
                                  "keywords", "category", "tags", "strict", "commands", "agents", "skills",
                                  "hooks", "mcpServers", "outputStyles", "lspServers"}
# code.claude.com/docs/en/hooks: hook events, handler types and each type's required fields;
# `timeout` is in seconds. An mcp_tool hook names a connected server; a plugin's server is
# named plugin:<plugin name>:<server key in the plugin's .mcp.json>.
HOOK_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit",
               "Notification", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "SessionStart",
               "SessionEnd"}
HANDLER_REQUIRED = {"command": {"command"}, "http": {"url"}, "mcp_tool": {"server", "tool"},
                    "prompt": {"prompt"}, "agent": {"prompt"}}
HANDLER_ALLOWED = {"type", "command", "args", "url", "server", "tool", "input", "prompt", "timeout",
                   "statusMessage", "async", "once", "headers", "model"}
# Agent Skills (code.claude.com/docs/en/skills): SKILL.md front matter with `name` (lowercase
# letters, digits, hyphens, at most 64 characters) and `description` (at most 1,024 characters).
SKILL_NAME = re.compile(r"^[a-z0-9-]{1,64}$")


def load(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def test_plugin_manifest_follows_the_schema():
    plugin = load(PLUGIN_JSON)
    assert PLUGIN_REQUIRED <= set(plugin) <= PLUGIN_ALLOWED, set(plugin) - PLUGIN_ALLOWED
    assert KEBAB.match(plugin["name"])
    assert re.match(r"^\d+\.\d+\.\d+", plugin["version"])
    assert set(plugin.get("author", {})) <= AUTHOR_ALLOWED
    # the plugin's version is the package's (the setup keys its environment on it)
    import tomllib

    assert plugin["version"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_plugin_option_asks_once_whether_claude_writes_the_questions():
    options = load(PLUGIN_JSON)["userConfig"]
    for key, field in options.items():
        assert re.match(r"^[A-Za-z_]\w*$", key) and set(field) <= OPTION_ALLOWED
        assert field["type"] == "string"
    said = options["generate_questions"]["description"]
    assert options["generate_questions"]["default"] == "ask" and all(f"{v}:" in said for v in ("yes", "no", "ask"))
    assert "tokens" in said


def test_marketplace_follows_the_schema_and_points_at_the_plugin():
    market = load(MARKETPLACE_JSON)
    assert MARKETPLACE_REQUIRED <= set(market) <= MARKETPLACE_ALLOWED
    assert KEBAB.match(market["name"]) and isinstance(market["owner"].get("name"), str)
    assert set(market.get("metadata", {})) <= METADATA_ALLOWED
    [entry] = market["plugins"]
    assert ENTRY_REQUIRED <= set(entry) <= ENTRY_ALLOWED
    assert entry["source"].startswith("./")
    plugin_root = (MARKETPLACE_JSON.parent.parent / entry["source"]).resolve()
    assert plugin_root == ROOT
    assert entry["name"] == load(plugin_root / ".claude-plugin" / "plugin.json")["name"]


def test_hooks_and_mcp_config_follow_the_schema():
    plugin = load(PLUGIN_JSON)["name"]
    servers = load(MCP_JSON)["mcpServers"]
    for name, server in servers.items():
        assert KEBAB.match(name) and isinstance(server["command"], str) and isinstance(server.get("args", []), list)
        for arg in server.get("args", []):
            for path in re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/(\S+)", arg):
                assert (ROOT / path).is_file(), path
    hooks = load(HOOKS_JSON)["hooks"]
    assert set(hooks) <= HOOK_EVENTS
    for groups in hooks.values():
        for group in groups:
            for handler in group["hooks"]:
                kind = handler["type"]
                assert HANDLER_REQUIRED[kind] <= set(handler) <= HANDLER_ALLOWED
                assert isinstance(handler.get("timeout", 1), int | float)
                if kind == "mcp_tool":
                    prefix, plugin_name, server = handler["server"].split(":")
                    assert (prefix, plugin_name) == ("plugin", plugin) and server in servers
                    assert isinstance(handler.get("input", {}), dict)
                if kind == "command":
                    for path in re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/([^\"\s]+)", handler["command"]):
                        assert (ROOT / path).is_file(), path
    # the prompt hook is the no-spawn one, on the tool recall's server actually has
    [prompt_hook] = hooks["UserPromptSubmit"][0]["hooks"]
    assert prompt_hook["type"] == "mcp_tool" and prompt_hook["tool"] == "recall_context"
    assert prompt_hook["input"]["prompt"] == "${prompt}"


def test_skill_front_matter():
    text = SKILL_MD.read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert SKILL_NAME.match(front["name"]) and 0 < len(front["description"]) <= 1024
    assert "recall_search" in text and "--repo" in text


# --- the plugin route, as Claude Code runs it ------------------------------------------------------


def expand(text: str, env: dict) -> str:
    """Claude Code substitutes ${CLAUDE_PLUGIN_ROOT} / ${CLAUDE_PLUGIN_DATA} in hook commands and
    MCP server configs (and exports both to those processes)."""
    return re.sub(r"\$\{(CLAUDE_PLUGIN_(?:ROOT|DATA))\}", lambda m: env[m.group(1)], text)


@pytest.fixture
def plugin_env(tmp_path, hash_model, monkeypatch):
    """A scratch project with memory notes, an empty plugin data folder, and an environment that
    uses this checkout's Python (RECALL_PLUGIN_PYTHON) instead of creating a venv from PyPI."""
    project = tmp_path / "scratch-project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    shutil.copytree(SAMPLE_NOTES, memory_dir(project))  # this project's Claude Code memory
    data = tmp_path / "plugin-data"
    (data / "home").mkdir(parents=True)
    (data / "home" / "config.toml").write_text(HASH_CONFIG)  # thresholds for the hash model
    env = {"CLAUDE_PLUGIN_ROOT": str(ROOT), "CLAUDE_PLUGIN_DATA": str(data),
           "RECALL_PLUGIN_PYTHON": os.path.abspath(sys.executable), "PYTHONPATH": str(ROOT)}
    monkeypatch.setenv("RECALL_HOME", str(data / "home"))  # for this test's own client calls
    daemons = Daemons(data / "home", tmp_path)
    yield {"project": project, "data": data, "env": env}
    refreshes_done(data)  # a session start's background refresh starts a daemon: not after the kill
    daemons.kill_all()


@pytest.mark.process
def test_plugin_first_run_sets_up_and_then_answers_without_a_process_per_message(plugin_env, tmp_path):
    project, data, env = plugin_env["project"], plugin_env["data"], plugin_env["env"]
    hooks = load(HOOKS_JSON)["hooks"]
    [start] = hooks["SessionStart"][0]["hooks"]
    start_event = json.dumps({**CLAUDE_EVENT, "hook_event_name": "SessionStart", "source": "startup",
                              "cwd": str(project)}).encode()
    t0 = time.monotonic()
    proc = subprocess.run(expand(start["command"], env), shell=True, input=start_event, capture_output=True,
                          cwd=project, env={**os.environ, **env}, timeout=start["timeout"])
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < start["timeout"]  # never blocks the session
    message = json.loads(proc.stdout)["systemMessage"]
    assert "first run" in message and str(data) in message

    # The setup runs in the background: index, then the daemon.
    assert wait_for(lambda: (data / "env.json").exists(), 120), (data / "setup.log").read_text()
    assert client.wait_until_ready(timeout_s=60) is not None, (data / "setup.log").read_text()

    server = load(MCP_JSON)["mcpServers"]["recall"]
    [prompt_hook] = hooks["UserPromptSubmit"][0]["hooks"]
    calls = [(prompt_hook["tool"], substitute(prompt_hook["input"], {**CLAUDE_EVENT, "cwd": str(project),
                                                                     "prompt": p}))
             for p in (MATCHING, CHITCHAT)]
    matched, chit = mcp_calls(server["command"], [expand(a, env) for a in server["args"]], project, calls,
                              env=env, errlog=tmp_path / "plugin-mcp.err")
    assert not matched["is_error"] and "Feature flags via Unleash" in matched["text"]
    assert chit["text"] == ""
    # A later session start re-indexes in the background and says nothing; a daemon that is not
    # running (a reboot, or idle past daemon.idle_exit_hours) is started then, while the user types,
    # not by the session's first message, which would get nothing while it loads (stop 60).
    client.request({"cmd": "stop"}, timeout=10)
    assert wait_for(lambda: client.lock_holder() is None, 30)
    again = subprocess.run(expand(start["command"], env), shell=True, input=start_event, capture_output=True,
                           cwd=project, env={**os.environ, **env}, timeout=start["timeout"])
    assert again.returncode == 0 and again.stdout == b""
    assert client.wait_until_ready(timeout_s=60) is not None, "no daemon after a later session start"


@pytest.mark.process
def test_plugin_server_before_setup_serves_a_stand_in_that_answers_nothing(plugin_env):
    project, data, env = plugin_env["project"], plugin_env["data"], plugin_env["env"]
    env = {**env, "RECALL_PLUGIN_PYTHON": str(data / "no-such-python")}  # a setup that cannot finish
    server = load(MCP_JSON)["mcpServers"]["recall"]
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "recall_context", "arguments": {"prompt": "a message"}}}]
    stdin = "".join(json.dumps(r) + "\n" for r in requests).encode() + b"not json\n"
    proc = subprocess.run([server["command"], *(expand(a, env) for a in server["args"])], input=stdin,
                          capture_output=True, cwd=project, env={**os.environ, **env}, timeout=30)
    assert proc.returncode == 0 and b"setting up" in proc.stderr
    replies = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [r.get("id") for r in replies] == [1, 2, 3, None]
    assert replies[0]["result"]["serverInfo"]["name"] == "recall"
    assert [t["name"] for t in replies[1]["result"]["tools"]] == ["recall_context"]
    assert replies[2]["result"]["content"] == [{"type": "text", "text": ""}]
    assert replies[3]["error"]["code"] == -32700
    assert wait_for(lambda: "setup failed" in (data / "setup.log").read_text()
                    if (data / "setup.log").exists() else False, 30)
    assert not (data / "env.json").exists()


def test_search_command_front_matter_and_what_it_calls():
    """/recall:search: a plugin command file (commands/search.md) whose arguments become the
    query of the MCP tool the server really has, with the CLI as the fallback."""
    text = (ROOT / "commands" / "search.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert set(front) <= {"description", "argument-hint", "allowed-tools", "model", "disable-model-invocation"}
    assert front["description"] and front["argument-hint"]
    assert "$ARGUMENTS" in text and "`recall_search`" in text and "cli search" in text
    from recall.cli import main

    assert "search" in main.commands
    assert "def recall_search(" in (ROOT / "recall" / "mcp" / "server.py").read_text(encoding="utf-8")


def test_every_command_the_plugin_tells_the_agent_to_run_prints_for_an_agent():
    """What the skill and the commands have Claude run reaches Claude as the MCP tools' answers do
    (``--for-agent``: one line per string, no markup), never the terminal view, which prints a
    note's name as written (stop 41: the skill's fallback was `cli query --explain`)."""
    for path in (SKILL_MD, *sorted((ROOT / "commands").glob("*.md"))):
        runs = re.findall(r"recall_plugin\.py\" cli (\w+)([^\n]*)", path.read_text(encoding="utf-8"))
        assert runs or path != SKILL_MD, path
        for command, rest in runs:
            # the words on stdin: a command line is readable by every user in /proc (stop 46)
            assert command in ("search", "query") and "--for-agent" in rest and rest.endswith(f" - <<'{TEXT_END}'"), (
                path, command, rest)


TEXT_END = "RECALL_TEXT_END"


def test_the_shell_fallback_passes_the_users_text_whole(tmp_path):
    """The fallback's here-document ended at a line reading `EOF`: a pasted log with one ran what
    came after it as shell commands (an outside tester's, stop 57). Its end word is one no text
    holds by chance, and the agent is told to pick another where it does."""
    text = "why does the deploy fail?\nEOF\ntouch pwned\n'EOF'"
    for path in (SKILL_MD, ROOT / "commands" / "search.md"):
        source = path.read_text(encoding="utf-8")
        assert f"reads exactly {TEXT_END}" in source, path
        block = re.search(r"```sh\n(.*?)```", source, re.S).group(1)
        script = re.sub(r"python3 \S+ cli \w+[^\n]*- <<", "cat <<", block)
        script = re.sub(r"^ *(what to look for|<the text>)$", lambda m: text, script, flags=re.M)
        script = "\n".join(line.strip() for line in script.splitlines())
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=10)
        assert out.returncode == 0 and out.stdout.count(text + "\n") == script.count("cat <<"), (path, out)
        assert not (tmp_path / "pwned").exists()


# --- the plugin repairs its own setup and says why (stop 46, an outside tester) -----------------

SCRIPT = ROOT / "scripts" / "recall_plugin.py"


def _plugin(command: str, env: dict, *args: str, event: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), command, *args], input=json.dumps(event or {}).encode(),
                          capture_output=True, env={**os.environ, **env}, timeout=120)


def _said(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["systemMessage"]


def test_a_failed_setup_is_said_at_the_next_session_start_with_its_repair_and_tried_again(plugin_env):
    data, env = plugin_env["data"], {**plugin_env["env"], "RECALL_PLUGIN_PYTHON": "/nonexistent/python3"}
    assert _plugin("setup", env, str(plugin_env["project"])).returncode == 1
    failed = (data / "setup.failed").read_text()
    assert "the first index failed" in failed and "setup.log" in failed
    said = _said(_plugin("session-start", env, event={"cwd": str(plugin_env["project"])}))
    assert said.startswith("recall: the last setup failed: the first index failed") and "again" in said, said
    assert oct((data / "setup.failed").stat().st_mode & 0o777) == "0o600"


def test_a_data_folder_recall_cannot_use_is_said_and_the_server_still_answers(plugin_env, tmp_path):
    env = {**plugin_env["env"], "CLAUDE_PLUGIN_DATA": str(tmp_path / "a-file")}
    (tmp_path / "a-file").write_text("not a folder")
    said = _said(_plugin("session-start", env))
    assert "recall cannot use its data folder" in said and "start a new session" in said
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}}]
    served = subprocess.run([sys.executable, str(SCRIPT), "mcp"], input=(json.dumps(requests[0]) + "\n").encode(),
                            capture_output=True, env={**os.environ, **env}, timeout=60)
    assert served.returncode == 0 and json.loads(served.stdout)["result"]["serverInfo"]["name"] == "recall"


def test_an_update_keeps_the_installed_version_answering_until_the_new_one_is_installed(plugin_env):
    data, env = plugin_env["data"], {**plugin_env["env"], "RECALL_PLUGIN_PYTHON": "/nonexistent/python3"}
    (data / "env.json").write_text(json.dumps({"version": "0.0.1", "python": sys.executable}))
    (data / "setup.failed").write_text("pip install (is the package registry reachable?) failed (exit 1)")
    said = _said(_plugin("session-start", env, event={"cwd": str(plugin_env["project"])}))
    assert "installing version" in said and "answers meanwhile" in said and "last try failed" in said
    status = _plugin("cli", {**env}, "status")
    assert status.returncode == 0 and b"model" in status.stdout, status.stderr


def test_an_update_with_the_same_version_string_is_installed(plugin_env):
    """The plugin's version read "0.1.0" through every change, and the setup compared it alone:
    an update was never installed (stop 47, tester S's 07). Its build (its files) is compared."""
    data, env = plugin_env["data"], {**plugin_env["env"], "RECALL_PLUGIN_PYTHON": "/nonexistent/python3"}
    version = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())["version"]
    (data / "env.json").write_text(json.dumps({"version": version, "build": "0" * 16, "plugin_time": 0,
                                               "python": sys.executable}))
    said = _said(_plugin("session-start", env, event={"cwd": str(plugin_env["project"])}))
    assert "installing version" in said and "build 00000000" in said, said


def test_an_older_plugin_beside_a_newer_one_uses_the_newer_install_instead_of_reinstalling(plugin_env):
    """Two plugin versions open at once (an old session's /clear after an update) each
    installed itself in turn into the one venv, for good (stop 47, tester Q's 11): a session of
    the older version now uses the newer one installed, and starts no setup."""
    data, env = plugin_env["data"], {**plugin_env["env"], "RECALL_PLUGIN_PYTHON": "/nonexistent/python3"}
    (data / "env.json").write_text(json.dumps({"version": "0.1.0", "build": "0" * 16, "plugin_time": time.time() + 3600,
                                               "python": sys.executable}))
    said = _plugin("session-start", env, event={"cwd": str(plugin_env["project"])})
    assert said.returncode == 0 and b"installing" not in said.stdout, said.stdout
    time.sleep(3)  # a setup started would have failed by now: its Python does not exist
    assert not (data / "setup.failed").exists(), (data / "setup.failed").read_text()
    assert json.loads((data / "env.json").read_text())["build"] == "0" * 16


@pytest.mark.process
def test_the_option_reaches_config_toml_where_a_running_daemon_reads_it(plugin_env):
    data, env = plugin_env["data"], plugin_env["env"]
    (data / "env.json").write_text(plugin_installed_now(sys.executable))
    env = {**env, "CLAUDE_PLUGIN_OPTION_GENERATE_QUESTIONS": "no"}
    assert _plugin("session-start", env, event={"cwd": str(plugin_env["project"])}).returncode == 0
    config = data / "home" / "config.toml"
    assert wait_for(lambda: 'generate = "off"' in config.read_text(), 60), config.read_text()
    assert wait_for(lambda: (data / "option.applied").exists(), 30) and (data / "option.applied").read_text() == "no"


def test_a_venv_half_built_or_left_by_its_python_is_built_again(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("recall_plugin", SCRIPT)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    data = tmp_path / "data"
    (data / "venv" / "bin").mkdir(parents=True)
    (data / "venv" / "bin" / "python").symlink_to(tmp_path / "a-python-removed-since")
    ran: list[list[str]] = []
    plugin._fresh_venv(data, data / "venv" / "bin" / "python", ran.append)
    assert not (data / "venv").exists() and ran == [[sys.executable, "-P", "-m", "venv", str(data / "venv")]]

    def no_ensurepip(cmd):
        (data / "venv" / "bin").mkdir(parents=True)
        raise subprocess.CalledProcessError(1, cmd)

    with pytest.raises(plugin.Failed, match="apt install python3-venv"):
        plugin._fresh_venv(data, data / "venv" / "bin" / "python", no_ensurepip)
    assert not (data / "venv").exists()  # the next try starts clean


def test_the_session_start_hook_says_so_when_there_is_no_python3():
    [start] = load(HOOKS_JSON)["hooks"]["SessionStart"][0]["hooks"]
    env = {"CLAUDE_PLUGIN_ROOT": str(ROOT), "PATH": "/nonexistent"}
    proc = subprocess.run(expand(start["command"], env), shell=True, executable="/bin/sh", input=b"{}",
                          capture_output=True, env=env, timeout=10)
    assert proc.returncode == 0 and "needs python3" in json.loads(proc.stdout)["systemMessage"]


def test_a_venv_whose_python_cannot_import_recall_any_more_is_set_up_again(plugin_env, tmp_path):
    """An outside tester's venv/bin/python3 linked to a /usr/bin/python3 upgraded to another
    version: env.json and the link were there, the server exited 1, and nothing set it up again."""
    data, env = plugin_env["data"], {**plugin_env["env"], "RECALL_PLUGIN_PYTHON": "/nonexistent/python3"}
    swapped = tmp_path / "python3"
    swapped.write_text("#!/bin/sh\nexit 1\n")  # a Python that has no recall
    swapped.chmod(0o755)
    version = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())["version"]
    (data / "env.json").write_text(json.dumps({"version": version, "python": str(swapped)}))
    said = _said(_plugin("session-start", env, event={"cwd": str(plugin_env["project"])}))
    assert "setting up in the background" in said, said
    served = subprocess.run([sys.executable, str(SCRIPT), "mcp"], input=b"", capture_output=True,
                            env={**os.environ, **env}, timeout=60)
    assert served.returncode == 0 and b"setting up" in served.stderr  # the stand-in, not an exit


def test_the_setup_builds_recall_from_a_copy_and_leaves_the_plugin_folder_as_it_was(tmp_path):
    """Building in the plugin's folder wrote build/ and an egg-info into it, and failed where it
    is read-only (an outside tester, stop 46). The copy holds what the package is built from."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("recall_plugin", SCRIPT)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    src = plugin._build_source(tmp_path / "data")
    assert src.parent == tmp_path / "data" and oct(src.stat().st_mode & 0o777) == "0o700"
    assert sorted(p.name for p in src.iterdir()) == ["README.md", "pyproject.toml", "recall", "recall_eval"]
    assert (src / "recall" / "config" / "default_config.toml").is_file()
    assert "_build_source(data)" in SCRIPT.read_text() and 'f"{ROOT}[mcp]"' not in SCRIPT.read_text()


@pytest.mark.process
def test_a_session_start_says_when_a_manual_install_doubles_the_plugins_hook(plugin_env, tmp_path):
    """`recall install` run before the plugin was enabled: both hooks answered each message, so
    every headline reached Claude twice (an outside tester's AF04). The plugin says so at each
    session start, with the repair, until it is made."""
    data, env, project = plugin_env["data"], plugin_env["env"], plugin_env["project"]
    (data / "env.json").write_text(plugin_installed_now(sys.executable))
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    env = {**env, "CLAUDE_CONFIG_DIR": str(config)}
    said = _plugin("session-start", env, event={"cwd": str(project)})
    assert said.returncode == 0 and b"twice" not in said.stdout, said.stdout
    manual = {"type": "mcp_tool", "server": "recall", "tool": "recall_context", "input": {"prompt": "${prompt}"}}
    (config / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [manual]}]}}))
    said = _plugin("session-start", env, event={"cwd": str(project)})
    message = json.loads(said.stdout)["systemMessage"]
    assert "twice" in message and "recall uninstall" in message and str(config / "settings.json") in message


@pytest.mark.process
@pytest.mark.parametrize("command", ["session-start", "mcp"])
def test_the_setup_runs_no_module_of_the_project_folder(tmp_path, command):
    """An outside tester's H2: the setup ran ``venv/bin/python -m pip`` (and ``-m venv``) in the
    project folder Claude Code opened, without ``-P``: a ``pip/`` package there (another user's
    checkout) ran as the user at the first session and at every update. The venv here stands in
    for the real one (no network): its own pip only leaves a mark."""
    data, project = tmp_path / "data", tmp_path / "project"
    project.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(data / "venv")], check=True, cwd=tmp_path)
    [site] = (data / "venv" / "lib").glob("python3*/site-packages")
    (site / "pip").mkdir()
    (site / "pip" / "__init__.py").write_text("")
    (site / "pip" / "__main__.py").write_text(f"open({str(tmp_path / 'venv-pip-ran')!r}, 'w').close()\n"
                                              "raise SystemExit(1)\n")
    (project / "pip").mkdir()
    (project / "pip" / "__init__.py").write_text("")
    canary = tmp_path / "project-pip-ran"
    (project / "pip" / "__main__.py").write_text(f"open({str(canary)!r}, 'w').close()\nraise SystemExit(1)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RECALL_PLUGIN_PYTHON", "PYTHONPATH")}
    env |= {"CLAUDE_PLUGIN_ROOT": str(ROOT), "CLAUDE_PLUGIN_DATA": str(data)}
    subprocess.run([sys.executable, str(SCRIPT), command], input=json.dumps({"cwd": str(project)}).encode(),
                   capture_output=True, env=env, cwd=project, timeout=60)
    assert wait_for(lambda: (data / "setup.failed").exists(), 60), (data / "setup.log").read_text()
    assert not canary.exists(), (data / "setup.log").read_text()
    assert (tmp_path / "venv-pip-ran").exists(), (data / "setup.log").read_text()  # the venv's own pip ran
