"""Gemini CLI itself (npm, pinned in agents.py) on a real recall install (`recall install
--agent gemini --project`), offline against the fake Gemini API."""

from __future__ import annotations

import json

import pytest
from agents import ANSWER, BLOCK_HEAD, NOTE, SHORT, gemini_hook_times, run_gemini, write_gemini_settings
from fake_gemini import start

from helpers.daemon import CHITCHAT, MATCHING

pytestmark = pytest.mark.e2e



def turn_parts(body: dict) -> str:
    """The parts of the last user turn: the message, then what BeforeAgent hooks added
    (Gemini CLI appends it as a <hook_context> part)."""
    users = [c for c in body.get("contents", []) if c.get("role") == "user"]
    return json.dumps(users[-1]["parts"], ensure_ascii=False) if users else ""


def test_before_agent_hook_block_only_for_a_matching_message(gemini_exe, scratch, notes):
    scratch.set_up_recall(notes)
    write_gemini_settings(scratch, command=None)
    out = scratch.recall("install", "--agent", "gemini", "--project", "--skip-check")
    assert "settings.json" in out.stdout, out.stdout
    scratch.start_daemon()
    seen, times = [], []
    with start(lambda body: ANSWER) as api:
        for message in (MATCHING, CHITCHAT, SHORT):
            run = run_gemini(gemini_exe, scratch, api.url, message)
            assert run.returncode == 0, run.stderr[-3000:]
            assert run.stdout.strip() == ANSWER
            parts = turn_parts(api.bodies()[-1])
            assert message in parts
            seen.append(BLOCK_HEAD in parts and "<hook_context>" in parts)
            times += gemini_hook_times(run.stderr)
    assert seen == [True, False, False]
    assert NOTE in json.dumps(api.bodies()[0])
    assert len(times) == 3  # the hook ran (and succeeded) for every message


def test_daemon_that_never_starts(gemini_exe, scratch, notes):
    scratch.set_up_recall(notes)
    write_gemini_settings(scratch, command=None)
    scratch.recall("install", "--agent", "gemini", "--project", "--skip-check")
    (scratch.recall_home / "config.toml").write_text('model = "st:/nonexistent/model"\n', encoding="utf-8")
    scratch.extra_env["RECALL_MODEL"] = None
    with start(lambda body: ANSWER) as api:
        run = run_gemini(gemini_exe, scratch, api.url, MATCHING)
    assert run.returncode == 0 and run.stdout.strip() == ANSWER, run.stderr[-3000:]
    parts = turn_parts(api.bodies()[-1])
    assert MATCHING in parts and BLOCK_HEAD not in parts
    assert len(gemini_hook_times(run.stderr)) == 1
