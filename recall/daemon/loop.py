"""The daemon's loop, and where its parts are composed: a listener, a dispatcher, the commands.

``Loop`` owns the life of one daemon: it binds (``start``), says when the model is loaded
(``set_ready``), drives the listener until it is stopped, idle for ``idle_exit_s`` or unsafe
to go on (its lock file lost), checks its files every ``POLL_S`` (a deleted socket bound
anew, a deleted status file written anew), ends when recall's own files change under it (an
upgrade, ``recall.ipc.code``) and removes its files at the end (``close``).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from recall.daemon.dispatcher import Dispatcher
from recall.daemon.files import StatusFile, lock_lost
from recall.daemon.handlers import INLINE, Commands
from recall.daemon.listener import Listener
from recall.daemon.logs import log_event, log_exception
from recall.daemon.state import DaemonState, Loaded
from recall.ipc.code import code_stamp, upgraded

if TYPE_CHECKING:
    from recall.config.settings import DaemonSettings

# How often the loop wakes to check the idle timer and its files (socket, status, lock):
# a deleted socket is bound anew within this.
POLL_S = 0.5
# How often the loop looks whether recall's files changed under it (an upgrade): it then ends
# between questions, and the next question starts a daemon with the new code.
CODE_CHECK_S = 10.0
# How long a stopping daemon waits for its workers to send the answers they hold (a question
# takes milliseconds; this bounds a stuck one, so a stop is never held up for long).
DRAIN_S = 3.0


class Loop:
    """One daemon: its state, and the three parts built over it here."""

    def __init__(self, model_id: str, settings: DaemonSettings, *, transport: str, lock_fd: int | None) -> None:
        """``settings``: ``[daemon]``; ``transport``: its ``transport``, or "tcp" where the
        platform has no UNIX sockets (``lifecycle``)."""
        self.state = DaemonState(model_id=model_id, transport=transport, lock_fd=lock_fd,
                                 idle_exit_s=settings.idle_exit_hours * 3600, code=code_stamp())
        self._code_checked = time.monotonic()
        self.commands = Commands(self.state, stop=self.request_stop)
        self.dispatcher = Dispatcher(self.state, self.commands.table(), INLINE,
                                     workers=settings.batch_max, max_queued=settings.max_queued)
        self.listener = Listener(self.state, self.dispatcher.submit,
                                 request_timeout_s=settings.request_timeout_ms / 1000,
                                 max_connections=settings.max_connections)
        self.status = StatusFile(self.state)

    def start(self) -> None:
        """Listening, and the status file saying so, before anything heavy is imported."""
        self.listener.bind()
        self.status.write()

    def set_ready(self, loaded: Loaded) -> None:
        self.state.loaded = loaded
        self.state.last_question = time.monotonic()  # idle from here: the load is no idle time
        self.state.ready.set()
        try:
            self.status.write()
        except OSError as exc:
            log_exception("writing the status file", exc)

    def request_stop(self) -> None:
        self.state.stopping.set()
        self.listener.wake()

    def serve_forever(self) -> str:
        """Serve until stopped, idle or unsafe to go on; returns why it stopped."""
        state, listener = self.state, self.listener
        listener.open()
        self.dispatcher.start()
        reason = "stopped"
        next_check = time.monotonic() + POLL_S
        try:
            while not state.stopping.is_set():
                now = time.monotonic()
                # Idle from ready on (a model that loads longer than the idle time answered nothing);
                # idle_exit_hours = 0: never (the user's "no time-out"; AK01)
                idle = state.idle_exit_s and state.ready.is_set()
                idle_left = state.idle_exit_s - (now - state.last_question) if idle else math.inf
                if idle_left <= 0:
                    reason = f"idle for {state.idle_exit_s:.0f} s"
                    break
                if now >= next_check:
                    next_check = now + POLL_S
                    try:
                        lost = self._check_files()
                    except Exception as exc:  # noqa: BLE001 - checked again next time
                        log_exception("checking the daemon's files", exc)
                        lost = None
                    if lost:
                        reason = lost
                        break
                listener.poll(min(idle_left, next_check - now))
        finally:
            listener.shut()
            self.dispatcher.stop(DRAIN_S)
        return reason

    def _check_files(self) -> str | None:
        """Our socket, status and lock files still ours? Rebind / rewrite; a reason to exit if
        the lock file is gone (then nothing keeps a second daemon from starting beside us)."""
        if self.state.lock_fd is not None and lock_lost(self.state.lock_fd):
            log_event("lock file lost", action="exit")
            return "lock file lost"
        rebound = self.listener.rebind_if_lost()
        self.status.rewrite_if_lost(stale=rebound)  # the status names the socket
        if time.monotonic() - self._code_checked >= CODE_CHECK_S:
            self._code_checked = time.monotonic()
            if upgraded(self.state.code, code_stamp()):
                log_event("stop", by="recall's files changed (an upgrade): the next question starts it anew")
                return "recall upgraded"
        return None

    def close(self) -> None:
        """Status file first (clients stop trusting it), then the socket, then the batcher."""
        self.status.remove()
        self.listener.close()
        if self.state.loaded is not None:
            self.state.loaded.batcher.close()
