"""An answer the hook could not hand over is no injection: the agent closed the hook's stdout,
or stopped reading it (the write fails with EPIPE). `recall log --stats` and the page counted
it as injected; the daemon's log now says it never reached the agent (the hook tells the
daemon, a second message only on that failure)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from helpers.cli import run_cli
from helpers.daemon import MATCHING, wait_for
from helpers.env import env_with
from helpers.paths import PY


def event(prompt: str) -> bytes:
    return json.dumps({"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": "/",
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode()


def _closed_stdout():
    os.close(1)


def _run_hook(how: str) -> subprocess.CompletedProcess | int:
    """The hook on a matching message, its stdout as ``how`` says: a pipe read to the end
    ("read"), a pipe the agent closed before the answer came ("broken pipe"), none at all
    ("closed")."""
    cmd = [PY, "-P", "-m", "recall.agents.hook"]
    if how == "read":
        return subprocess.run(cmd, input=event(MATCHING), capture_output=True, env=env_with(), timeout=30)
    if how == "closed":
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with(),
                                preexec_fn=_closed_stdout)
    else:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env_with())
        assert proc.stdout is not None
        proc.stdout.close()  # the agent gave up on the hook's answer
    _, err = proc.communicate(event(MATCHING), timeout=30)
    assert err == b"", err
    return proc.returncode


def _queries(home) -> list[str]:
    log = home / "logs" / "daemon.log"
    return [x for x in log.read_text(encoding="utf-8").splitlines() if " INFO query " in x] if log.exists() else []


@pytest.mark.process
@pytest.mark.parametrize("how", ["broken pipe", "closed"])
def test_an_answer_the_hook_could_not_write_is_not_counted_as_injected(indexed, daemons, how):
    daemons.start()
    assert _run_hook(how) == 0  # fail open: exit 0, nothing said
    assert wait_for(lambda: len(_queries(indexed)) == 1, 10)
    log = indexed / "logs" / "daemon.log"
    # the hook's word reaches the daemon after its answer was logged: waited for, within a bound
    assert wait_for(lambda: "nothing injected yet" in run_cli("log", "--stats").stderr, 5), log.read_text("utf-8")
    stats = run_cli("log", "--stats")
    assert stats.returncode == 0 and "feature-flags" not in stats.stdout, stats.stdout
    assert " INFO unsent " in log.read_text(encoding="utf-8")  # `recall log` says it too
    # the page counts the same way: one message searched, none got notes
    from recall.api import Recall
    from recall.ui import views

    page = views.read_injection_log(Recall())
    assert (page.messages, page.silent, page.injections) == (1, 1, [])
    assert MATCHING not in log.read_text(encoding="utf-8")  # the message is never written


@pytest.mark.process
def test_an_answer_the_agent_read_is_counted_once_and_no_second_message_is_sent(indexed, daemons):
    daemons.start()
    proc = _run_hook("read")
    assert isinstance(proc, subprocess.CompletedProcess) and b"additionalContext" in proc.stdout
    assert wait_for(lambda: len(_queries(indexed)) == 1, 10)
    time.sleep(0.2)
    assert " INFO unsent " not in (indexed / "logs" / "daemon.log").read_text(encoding="utf-8")
    stats = run_cli("log", "--stats")
    assert stats.returncode == 0
    rows = [line.split() for line in stats.stdout.splitlines()[1:]]
    assert [r[:3] for r in rows] == [["feature-flags-unleash", "1", "0"]], stats.stdout
