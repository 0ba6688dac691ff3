"""Within one agent session a note handed over is not handed over again for the session's next
``[hook] repeat_after`` messages: an outside tester got the identical headline on each of three
messages about one topic, twice over, in one session. Run as the agents run it: a real daemon,
the hook a new process per message with the agent's event on stdin."""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers.agents import CODEX_EVENT, GEMINI_EVENT, mcp_calls, substitute
from helpers.cli import run_cli
from helpers.daemon import CHITCHAT, MATCHING, wait_for, write_config
from helpers.env import env_with
from helpers.paths import PY
from recall.agents.shared import mcp_tool_entry
from recall.ipc import client

SESSION = "7d3f0c2e-5b1a-4e8e-9f00-c0ffee5e5510"


def event(prompt: str, session: object = SESSION, **extra: object) -> bytes:
    base = {"transcript_path": "/nonexistent.jsonl", "cwd": "/", "hook_event_name": "UserPromptSubmit",
            "prompt": prompt, **extra}
    return json.dumps(base if session is ... else {**base, "session_id": session}).encode()


def hook(stdin: bytes, *args: str) -> str:
    """What the hook printed for one event (it exits 0 and writes nothing on stderr, whatever it is sent)."""
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook", *args], input=stdin, capture_output=True,
                          env=env_with(), timeout=30)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return proc.stdout.decode()


def set_repeat_after(home, n: int) -> None:
    with open(home / "config.toml", "a", encoding="utf-8") as fh:
        fh.write(f"\n[hook]\nrepeat_after = {n}\n")


def ask(session: object = SESSION, prompt: str = MATCHING) -> dict:
    """The daemon's reply to the question the hook sends, over its socket."""
    question = {"cmd": "query", "prompt": prompt, "cwd": "/"}
    return client.request(question if session is ... else {**question, "session": session}, timeout=20)


def every_file_under(home) -> list:
    return [p for p in home.rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.mark.process
def test_a_headline_is_handed_over_once_per_session_and_to_every_other_session(indexed, daemons):
    daemons.start()
    first = hook(event(MATCHING))
    assert "feature-flags" in first  # the default, repeat_after = 10
    assert hook(event(MATCHING)) == ""  # the same session: the agent has it already
    assert hook(event("Feature flags via Unleash: where do I add a new flag?")) == ""  # the same topic
    assert hook(event(MATCHING, session="another-session")) == first  # another session gets it
    reply = ask()  # what the daemon says of the next one in the first session
    assert reply["decision"]["decision"] == "nothing" and reply["decision"]["text"] == ""
    assert reply["decision"]["reason"].startswith("handed over 3 messages ago in this session"), reply
    # Codex and Gemini CLI send their session the same way
    for agent, base in (("codex", CODEX_EVENT), ("gemini", GEMINI_EVENT)):
        stdin = json.dumps({**base, "prompt": MATCHING}).encode()
        assert "feature-flags" in hook(stdin, "--agent", agent)
        assert hook(stdin, "--agent", agent) == ""
    # nothing of any session is written: not its id, in any file of the home, the log included
    for path in every_file_under(indexed):
        data = path.read_bytes()
        for session in (SESSION, "another-session", CODEX_EVENT["session_id"], GEMINI_EVENT["session_id"]):
            assert session.encode() not in data, path
    assert b" INFO query " in (indexed / "logs" / "daemon.log").read_bytes()


@pytest.mark.process
def test_it_comes_back_after_repeat_after_messages_those_that_got_nothing_counted(indexed, daemons):
    set_repeat_after(indexed, 2)
    daemons.start()
    assert "feature-flags" in hook(event(MATCHING))  # message 1
    assert hook(event(CHITCHAT)) == ""  # 2: nothing to say, still a message of the session
    assert hook(event(MATCHING)) == ""  # 3: handed over 2 messages ago
    assert "feature-flags" in hook(event(MATCHING))  # 4: 3 messages ago, past repeat_after: again
    assert hook(event(MATCHING)) == ""  # 5: held back again


@pytest.mark.process
def test_repeat_after_0_hands_it_over_on_every_message(indexed, daemons):
    set_repeat_after(indexed, 0)
    daemons.start()
    first = hook(event(MATCHING))
    assert "feature-flags" in first
    assert hook(event(MATCHING)) == first == hook(event(MATCHING))
    assert client.request({"cmd": "status"})["sessions"] == 0  # nothing kept at all


@pytest.mark.process
@pytest.mark.parametrize("session", [..., None, 7, ["a"], {"id": "a"}, "", "   ", "x" * 100_000, "a\nb",
                                     "${session_id}"],
                         ids=["missing", "null", "number", "list", "object", "empty", "blank", "huge",
                              "control character", "placeholder left"])
def test_a_session_id_that_is_none_is_answered_as_before(indexed, daemons, session):
    daemons.start()
    first = hook(event(MATCHING, session=session))
    assert "feature-flags" in first
    assert hook(event(MATCHING, session=session)) == first  # no session: every message on its own
    assert client.request({"cmd": "status"})["sessions"] == 0
    # the daemon reads what reaches its socket the same way
    assert ask(session)["decision"]["text"] and ask(session)["decision"]["text"]


@pytest.mark.process
def test_thousands_of_sessions_hold_a_bounded_number_the_oldest_dropped(indexed, daemons):
    from recall.daemon.repeats import MAX_SESSIONS

    daemons.start()
    assert ask("first")["decision"]["text"]
    assert not ask("first")["decision"]["text"]
    for i in range(MAX_SESSIONS + 200):
        assert ask(f"s{i}", prompt=CHITCHAT)["ok"]
    assert client.request({"cmd": "status"})["sessions"] == MAX_SESSIONS
    assert ask("first")["decision"]["text"]  # dropped as the least recently asked: handed over anew


@pytest.mark.process
def test_a_message_whose_headlines_were_all_held_back_is_no_injection(indexed, daemons):
    daemons.start()
    assert "feature-flags" in hook(event(MATCHING))
    assert hook(event(MATCHING)) == ""
    log = indexed / "logs" / "daemon.log"
    assert wait_for(lambda: log.read_text(encoding="utf-8").count(" INFO query ") == 2, 10)
    stats = run_cli("log", "--stats")
    assert stats.returncode == 0, stats.stderr
    [row] = [line for line in stats.stdout.splitlines() if "feature-flags" in line]
    assert row.split()[1] == "1", stats.stdout  # injected once, not twice
    from recall.api import Recall
    from recall.ui import views

    page = views.read_injection_log(Recall())
    assert (page.messages, page.silent, len(page.injections)) == (2, 1, 1)
    held = [line for line in log.read_text(encoding="utf-8").splitlines() if '"held": 1' in line]
    assert len(held) == 1 and '"chosen": []' in held[0]


@pytest.mark.process
def test_an_answer_the_hook_could_not_hand_over_is_handed_over_on_the_next_message(indexed, daemons):
    daemons.start()
    proc = subprocess.Popen([PY, "-P", "-m", "recall.agents.hook"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with())
    assert proc.stdout is not None
    proc.stdout.close()  # the agent gave up on the hook's answer: it never got the headline
    proc.communicate(event(MATCHING), timeout=30)
    log = indexed / "logs" / "daemon.log"
    assert wait_for(lambda: " INFO unsent " in log.read_text(encoding="utf-8"), 10)
    assert "feature-flags" in hook(event(MATCHING))
    assert hook(event(MATCHING)) == ""


@pytest.mark.process
def test_the_mcp_tool_hook_passes_the_session_and_is_held_back_the_same_way(indexed, daemons, tmp_path):
    daemons.start()
    entry = mcp_tool_entry()  # what `recall install` and the plugin register
    hook_input = {"session_id": SESSION, "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": MATCHING}
    arguments = substitute(entry["input"], hook_input)
    assert arguments["session_id"] == SESSION
    older = {"prompt": MATCHING, "cwd": "/"}  # an entry an older install wrote: no session
    answers = mcp_calls(PY, ["-P", "-m", "recall.mcp"], tmp_path,
                        [("recall_context", arguments)] * 2 + [("recall_context", older)] * 2
                        + [("recall_context", {**arguments, "session_id": "${session_id}"})] * 2)
    texts = [a["text"] for a in answers]
    assert "feature-flags" in texts[0] and texts[1] == ""
    assert texts[2] == texts[3] == texts[0]  # no session: as before
    assert texts[4] == texts[5] == texts[0]  # a placeholder Claude Code left: no session


@pytest.mark.process
def test_of_several_headlines_only_those_handed_over_lately_are_held_back(indexed, daemons):
    write_config(indexed, "\n[selector]\nheadline_margin = inf\n")  # every headline of the list, for three here
    daemons.start()
    assert hook(event("celery tasks idempotent retry")).count("celery-tasks-idempotent") == 1
    line = json.loads(hook(event("celery queue routing for tasks")))
    block = line["hookSpecificOutput"]["additionalContext"]
    assert "celery-queue-routing" in block and "celery-retry-policy" in block
    assert "celery-tasks-idempotent" not in block  # handed over one message ago: the others still are
    reply = ask(session="another", prompt="celery queue routing for tasks")  # all three elsewhere
    assert [c["id"] for c in reply["decision"]["chosen"]] == ["celery-queue-routing", "celery-retry-policy",
                                                              "celery-tasks-idempotent"]
