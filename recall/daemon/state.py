"""What the daemon's parts share, typed: who it is, whether its model is loaded, its counters.

The listener (``listener``), the dispatcher (``dispatcher``) and the commands (``handlers``)
each keep their own working state; this is what more than one of them reads, set in one
place (``loop.compose``) and passed to each part, never inherited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recall.daemon.logs import log_event

if TYPE_CHECKING:  # the facade imports numpy: the daemon binds its socket before loading it
    from recall.api import Recall
    from recall.embedding.batcher import QueryBatcher
    from recall.watch import Watcher


@dataclass(frozen=True)
class Loaded:
    """The model and the index, loaded (``lifecycle.load_app``): handed over once, whole.
    ``batcher`` is ``app.embedder``: the model behind the queue that batches questions."""

    app: Recall
    batcher: QueryBatcher
    device: str
    load_s: float


@dataclass
class DaemonState:
    """The daemon's shared state. ``idle_exit_s`` is ``[daemon] idle_exit_hours`` in seconds."""

    model_id: str
    transport: str
    idle_exit_s: float
    lock_fd: int | None
    loaded: Loaded | None = None  # set once by Loop.set_ready; read by every command after ``ready``
    ready: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    # a question came while the model loaded (its hook started the daemon): it warms the path itself
    asked_while_loading: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)  # a first question answered
    failed: bool = False  # the model could not load: exit status 1
    watcher: Watcher | None = None  # [watch] enabled: started by the loader once ready
    model_switch: dict[str, Any] | None = None  # a switch of model in progress (lifecycle.switch_model)
    catch_up: Callable[[], None] | None = None  # a question found this model's index older than the notes
    repair: Callable[[list], None] | None = None  # a question met notes gone or changed on disk (daemon.repair)
    config_stamp: list | None = None  # config.toml when loaded (handlers.Commands._settings_changed)
    code: str = ""  # the stamp of recall's files it runs (recall.ipc.code), published in the status file
    foreground: bool = False  # `recall serve --foreground`: the user's own, never replaced (recall.daemon.unstick)
    started: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.monotonic)  # uptime: the wall clock may step back
    last_question: float = field(default_factory=time.monotonic)
    address: str = ""  # the socket's path, or 127.0.0.1:PORT
    port: int = 0
    busy: int = 0  # requests answered "busy" (full queue, too many connections)
    timed_out: int = 0  # connections that did not send a whole request in time
    _last_busy_log: float = 0.0
    refused: int = 0  # connections refused unheard (another uid, a wrong TCP secret)
    _last_refused_log: float = 0.0

    def count_busy(self, why: str) -> None:
        """One more request answered "busy"; logged one line a second at most, under a flood."""
        self.busy += 1
        now = time.monotonic()
        if now - self._last_busy_log >= 1.0:
            self._last_busy_log = now
            log_event("busy", why=why, busy_total=self.busy)

    def count_refused(self, why: str) -> None:
        """One more connection refused; logged one line a second at most: a peer that cannot ask
        (another local user) sent thousands a second and rotated away the user's whole log (an
        outside tester's H3)."""
        self.refused += 1
        now = time.monotonic()
        if now - self._last_refused_log >= 1.0:
            self._last_refused_log = now
            log_event("refused", why=why, refused_total=self.refused)

    @property
    def switching(self) -> bool:
        """Whether a switch of model (or a catch-up) is under way: not done, not failed."""
        stage = str((self.model_switch or {}).get("stage", "done"))
        return stage != "done" and not stage.startswith("failed")

    @property
    def app(self) -> Recall | None:
        return None if self.loaded is None else self.loaded.app

    @property
    def device(self) -> str:
        return "" if self.loaded is None else self.loaded.device

    @property
    def load_s(self) -> float | None:
        return None if self.loaded is None else self.loaded.load_s
