"""OpenCode itself (npm, pinned in agents.py) on a real recall install (`recall install
--agent opencode --project`), offline against the fake Messages API, through `opencode serve`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents import BLOCK_HEAD, NOTE, OPENCODE, OpencodeServer, install, reply_text, write_opencode_config

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


def test_daemon_killed_between_two_messages(opencode_exe, scratch, notes):
    """Kill -9 the daemon after the first answer: the second message still reaches the model
    and is answered, and the plugin's hook ran (and ended) for both."""
    scratch.set_up_recall(notes)
    scratch.recall("install", "--agent", "opencode", "--project", "--skip-check")
    scratch.start_daemon()
    second = "and how are feature flags named in Unleash?"
    with start(answer=lambda body: [text("Noted, thanks.")]) as api:
        write_opencode_config(scratch, api.url)
        server = OpencodeServer(opencode_exe, scratch)
        try:
            session = server.session()
            first = server.send(session, MATCHING)
            killed = scratch.daemon_pids()
            scratch.kill_daemons()
            reply = server.send(session, second)
        finally:
            server.close()
        times = server.hook_times()
    assert killed, "no daemon was running to kill"
    assert reply_text(first) == reply_text(reply) == "Noted, thanks."
    assert not reply.get("info", {}).get("error"), reply
    assert second in last_user([b for b in api.bodies() if b.get("tools")][-1])
    assert len(times) == 2, server.log.read_text()[-3000:]


def test_opencode_starting_starts_the_daemon(opencode_exe, scratch, notes):
    """Issue #22's cold start on OpenCode: the plugin runs the hook once as OpenCode loads it
    (a SessionStart event, not awaited), so a missing daemon starts before any message is
    typed and has loaded its model by the first one; that start sends the model nothing."""
    import time

    scratch.set_up_recall(notes)
    scratch.recall("install", "--agent", "opencode", "--project", "--skip-check")
    assert scratch.daemon_pids() == []
    with start(answer=lambda body: [text("Noted, thanks.")]) as api:
        write_opencode_config(scratch, api.url)
        server = OpencodeServer(opencode_exe, scratch)
        try:
            server.session()  # OpenCode loads a project's plugins by its first request there
            end = time.monotonic() + 30
            while not scratch.daemon_pids() and time.monotonic() < end:
                time.sleep(0.2)
            started = scratch.daemon_pids()
        finally:
            server.close()
    assert started, "no daemon started as OpenCode started: " + server.log.read_text()[-2000:]
    assert api.bodies() == []  # no message, no request to the model
    assert server.hook_times() == []  # no chat.message hook ran


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("existing", [False, True], ids=["no-plugins-folder", "a-plugin-of-the-users"])
def test_user_install_and_uninstall_leave_the_config_as_it_was(scratch, existing):
    """`recall install --agent opencode` (user scope) adds one file; uninstall takes it and
    the folders it made away again, and leaves the user's opencode.json and plugins alone:
    the config folder is byte for byte what it was."""
    config = scratch.home / ".config" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").write_text('{"$schema": "https://opencode.ai/config.json", "theme": "x"}\n')
    if existing:
        (config / "plugins").mkdir()
        (config / "plugins" / "mine.js").write_text("export const Mine = async () => ({});\n")
    before = tree(config)
    env = {"XDG_CONFIG_HOME": str(scratch.home / ".config")}
    scratch.extra_env.update(env)
    out = scratch.recall("install", "--agent", "opencode", "--skip-check")
    assert (config / "plugins" / "recall.js").exists(), out.stdout
    assert tree(config).keys() - before.keys() == {"plugins/recall.js"}
    scratch.recall("uninstall", "--agent", "opencode")
    assert tree(config) == before
    assert (config / "plugins").exists() == existing  # the folder install made is gone, the user's stays
