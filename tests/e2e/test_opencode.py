"""OpenCode itself (npm, pinned in agents.py) on a real recall install (`recall install
--agent opencode --project`), offline against the fake Messages API, through `opencode serve`."""

from __future__ import annotations

import json

import pytest
from agents import BLOCK_HEAD, NOTE, OPENCODE, OpencodeServer, install, write_opencode_config

from helpers.daemon import CHITCHAT, MATCHING
from helpers.fake_messages import start, text

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def opencode_exe():
    from agents import NotAvailable

    try:
        return install(OPENCODE)
    except NotAvailable as exc:
        pytest.skip(str(exc))


def last_user(body: dict) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return json.dumps(users[-1], ensure_ascii=False) if users else ""


def test_plugin_block_only_for_a_matching_message_and_uninstall_restores(opencode_exe, scratch, notes):
    scratch.set_up_recall(notes)
    before = sorted(p.relative_to(scratch.project) for p in scratch.project.rglob("*") if ".git" not in p.parts)
    out = scratch.recall("install", "--agent", "opencode", "--project", "--skip-check")
    assert "recall.js" in out.stdout, out.stdout
    scratch.start_daemon()
    seen = []
    with start(answer=lambda body: [text("Noted, thanks.")]) as api:
        write_opencode_config(scratch, api.url)
        server = OpencodeServer(opencode_exe, scratch)
        try:
            session = server.session()
            for message in (MATCHING, CHITCHAT):
                server.send(session, message)
                body = [b for b in api.bodies() if b.get("tools")][-1]
                assert message in last_user(body)
                seen.append(BLOCK_HEAD in last_user(body))
        finally:
            server.close()
        times = server.hook_times()
    assert seen == [True, False]
    assert NOTE in json.dumps(api.bodies(), ensure_ascii=False)
    assert len(times) == 2, server.log.read_text()[-3000:]
    scratch.recall("uninstall", "--agent", "opencode", "--project")
    assert not (scratch.project / ".opencode" / "plugins" / "recall.js").exists()
    # the plugins folder install made is gone; what is left new under .opencode is OpenCode's own
    # (it writes .gitignore, package.json and node_modules for its plugin SDK on start)
    after = sorted(p.relative_to(scratch.project) for p in scratch.project.rglob("*") if ".git" not in p.parts)
    assert [p for p in after if p not in before and p.parts[0] == ".opencode"] == [p for p in after
            if p.parts[0] == ".opencode" and p.parts[:2] != (".opencode", "plugins")], after
