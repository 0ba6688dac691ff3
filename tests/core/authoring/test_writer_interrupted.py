"""A run that ends before its last request (the agent rate-limited or logged out, Ctrl-C, SIGTERM)
keeps what it was answered (an outside tester's crash class 1): each answered batch was kept in
memory only, until every batch was done, and the next run paid again for every request; the error
line said "nothing more written" and Ctrl-C "what was finished is kept", both false. The fake
agent is at the process boundary; the signals go to a real `recall` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.cli import run_cli
from helpers.fake_agent import fake_claude

# Before it answers, the fake counts its calls (the record's lines, this one's included):
# the call FAIL_AT gets a 429, the call HANG_AT says so in a file and waits to be stopped.
_COUNTED = """n = sum(1 for _ in open({record!r}))
if n == int(os.environ.get("FAIL_AT", "0")):
    print(json.dumps({{"type": "result", "subtype": "error", "is_error": True,
                      "result": "API Error: 429 rate_limit_error: This request would exceed the rate limit"}}))
    sys.exit(1)
if n == int(os.environ.get("HANG_AT", "0")):
    open({record!r} + ".hung", "w").close()
    import time
    time.sleep(60)
"""


def _agent(tmp_path, recall_home):
    """The fake claude that counts its calls; one note a batch (a run: 3 notes, 2 requests each, then negatives)."""
    record, env = fake_claude(tmp_path)
    agent = tmp_path / "bin" / "claude"
    agent.write_text(agent.read_text().replace('print(json.dumps({"type"', _COUNTED.format(record=str(record))
                                               + 'print(json.dumps({"type"', 1))
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('model = "hash"\n[questions]\nbatch_notes = 1\n')
    return record, env


def _calls(record) -> int:
    return len(record.read_text().splitlines()) if record.exists() else 0


def _written(folder) -> dict[str, dict]:
    path = folder / "questions.jsonl"
    return {o["note"]: o for o in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


def test_a_run_the_agent_fails_midway_keeps_the_batches_answered_and_the_next_sends_only_the_rest(
        folder, tmp_path, recall_home, hash_model):
    record, env = _agent(tmp_path, recall_home)
    out = run_cli("questions", "run", str(folder), env={**env, "FAIL_AT": "4"})  # the second note's restatements
    assert out.returncode == 1, out.stdout + out.stderr
    assert _calls(record) == 4
    assert "nothing more written" not in out.stderr, out.stderr
    assert "1 note(s)" in out.stderr and "kept" in out.stderr, out.stderr
    assert len(_written(folder)) == 1  # the batch answered whole is in the folder's file already
    assert (recall_home / "questions-bought.json").exists()
    again = run_cli("questions", "run", str(folder), env=env)
    assert again.returncode == 0, again.stderr
    assert _calls(record) - 4 == 5  # the two notes not kept (2 requests each) and the negatives: not 7
    assert len(_written(folder)) == 3 and all(o["questions"] for o in _written(folder).values())


def _start(folder, env, home) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "recall.cli", "questions", "run", str(folder)],
                            env={**os.environ, **env, "RECALL_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.process
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_by_a_signal_keeps_the_batches_answered(folder, tmp_path, recall_home, hash_model, sig):
    record, env = _agent(tmp_path, recall_home)
    proc = _start(folder, {**env, "HANG_AT": "5"}, recall_home)  # two notes answered whole, the third's asked
    hung = tmp_path / "record.jsonl.hung"
    try:
        deadline = time.monotonic() + 120
        while not hung.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hung.exists(), proc.communicate()
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    assert "2 note(s)" in err and "kept" in err, err
    assert len(_written(folder)) == 2
    again = run_cli("questions", "run", str(folder), env=env)
    assert again.returncode == 0, again.stderr
    assert _calls(record) - 5 == 3  # the third note's two requests and the negatives
    assert len(_written(folder)) == 3
