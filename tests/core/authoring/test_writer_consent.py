"""The consent as the user gives it now, wherever the writer is started from (an outside
tester's, stop 58): the daemon's trigger read its startup settings, and `recall questions` said
"agent: none on PATH" with the agent on PATH while the choice was "off"."""

from __future__ import annotations

import time

import pytest

from helpers.cli import run_cli
from helpers.fake_agent import fake_claude
from helpers.notes import write_note


def _config(recall_home, extra: str = "") -> None:
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('model = "hash"\n' + extra)


def test_off_says_so_and_which_agent_would_write_them(folder, tmp_path, recall_home, hash_model):
    record, env = fake_claude(tmp_path)
    env.pop("RECALL_QUESTIONS_GENERATE")
    _config(recall_home, '[questions]\ngenerate = "off"\n')
    out = run_cli("questions", env=env)
    first = out.stdout.splitlines()[0]
    assert "none on PATH" not in first and first.startswith("generate = off: off") and "claude (" in first, first


def test_a_background_run_that_finds_consent_off_is_no_failure(folder, tmp_path, recall_home, hash_model):
    """A run started before `recall questions off` refuses: `recall questions` said "the last run
    in the background failed: [questions] generate is 'off'" as if the user's choice were an error."""
    record, env = fake_claude(tmp_path)
    env.pop("RECALL_QUESTIONS_GENERATE")
    _config(recall_home, '[questions]\ngenerate = "off"\n')
    ran = run_cli("questions", "run", "--indexed", "--quiet", env={**env, "RECALL_GENERATING": "1"})
    assert ran.returncode == 0 and "nothing is sent" in ran.stderr, ran.stderr
    (recall_home / "questions.log").write_text(ran.stdout + ran.stderr)  # where a background run writes
    assert "failed" not in run_cli("questions", env=env).stdout and not record.exists()


def _wait(check, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return check()


@pytest.mark.process
def test_the_daemon_starts_runs_as_the_consent_stands_now(folder, tmp_path, recall_home, hash_model, daemons):
    """With a daemon running, `recall questions on` started nothing at the next saves until it
    restarted; after `recall questions off` each save started a run that refused, said as a failure."""
    record, env = fake_claude(tmp_path)
    env.pop("RECALL_QUESTIONS_GENERATE")
    _config(recall_home, "[watch]\nenabled = true\ndebounce_ms = 50\n")
    assert run_cli("index", str(folder), env=env).returncode == 0
    daemons.start(**env)
    assert run_cli("questions", "on", "--agent", "claude", env=env).returncode == 0
    write_note(folder, "saved-later", "Retries", "Retry idempotent calls only", "Never retry a POST blindly.")
    assert _wait(lambda: record.exists() and "saved-later" in record.read_text(), 30), "no run after `on`"
    assert _wait(lambda: "indexed:" in (recall_home / "questions.log").read_text(), 30)
    asked = len(record.read_text().splitlines())
    assert run_cli("questions", "off", env=env).returncode == 0
    write_note(folder, "saved-after-off", "Timeouts", "Every call has a timeout", "Ten seconds by default.")
    time.sleep(3)
    assert len(record.read_text().splitlines()) == asked
    assert "Error" not in (recall_home / "questions.log").read_text()
    assert "failed" not in run_cli("questions", env=env).stdout
