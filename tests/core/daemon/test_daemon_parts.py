"""The daemon's dispatcher on its own, over real sockets (the whole daemon: tests/core/daemon/test_daemon.py)."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from recall.daemon.dispatcher import Dispatcher
from recall.daemon.listener import Exchange
from recall.daemon.state import DaemonState


def _state() -> DaemonState:
    return DaemonState(model_id="hash-256", transport="unix", idle_exit_s=60.0, lock_fd=None)


def _ask(dispatcher: Dispatcher, body: dict) -> socket.socket:
    ours, theirs = socket.socketpair()
    dispatcher.submit(Exchange(body, theirs, None, None))
    return ours


def _reply(sock: socket.socket) -> dict:
    sock.settimeout(5)
    with sock:
        return json.loads(sock.makefile("rb").readline())


def _boom(req: dict) -> dict:
    raise ValueError("a message that may quote the prompt")


def _slow(req: dict) -> dict:
    time.sleep(req.get("s", 0))
    return {"ok": True}


HANDLERS = {"ping": lambda req: {"ok": True, "pong": req.get("n")}, "boom": _boom, "slow": _slow}


def test_commands_are_routed_by_name_and_failures_say_only_their_type():
    d = Dispatcher(_state(), HANDLERS, frozenset({"ping", "boom"}), workers=1, max_queued=1)
    assert _reply(_ask(d, {"cmd": "ping", "n": 3})) == {"ok": True, "pong": 3}
    assert _reply(_ask(d, {"cmd": "boom"})) == {"ok": False, "error": "ValueError"}
    for cmd in ("nope", ["ping"], {"a": 1}, None, 7):
        assert _reply(_ask(d, {"cmd": cmd})) == {"ok": False, "error": "unknown command"}


def test_a_full_queue_answers_busy_at_once_and_workers_answer_the_rest():
    state = _state()
    d = Dispatcher(state, HANDLERS, frozenset({"ping"}), workers=1, max_queued=1)
    queued = _ask(d, {"cmd": "slow"})  # no worker yet: it waits in the queue
    assert _reply(_ask(d, {"cmd": "slow"})) == {"ok": False, "error": "busy"}
    assert state.busy == 1
    d.start()
    try:
        assert _reply(queued) == {"ok": True}
    finally:
        d.stop(wait_s=5.0)


def test_stop_waits_for_the_answers_already_taken():
    """A daemon stopping (recall stop, SIGTERM, a model changed in config.toml) still answers
    the questions its workers hold: the process must not end with a reply unsent."""
    d = Dispatcher(_state(), HANDLERS, frozenset({"ping"}), workers=2, max_queued=4)
    d.start()
    asked = [_ask(d, {"cmd": "slow", "s": 0.3}) for _ in range(3)]
    time.sleep(0.05)  # two in the workers, one queued
    d.stop(wait_s=5.0)
    for sock in asked:
        sock.setblocking(False)  # already there when stop returns: no waiting here
        assert json.loads(sock.recv(4096)) == {"ok": True}
        sock.close()


def test_stop_gives_up_on_a_stuck_handler_after_its_bound():
    d = Dispatcher(_state(), HANDLERS, frozenset(), workers=1, max_queued=1)
    d.start()
    stuck = _ask(d, {"cmd": "slow", "s": 3})
    t0 = time.monotonic()
    d.stop(wait_s=0.2)
    assert time.monotonic() - t0 < 1.0
    stuck.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are told from /proc (Linux)")
def test_a_process_that_exited_and_is_not_reaped_is_not_alive():
    """A daemon that had exited but was not reaped yet (its parent, the hook that started it, long
    gone; the subreaper reaping late) was taken for alive: the message after `recall stop`
    neither got an answer nor started a daemon (an outside tester's AG03)."""
    import subprocess
    import sys

    from recall.ipc.client import exited
    from recall.privacy.children import stat_fields

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while (stat_fields(child.pid) or [b"Z"])[0] != b"Z" and time.monotonic() < deadline:
            time.sleep(0.02)  # not child.poll(): that would reap it
        assert (stat_fields(child.pid) or [b"?"])[0] == b"Z"
        assert exited(child.pid)
    finally:
        child.wait()
    assert not exited(os.getpid()) and exited(child.pid)


def test_the_masking_a_question_is_logged_through_is_ready_before_the_daemon_is(indexed, monkeypatch):
    """The first question in a project after every start compiled the masking's rules (a project's
    name is masked before it is logged): 0.1-0.8 s on a loaded machine, the whole budget of that
    message's hook, which said nothing (the flaky-test hunt, stop 58: the first hook against a
    fresh daemon from a project folder, in test_agents.py and test_daemon.py, was silent; its
    daemon logged "expired" after ~250 ms). They are compiled before "ready", as the model is warmed."""
    from recall.config.load import load_config
    from recall.daemon import lifecycle
    from recall.privacy import masking

    monkeypatch.setattr(masking, "_rules", None)
    seen: list[object] = []

    class Loop:
        state = _state()

        def set_ready(self, loaded) -> None:
            seen.append(masking._rules is not None)
            self.state.loaded = loaded

        def request_stop(self) -> None:
            seen.append("stopped")

    loop = Loop()
    lifecycle.load_app(loop, load_config())  # type: ignore[arg-type]
    if loop.state.loaded is not None:
        loop.state.loaded.app.close()
    assert seen == [True]
