"""Codex CLI itself (npm, pinned in agents.py) on a real recall install (`recall install
--agent codex`), offline against the fake Responses API."""

from __future__ import annotations

import json

import pytest
from agents import ANSWER, BLOCK_HEAD, NOTE, SHORT, CodexAppServer, run_codex_exec, write_codex_config
from fake_responses import start

from helpers.daemon import CHITCHAT, MATCHING

pytestmark = pytest.mark.e2e



def developer_context(body: dict) -> list[str]:
    """The developer messages of one Responses request (where Codex puts hook context)."""
    return [c.get("text", "") for item in body.get("input", []) if item.get("role") == "developer"
            for c in item.get("content", []) if isinstance(c, dict)]


def with_block(body: dict) -> bool:
    return any(BLOCK_HEAD in t for t in developer_context(body))


def set_up(scratch, notes, url: str) -> None:
    scratch.set_up_recall(notes)
    write_codex_config(scratch, url)
    out = scratch.recall("install", "--agent", "codex", "--skip-check")
    assert "hooks.json" in out.stdout, out.stdout
    scratch.start_daemon()


def test_untrusted_hook_is_skipped_then_trusted_hook_hands_over_the_block(codex_exe, scratch, notes):
    """Why the hook did not fire under `codex exec` in a first try: Codex runs a user hook
    only once trusted (by hash) and skips an untrusted one without a word. Trusted the way
    its /hooks screen does it, the block reaches the model for a matching message only."""
    with start(lambda body: ANSWER) as api:
        set_up(scratch, notes, api.url)
        untrusted = run_codex_exec(codex_exe, scratch, MATCHING)
        assert untrusted.returncode == 0 and ANSWER in untrusted.stdout, untrusted.stderr
        assert not with_block(api.bodies()[-1]) and "hook: UserPromptSubmit" not in untrusted.stderr

        server = CodexAppServer(codex_exe, scratch)
        try:
            before = server.hooks(scratch.project)
            hooks = server.trust_all(scratch.project)
        finally:
            server.close()
        # two hooks: the prompt hook and, under SessionStart, the daemon's early start (recall install)
        assert [h["trustStatus"] for h in before] == ["untrusted", "untrusted"]
        assert [h["trustStatus"] for h in hooks] == ["trusted", "trusted"]
        assert all("recall.agents.hook --agent codex" in h["command"] for h in hooks)
        config = (scratch.home / ".codex" / "config.toml").read_text()
        assert all(f'trusted_hash = "{h["currentHash"]}"' in config for h in hooks)

        seen = []
        for message in (MATCHING, CHITCHAT, SHORT):
            out = run_codex_exec(codex_exe, scratch, message)
            assert out.returncode == 0 and ANSWER in out.stdout, out.stderr
            assert "hook: UserPromptSubmit Completed" in out.stderr
            body = api.bodies()[-1]
            assert message in json.dumps(body, ensure_ascii=False)
            seen.append(with_block(body))
    assert seen == [True, False, False]
    assert NOTE in json.dumps(api.bodies()[-3])


def test_hook_time_as_codex_reports_it(codex_exe, scratch, notes):
    """Through Codex's app server (its IDE client's protocol): each turn's hook run, with
    Codex's own durationMs, and the context entry only for the matching message."""
    with start(lambda body: ANSWER) as api:
        set_up(scratch, notes, api.url)
        server = CodexAppServer(codex_exe, scratch)
        try:
            server.trust_all(scratch.project)
            turns = server.turns(scratch.project, [MATCHING, CHITCHAT])
        finally:
            server.close()
    starts = [[r for r in t["hooks"] if r["eventName"] != "userPromptSubmit"] for t in turns]
    runs = [[r for r in t["hooks"] if r["eventName"] == "userPromptSubmit"] for t in turns]
    assert [len(r) for r in runs] == [1, 1], turns
    # the thread's start ran the daemon's early start once, which printed nothing (no context entry)
    assert [[(r["eventName"], r["status"]) for r in s] for s in starts] == [[("sessionStart", "completed")], []], starts
    assert not [e for e in starts[0][0]["entries"] if e["kind"] == "context"]
    assert all(r[0]["status"] == "completed" and isinstance(r[0]["durationMs"], int) for r in runs)
    contexts = [[e["text"] for e in r[0]["entries"] if e["kind"] == "context"] for r in runs]
    assert BLOCK_HEAD in contexts[0][0] and contexts[1] == []
    # one thread: the second request repeats the first turn's block, and adds none
    assert [sum(BLOCK_HEAD in t for t in developer_context(b)) for b in api.bodies()] == [1, 1]


def test_daemon_killed_between_two_turns(codex_exe, scratch, notes):
    """Kill -9 the daemon between two turns of one thread: the second message still
    reaches the model, the turn completes without an error, the hook run completes."""
    second = "and how are feature flags named in Unleash?"
    killed = []

    def kill(i: int) -> None:
        killed.extend(scratch.daemon_pids())
        scratch.kill_daemons()

    with start(lambda body: ANSWER) as api:
        set_up(scratch, notes, api.url)
        server = CodexAppServer(codex_exe, scratch)
        try:
            server.trust_all(scratch.project)
            turns = server.turns(scratch.project, [MATCHING, second], between=kill)
        finally:
            server.close()
    assert killed
    assert [(t["status"], t["error"]) for t in turns] == [("completed", None)] * 2
    prompt_runs = [[r["status"] for r in t["hooks"] if r["eventName"] == "userPromptSubmit"] for t in turns]
    assert prompt_runs == [["completed"]] * 2
    assert second in json.dumps(api.bodies()[-1], ensure_ascii=False)


def test_daemon_that_never_starts(codex_exe, scratch, notes):
    """No daemon can start: the message still reaches the model and the answer comes back."""
    with start(lambda body: ANSWER) as api:
        set_up(scratch, notes, api.url)
        scratch.kill_daemons()
        (scratch.recall_home / "config.toml").write_text('model = "st:/nonexistent/model"\n', encoding="utf-8")
        scratch.extra_env["RECALL_MODEL"] = None
        server = CodexAppServer(codex_exe, scratch)
        try:
            server.trust_all(scratch.project)
        finally:
            server.close()
        out = run_codex_exec(codex_exe, scratch, MATCHING)
    assert out.returncode == 0 and ANSWER in out.stdout, out.stderr
    assert "hook: UserPromptSubmit Completed" in out.stderr
    assert not with_block(api.bodies()[-1]) and MATCHING in json.dumps(api.bodies()[-1])


def test_mcp_tool_form_is_called_on_user_prompt_submit(codex_exe, scratch, notes):
    """`recall install --agent codex --form mcp_tool`: Codex 0.171.0 calls the tool of the
    recall MCP server it connected (no process per message), the block reaches the model for
    the matching message only; uninstall takes its server, hook and flag away again."""
    with start(lambda body: ANSWER) as api:
        scratch.set_up_recall(notes)
        config = write_codex_config(scratch, api.url)
        before = config.read_text()
        out = scratch.recall("install", "--agent", "codex", "--form", "mcp_tool", "--skip-check")
        assert "mcp_servers.recall" in out.stdout, out.stdout
        scratch.start_daemon()
        server = CodexAppServer(codex_exe, scratch)
        try:
            hooks = server.trust_all(scratch.project)
            turns = server.turns(scratch.project, [MATCHING, CHITCHAT])
        finally:
            server.close()
        assert [h["handlerType"] for h in hooks] == ["mcpTool"]
        runs = [t["hooks"] for t in turns]
        assert [[(r["handlerType"], r["status"]) for r in t] for t in runs] == [[("mcpTool", "completed")]] * 2
        assert [sum(BLOCK_HEAD in t for t in developer_context(b)) for b in api.bodies()] == [1, 1]
        scratch.recall("uninstall", "--agent", "codex")
        # what is left is Codex's own: the trust it recorded for the hook
        assert config.read_text().split("\n[hooks.state]", 1)[0] == before
        assert not (scratch.home / ".codex" / "hooks.json").exists()
