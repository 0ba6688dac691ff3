"""A daemon that answers nothing: stopped (SIGSTOP) or wedged (listening, never reading).

Before, such a daemon cost every message the hook's whole budget, and gave nothing, until
`recall stop` (an outside tester, stop 60). Now the first question that times out starts a
detached check (``recall.daemon.unstick``): a stopped daemon is resumed, one that answers no
ping for ``[daemon] stuck_after_s`` is replaced, a slow one and the user's own foreground one
are left be. Real daemons (hash embedder) in subprocesses, the hook run as Claude Code runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

from helpers.daemon import MATCHING, daemon_pids, pids_where, wait_for, write_config
from helpers.env import env_with
from helpers.paths import PY
from recall.daemon.unstick import stopped
from recall.ipc import client

pytestmark = pytest.mark.process


def run_hook(prompt: str = MATCHING) -> subprocess.CompletedProcess:
    event = json.dumps({"session_id": os.urandom(8).hex(), "transcript_path": "/dev/null", "cwd": "/",
                        "hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode()
    t0 = time.monotonic()
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=event, capture_output=True,
                          env=env_with(), timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 1.5  # the budget (0.3 s) and a Python start: never the stall
    return proc


def answered(proc: subprocess.CompletedProcess) -> bool:
    return b"additionalContext" in proc.stdout


def checks_running(home) -> list[int]:
    wanted = f"RECALL_HOME={home}".encode()
    return pids_where((b"recall.daemon.unstick",), lambda environ: wanted in environ)


def detached_daemon(home) -> int:
    """A daemon as the hook starts it (detached, not --foreground), ready: its pid."""
    assert not answered(run_hook())  # no daemon: this message starts one
    assert wait_for(lambda: (client.read_status() or {}).get("ready") is True, 30)
    status = client.read_status()
    assert status is not None and status["foreground"] is False
    return int(status["pid"])


def log_text(home) -> str:
    path = home / "logs" / "daemon.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_a_stopped_daemon_is_resumed_by_the_next_question(indexed, daemons, probe):
    pid = detached_daemon(indexed)
    assert answered(run_hook())
    os.kill(pid, signal.SIGSTOP)
    try:
        assert not answered(run_hook())  # this one times out, and starts the check
        assert wait_for(lambda: not stopped(pid), 10)
        assert wait_for(lambda: answered(run_hook()), 10)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.read_status()["pid"] == pid  # the same daemon, its model still loaded
    assert " resumed " in log_text(indexed)
    probe.add(inputs=1, faults=1, survived=1)


# A daemon that holds the lock, listens and never reads (deadlocked): its socket accepts a connect
# into the backlog and answers nothing, which SIGCONT does not mend.
WEDGED = textwrap.dedent("""
    import json, os, socket, time
    from recall.daemon.lifecycle import acquire_lock, write_lock_pid
    from recall.ipc import client
    from recall.ipc.code import code_stamp
    from recall.privacy.paths import ensure_private_dir
    ensure_private_dir(client.run_dir())
    fd = acquire_lock(client.lock_path())
    write_lock_pid(fd)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(client.socket_path()))
    s.listen(1)
    status = {"pid": os.getpid(), "socket": str(client.socket_path()), "model": "hash-256", "device": "cpu",
              "transport": "unix", "port": 0, "protocol": client.PROTOCOL, "ready": True,
              "code": code_stamp(), "foreground": False, "started": time.time()}
    client.status_path().write_text(json.dumps(status))
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_daemon_that_answers_no_ping_is_replaced(indexed, daemons, probe):
    write_config(indexed, "[daemon]\nstuck_after_s = 3\n")
    wedged = subprocess.Popen([PY, "-P", "-c", WEDGED], env=env_with(), stdout=subprocess.PIPE,
                              start_new_session=True)
    try:
        assert wedged.stdout is not None and wedged.stdout.readline() == b"ready\n"
        assert not answered(run_hook())  # times out: the check starts
        assert wedged.wait(timeout=20) == -signal.SIGKILL
        assert wait_for(lambda: answered(run_hook()), 30)
    finally:
        if wedged.poll() is None:
            wedged.kill()
    assert client.read_status()["pid"] != wedged.pid
    assert " stuck " in log_text(indexed) and f'"pid": {wedged.pid}' in log_text(indexed)
    probe.add(inputs=1, faults=1, survived=1)


def test_a_slow_daemon_is_left_be(indexed, daemons):
    write_config(indexed, "[daemon]\ndebug_delay_ms = 600\nstuck_after_s = 1\n")  # past the 300 ms budget
    pid = detached_daemon(indexed)
    assert not answered(run_hook())  # late: the check starts, and its ping is answered at once
    assert wait_for(lambda: checks_running(indexed) == [] and (indexed / "run" / "stuck.check").exists(), 15)
    assert client.read_status()["pid"] == pid and daemon_pids(indexed) == [pid]
    assert " stuck " not in log_text(indexed)


def test_the_users_own_foreground_daemon_is_left_be(indexed, daemons):
    write_config(indexed, "[daemon]\nstuck_after_s = 1\n")
    proc = daemons.start()  # `recall serve --foreground`
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        assert not answered(run_hook())
        assert wait_for(lambda: (indexed / "run" / "stuck.check").exists() and checks_running(indexed) == [], 15)
        assert stopped(proc.pid) and proc.poll() is None
    finally:
        os.kill(proc.pid, signal.SIGCONT)
