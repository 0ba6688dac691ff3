"""Run what an agent runs: a hook command with the agent's event JSON on stdin, or an MCP tool
over a real stdio session (the SDK's own client), as Claude Code's mcp_tool hook does.

Shared by test_agents.py and test_plugin.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner

from helpers.env import env_with
from helpers.paths import ROOT

# The events each agent sends, field for field from its documented input schema.
CLAUDE_EVENT = {"session_id": "s-claude", "transcript_path": "/nonexistent.jsonl", "cwd": "/",
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit"}
# codex-rs/hooks/schema/generated/user-prompt-submit.command.input.schema.json (all required)
CODEX_EVENT = {"session_id": "s-codex", "turn_id": "t1", "transcript_path": None, "cwd": "/",
               "hook_event_name": "UserPromptSubmit", "model": "gpt-5-codex", "permission_mode": "default"}
# google-gemini/gemini-cli docs/hooks/reference.md: base fields + BeforeAgent's prompt
GEMINI_EVENT = {"session_id": "s-gemini", "transcript_path": "/nonexistent.json", "cwd": "/",
                "hook_event_name": "BeforeAgent", "timestamp": "2026-11-30T12:00:00Z"}


def event(base: dict, prompt: str, cwd: Path | str, **extra: Any) -> bytes:
    return json.dumps({**base, "cwd": str(cwd), "prompt": prompt, **extra}).encode()


def run_command_hook(entry: dict, stdin: bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Exec form (command + args, no shell: Claude Code) or a shell string (Codex, Gemini)."""
    if isinstance(entry.get("args"), list):
        cmd: Any = [entry["command"], *entry["args"]]
        shell = False
    else:
        cmd, shell = entry["command"], True
    timeout = entry.get("timeout", 5)
    timeout = timeout / 1000 if timeout > 100 else timeout  # Gemini's are milliseconds
    return subprocess.run(cmd, shell=shell, input=stdin, capture_output=True, cwd=cwd,
                          env=env_with(**{"PYTHONPATH": str(ROOT), **env}), timeout=timeout + 10)


def substitute(value: Any, hook_input: dict) -> Any:
    """Claude Code's ``${path}`` substitution in an mcp_tool hook's ``input`` strings."""
    if isinstance(value, str):
        return re.sub(r"\$\{([A-Za-z_][\w.]*)\}", lambda m: str(hook_input.get(m.group(1), "")), value)
    if isinstance(value, dict):
        return {k: substitute(v, hook_input) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, hook_input) for v in value]
    return value


def mcp_calls(command: str, args: list[str], cwd: Path, calls: list[tuple[str, dict]], *,
              env: dict | None = None, errlog: Path | None = None) -> list[dict]:
    """Start the server as a client would and call each (tool, arguments) in turn.

    Returns one dict per call: text (the text contents joined), is_error, ms (the
    request-to-answer time the client saw)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, cwd=str(cwd),
                                   env=env_with(**{"PYTHONPATH": str(ROOT), **(env or {})}))

    async def session() -> list[dict]:
        out = []
        with open(errlog or "/dev/null", "w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for tool, arguments in calls:
                        t0 = time.perf_counter()
                        result = await s.call_tool(tool, arguments)
                        ms = (time.perf_counter() - t0) * 1000
                        text = "".join(getattr(c, "text", "") for c in result.content)
                        out.append({"text": text, "is_error": bool(result.is_error), "ms": ms})
        return out

    return anyio.run(session)


def hook_calls(settings: dict, event_name: str = "UserPromptSubmit") -> list[dict]:
    groups = settings.get("hooks", {}).get(event_name, [])
    return [h for g in groups for h in g.get("hooks", [])]


PY = sys.executable


def plugin_installed_now(python: str) -> str:
    """The env.json a finished setup of the plugin as it is in this checkout writes (its build
    told by its files: ``scripts/recall_plugin.py``), with ``python`` as the installed one."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("recall_plugin", ROOT / "scripts" / "recall_plugin.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    return json.dumps({"version": plugin.plugin_version(), "build": plugin.build_id(),
                       "plugin_time": plugin.plugin_time(), "python": python})



def cli(command, *args: str) -> str:
    """A click command run in this process; its output (the test fails on a non-zero exit)."""
    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 0, result.output
    return result.output
