"""The per-message budget (``[daemon] hook_budget_ms``) as a bound on everything a front end does
for a message, not only on its reads and writes of pipes and sockets.

The hook opens or stats a dozen paths under RECALL_HOME (``hook.json``, ``recall.db``, the daemon's
run files...): on a home on a mount that hangs (NFS, sshfs, FUSE), or a disk stalled in write-back,
any of them held the hook, and with it the agent's prompt, for as long as it stalled (an outside
tester's: 3 s for a 3 s stall; a ``recv`` interrupted for ever spun for minutes). Two bounds, one
``Deadline`` each:

* the hook process (``watch``): a thread started first thing ends the process, exit 0 and nothing
  printed, at its deadline, its stdin, stdout and stderr closed first (the agent reads the end of
  its output even where a thread stuck in the kernel keeps the process from ending: a FUSE request
  its server read and never answers); the hook writes its answer only under ``Watch.write``, so
  the watchdog never ends it half-way through a line. Its last word tells the daemon of an answer
  read, or waiting unread, and never handed over (``recall.agents.hook.last_word``).
* the MCP tool ``recall_context`` (``bounded``): its answer computed in a thread of its own, waited
  for until the deadline, then the empty answer; a thread stuck past it is left to finish (its
  answer told the daemon as unsent, ``late``) or to die with the server, at most ``slots`` of them.

Standard library only (``threading`` costs the hook about 1 ms): the hook imports this on every message.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

GRACE_S = 0.15  # what a process may run past its budget: writing an answer that came in time, starting a daemon
SETTINGS_WAIT_S = 0.5  # the deadline until the settings (and with them the budget) are read: a snapshot is read in a ms
LOAD_WAIT_S = 1.0  # the same when the settings must be loaded from config.toml (after an edit: parsed once, ~50 ms)
GATE_WAIT_S = 0.05  # how long the watchdog waits for a write under way (bounded by its own deadline) to end
LAST_WORD_S = 0.25  # what the last word may take: one short message to the daemon, on that failure only
SLICE_S = 0.02  # how often a wait looks at its deadline again (it may be moved)


class Deadline:
    """A point in time (``time.monotonic()``) that may be moved while it is waited for: set from
    the budget once the settings are read."""

    def __init__(self, at: float) -> None:
        self.at = at

    def move(self, at: float) -> None:
        self.at = at

    def left(self) -> float:
        return self.at - time.monotonic()

    def wait(self, done: threading.Event) -> bool:
        """Whether ``done`` was set by the deadline (looked at again every ``SLICE_S``)."""
        while (left := self.left()) > 0:
            if done.wait(min(left, SLICE_S)):
                return True
        return done.is_set()


class Watch:
    """A process's deadline, kept by a daemon thread that ends the process there (``os._exit(0)``:
    nothing printed, nothing flushed, whatever the other threads are held in)."""

    def __init__(self, at: float, last_word: Callable[[Watch], None] | None = None) -> None:
        self.deadline = Deadline(at)
        self.pending = ""  # the daemon's ref of an answer read and not handed over yet ("": none)
        self._gate = threading.Lock()  # held by a write under way; taken for good by the watchdog
        self._last_word = last_word
        threading.Thread(target=self._watch, name="recall-deadline", daemon=True).start()

    def write(self, writer: Callable[[], str | None]) -> str | None:
        """``writer()`` (None when it wrote the answer, else why not), unless the watchdog has
        begun to end the process: then "not read in time", and nothing written."""
        if not self._gate.acquire(blocking=False):
            return "not read in time"
        try:
            why = writer()
            if why is None:
                self.pending = ""  # handed over: nothing to take back (before the gate opens)
            return why
        finally:
            self._gate.release()

    def _watch(self) -> None:
        self.deadline.wait(threading.Event())
        self._gate.acquire(timeout=GATE_WAIT_S)  # a write under way ends; none begins after this
        for fd in (0, 1, 2):  # the agent's pipes at their end now, even where a thread stuck in the
            try:  # kernel keeps the process from ending (a FUSE request its server never answers)
                os.close(fd)
            except OSError:
                pass
        if self._last_word is not None:
            word = threading.Thread(target=self._last_word, args=(self,), daemon=True)
            word.start()
            word.join(LAST_WORD_S)
        os._exit(0)


def watch(at: float, last_word: Callable[[Watch], None] | None = None) -> Watch:
    """Start keeping the deadline ``at`` of this process (``Watch``)."""
    return Watch(at, last_word)


IDLE_S = 60.0  # a thread of ``bounded`` kept for the next message this long: a session's come seconds apart
_idle: list[_Runner] = []  # threads whose computation returned, waiting for the next
_idle_lock = threading.Lock()


class _Runner:
    """A thread of its own for one computation of ``bounded`` at a time, kept idle for the next
    once it returns: a thread started per message cost the MCP server about 60 us of CPU and a
    start handshake on every message. One stuck on a hung mount is never idle, so never reused."""

    def __init__(self) -> None:
        self.job: Callable[[], None] | None = None
        self.ready = threading.Event()
        threading.Thread(target=self._loop, name="recall-bounded", daemon=True).start()

    def _loop(self) -> None:
        while True:
            if not self.ready.wait(IDLE_S):
                with _idle_lock:
                    if self in _idle:  # nobody took it meanwhile: the thread ends
                        _idle.remove(self)
                        return
                self.ready.wait()  # taken as it gave up waiting: its job comes
            self.ready.clear()
            job, self.job = self.job, None
            if job is not None:
                job()
            with _idle_lock:
                _idle.append(self)


def _in_a_thread(job: Callable[[], None]) -> None:
    """``job()`` in a thread other than the caller's: an idle one, else a new one."""
    with _idle_lock:
        runner = _idle.pop() if _idle else None
    if runner is None:
        runner = _Runner()
    runner.job = job
    runner.ready.set()


def bounded(compute: Callable[[Deadline], Any], deadline: Deadline, default: Any, slots: threading.Semaphore,
            late: Callable[[Any], None] | None = None) -> Any:
    """``compute(deadline)`` run in a thread of its own, its value when it returns by ``deadline``
    (which it may move), else ``default``; ``default`` at once when every one of ``slots`` is held
    by a thread still running (stuck on a hung mount: no pile-up). The value of a thread that
    returns after the wait gave up goes to ``late`` (on that thread); an error is ``default``."""
    if not slots.acquire(blocking=False):
        return default
    done, lock = threading.Event(), threading.Lock()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            value = compute(deadline)
        except Exception:  # noqa: BLE001 - a front end's answer fails open
            value = default
        finally:
            slots.release()
        with lock:
            gave_up = box.get("gave_up", False)
            box["value"] = value
            done.set()
        if gave_up and late is not None and value is not default:
            late(value)

    _in_a_thread(run)
    deadline.wait(done)
    with lock:
        if "value" in box:
            return box["value"]
        box["gave_up"] = True
    return default
