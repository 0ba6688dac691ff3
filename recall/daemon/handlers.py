"""The daemon's commands: each request's ``cmd`` is answered by ``cmd_<name>``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from recall.daemon.logs import log_event, log_exception
from recall.daemon.state import DaemonState

COMMANDS = ("query", "status", "stop", "ping", "explain")
INLINE = ("status", "stop", "ping")  # answered by the reading thread at once, never queued
# Questions asked without a deadline wait at most this long for the model to load.
LOAD_WAIT_S = 120.0
RANKED_IN_REPLY = 11  # the ranks the gap rule looks at


class _NotNow(Exception):
    """A question that cannot be asked now: no prompt, the model still loading, the asker gone."""

    def __init__(self, error: str) -> None:
        self.error = error


def _r4(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


class Handlers(DaemonState):
    """The part of ``server.Daemon`` that answers requests: ``cmd_<name>`` for each command."""

    def dispatch(self, req: dict) -> dict:
        cmd = req.get("cmd")
        if cmd not in COMMANDS:
            return {"ok": False, "error": "unknown command"}
        try:
            return getattr(self, f"cmd_{cmd}")(req)
        except Exception as exc:  # noqa: BLE001
            log_exception(f"cmd_{cmd}", exc)
            return {"ok": False, "error": type(exc).__name__}

    # commands
    def cmd_ping(self, req: dict) -> dict:
        return {"ok": True, "pid": os.getpid(), "model": self.model_id, "ready": self.ready.is_set()}

    def cmd_status(self, req: dict) -> dict:
        idx = self.app.searcher.index if self.app is not None else None
        batcher = getattr(self.app, "embedder", None)
        return {
            "ok": True, "pid": os.getpid(), "model": self.model_id, "device": self.device,
            "transport": self.transport, "socket": self.address, "started": self.started,
            "uptime_s": round(time.time() - self.started, 1), "queries": self.queries,
            "idle_exit_s": self.idle_exit_s, "ready": self.ready.is_set(), "load_s": self.load_s,
            "index_generation": None if idx is None else idx.generation,
            "model_calls": getattr(batcher, "batches", None), "embedding": getattr(batcher, "in_flight", 0),
            "busy": self.busy, "timed_out": self.timed_out,
            "model_switch": None if self.model_switch is None else dict(self.model_switch),
        }

    def cmd_stop(self, req: dict) -> dict:
        log_event("stop", by="request")
        self.request_stop()
        return {"ok": True, "stopping": True}

    def _ask(self, req: dict) -> tuple[Any, str]:
        """Run one question through the core: waits for the model while it loads, within the
        asker's deadline; embedded in a batch with the questions that arrive meanwhile."""
        prompt, cwd = req.get("prompt"), req.get("cwd")
        if not isinstance(prompt, str):
            raise _NotNow("no prompt")
        self.last_question = time.monotonic()
        give_up_at = req.get("give_up_at")  # the asker's deadline (epoch seconds), if any
        if not isinstance(give_up_at, int | float) or isinstance(give_up_at, bool):
            give_up_at = None
        t0 = time.perf_counter()
        if not self.ready.is_set():  # still loading: wait, within the asker's time
            wait = LOAD_WAIT_S if give_up_at is None else give_up_at - time.time()
            if not self.ready.wait(max(0.0, wait)):
                log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1), loading=True)
                raise _NotNow("loading")
        from recall.embedding.batcher import Expired
        from recall.embedding.models import QUERY_CHARS_MAX
        from recall.ranking.search import Scope

        app = self.app
        scope = Scope.from_flags(cwd if isinstance(cwd, str) and cwd else Path.home(),
                                 library=app.config.documents.library_per_message)
        project = str(scope.project)
        try:
            # The daemon's own cut (the core cuts again, exactly, to one window of the model).
            with app.embedder.give_up_at(give_up_at):
                return app.query(prompt[:QUERY_CHARS_MAX], scope), project
        except Expired:
            # Under a burst, questions queue for the model; one whose asker has already
            # given up is skipped instead of delaying everyone behind it.
            log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1))
            raise _NotNow("expired") from None

    def cmd_query(self, req: dict) -> dict:
        t0 = time.perf_counter()
        try:
            res, project = self._ask(req)
        except _NotNow as exc:
            return {"ok": False, "error": exc.error}
        wall_ms = (time.perf_counter() - t0) * 1000
        self.queries += 1
        d = res.decision
        timings = {k: round(v, 2) for k, v in res.timings.items()}
        timings["daemon_ms"] = round(wall_ms, 2)
        decision = d.as_dict()
        chosen = [{"id": c["id"], "score": c["score"]} for c in decision["chosen"]]
        log_event("query", decision=d.kind, reason=d.reason, top=_r4(d.top), gap=_r4(d.gap),
                  bytes=d.line_bytes, chosen=chosen, timings_ms=timings, project=project)
        return {  # the decision, block text included: each agent's module wraps it (recall.agents.registry)
            "ok": True,
            "model": self.model_id,
            "decision": decision | {"text": d.text},
            "ranked": [{"id": h.note.get("id"), "name": h.note.get("name"), "kind": h.note.get("kind"),
                        "score": round(h.score, 4)} for h in res.hits[:RANKED_IN_REPLY]],
            "timings_ms": timings,
        } | self._model_changed()

    def _model_changed(self) -> dict:
        """One stat of config.toml per question: when it now names another model, this
        daemon stops after this answer, and the next question starts one with the new model
        (which embeds the notes again: ``lifecycle.switch_model``). Adds ``restarting`` to
        the reply then."""
        from recall.config.load import load_config, user_config_path
        from recall.embedding.models import model_id_of

        stamp = config_stamp(user_config_path())
        if stamp == self.config_stamp:
            return {}
        self.config_stamp = stamp
        try:
            model_id = model_id_of(load_config().model)
        except Exception:  # noqa: BLE001 - a broken config: the next `recall` command says what is wrong
            return {}
        if model_id == self.model_id:
            return {}
        log_event("stop", by="model changed in config.toml", model=model_id)
        self.request_stop()
        return {"restarting": model_id}

    def cmd_explain(self, req: dict) -> dict:
        """What ``query`` would hand over, with everything behind the decision (for
        ``recall ui``'s "try a message"): every ranked note, the settings in force and the
        config file each came from. Not an injection: nothing is logged, not even the
        decision, and the prompt never is."""
        try:
            res, project = self._ask(req)
        except _NotNow as exc:
            return {"ok": False, "error": exc.error}
        d, s = res.decision, res.rule
        chosen = {(h.note.get("id"), h.note.get("path")) for h in d.chosen}  # render() may copy a hit
        return {
            "ok": True, "model": self.model_id, "device": self.device, "project": project,
            "decision": {**d.as_dict(), "text": d.text},
            "ranked": [{key: h.note.get(key) for key in ("id", "name", "description", "kind", "path", "project")}
                       | {"score": round(h.score, 4), "chosen": (h.note.get("id"), h.note.get("path")) in chosen,
                          "location": h.location}  # a document's page, section or time range that matched
                       for h in res.hits],
            "settings": s.as_dict() | {"selector": "learned" if s.learned is not None else "gap"},
            "origins": dict(s.thresholds.origins),
            "provenance": s.thresholds.provenance,
            "timings_ms": {k: round(v, 2) for k, v in res.timings.items()},
        }


def config_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime, size) of the user's config file, None when there is none."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
