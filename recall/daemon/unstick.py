"""A daemon that answers nothing is resumed or replaced, by itself: ``python -m recall.daemon.unstick``.

A client whose question timed out starts this check, detached, at most once a minute
(``recall.ipc.client.suspect_stuck``). A slow daemon (a loaded machine, ten sessions at once)
and one that answers nothing look alike from a hook: both miss its budget. A ping tells them
apart: the daemon's reading thread answers it at once, while every worker is busy and while the
model loads (``recall.daemon.dispatcher``'s inline commands). Then:

- it answers: nothing to do;
- it is stopped (SIGSTOP, a job control slip, a debugger let go): it is sent SIGCONT and keeps
  its loaded model and caches;
- it answers no ping for ``[daemon] stuck_after_s`` (deadlocked, wedged): it is killed and a new
  one started, with a line in the daemon's log.

Left be: a daemon the user runs in a terminal (``recall serve --foreground``: its status file
says so), one that ended or was replaced meanwhile (it no longer holds the lock), and every
daemon where ``stuck_after_s = 0``. Before, a stopped daemon cost every message its whole budget,
and gave nothing, until `recall stop` (an outside tester, stop 60).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from recall.ipc import client
from recall.privacy.children import stat_fields

if TYPE_CHECKING:
    from recall.config.settings import Settings

PING_S = 2.0  # one ping's wait: the reading thread answers in milliseconds when it runs at all
KILL_WAIT_S = 5.0


def stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped by a signal or a tracer (``/proc``'s T or t; False elsewhere)."""
    return (stat_fields(pid) or [b"?"])[0] in (b"T", b"t")


def answers(status: dict) -> bool | None:
    """A ping's fate: answered (True), not in ``PING_S`` (False), no daemon listening (None)."""
    try:
        client.request({"cmd": "ping"}, timeout=PING_S, status=status)
    except client.DaemonUnavailable:
        return None
    except client.DaemonError:
        return False
    return True


def note(config: Settings, event: str, **fields: object) -> None:
    """A line in the daemon's log (the daemon itself is stopped or gone when this writes)."""
    try:
        from recall.daemon.logs import log_event, setup_logging

        setup_logging(config, foreground=False)
        log_event(event, **fields)
    except Exception:  # noqa: BLE001, S110 - a log that cannot be written must not stop the repair
        pass


def settings() -> Settings | None:
    """The config, or None where it cannot be read (then no daemon starts either: nothing is done)."""
    try:
        from recall.config.load import load_config

        return load_config()
    except Exception:  # noqa: BLE001 - a config that cannot be read
        return None


def unstick() -> str:
    """Look at the daemon in the status file once; what was done: "answers", "resumed",
    "replaced" or "left" (none, the user's own, ended meanwhile, or ``stuck_after_s = 0``)."""
    status = client.read_status()
    pid = status.get("pid") if status else None
    if not isinstance(status, dict) or not isinstance(pid, int) or status.get("foreground") is not False:
        return "left"
    config = settings()
    if config is None or config.daemon.stuck_after_s <= 0:
        return "left"
    patience = config.daemon.stuck_after_s
    resumed, start = False, time.monotonic()
    while True:
        if stopped(pid) and not resumed:
            os.kill(pid, signal.SIGCONT)
            resumed = True
        got = answers(status)
        if got is None:
            return "left"
        if got:
            if resumed:
                note(config, "resumed", pid=pid, why="it was stopped (SIGSTOP or a debugger) and answered nothing")
            return "resumed" if resumed else "answers"
        if time.monotonic() - start >= patience:
            break
    if client.lock_holder() != pid:
        return "left"
    waited = round(time.monotonic() - start, 1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    end = time.monotonic() + KILL_WAIT_S
    while not client.exited(pid) and time.monotonic() < end:
        time.sleep(0.05)
    note(config, "stuck", pid=pid, waited_s=waited, why="it answered no ping: ended it and started a new one")
    client.spawn_daemon(cooldown_s=0.0)
    return "replaced"


def main() -> None:
    try:
        unstick()
    except Exception:  # noqa: BLE001 - detached, nobody reads its errors: the next timeout tries again
        sys.exit(1)


if __name__ == "__main__":
    main()
