"""The daemon's commands (ping, status, stop, query, explain): ``Commands.table`` names each
handler for the dispatcher (``recall.daemon.dispatcher``)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from recall.agents.wire import session_of
from recall.daemon.logs import log_event
from recall.daemon.repeats import Repeats, Turn
from recall.daemon.roots import Roots
from recall.daemon.state import DaemonState
from recall.privacy.paths import user_config_path

if TYPE_CHECKING:
    from recall.api import QueryResult
    from recall.ranking.selector import Decision

INLINE = frozenset({"status", "stop", "ping", "unsent"})  # answered by the reading thread at once, never queued
# Questions asked without a deadline wait at most this long for the model to load.
LOAD_WAIT_S = 120.0
RANKED_IN_REPLY = 11  # the ranks the gap rule looks at
# Why a hook could not hand an answer over (``recall.agents.hook._write_within``): what the log may say.
UNSENT_WHY = frozenset({"closed", "broken pipe", "not read in time"})


# What a question reads from the settings (the ranking, the decision, the block): replaced in
# place when config.toml changes (``Commands._settings_changed``); a change anywhere else
# restarts the daemon.
IN_PLACE = ("search", "selector", "thresholds", "learned", "hook", "origins")


class _NotNow(Exception):
    """A question that cannot be asked now: no prompt, the model still loading, the asker gone."""

    def __init__(self, error: str) -> None:
        self.error = error


def _r4(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _note_key(hit) -> str:
    """What the rule of repeats knows a handed-over note by: its id, else its path."""
    note_id = hit.note.get("id")
    return str(note_id) if note_id else str(hit.note.get("path", ""))


class Commands:
    """The handlers, over the daemon's typed state; ``stop`` asks the loop to end."""

    def __init__(self, state: DaemonState, stop: Callable[[], None]) -> None:
        self.state = state
        self.request_stop = stop
        self.queries = 0  # questions answered
        self.roots = Roots()  # each message's project, found without a hung disk taking a worker
        self.repeats = Repeats()  # what each agent session was handed lately ([hook] repeat_after), in memory only

    def table(self) -> dict[str, Callable[[dict], dict]]:
        return {"query": self.cmd_query, "status": self.cmd_status, "stop": self.cmd_stop,
                "ping": self.cmd_ping, "explain": self.cmd_explain, "unsent": self.cmd_unsent}

    @property
    def model_id(self) -> str:
        return self.state.model_id

    @property
    def device(self) -> str:
        return self.state.device

    # commands
    def cmd_ping(self, req: dict) -> dict:
        return {"ok": True, "pid": os.getpid(), "model": self.model_id, "ready": self.state.ready.is_set()}

    def cmd_status(self, req: dict) -> dict:
        s, loaded = self.state, self.state.loaded
        idx = loaded.app.searcher.index if loaded is not None else None
        return {
            "ok": True, "pid": os.getpid(), "model": self.model_id, "device": self.device,
            "transport": s.transport, "socket": s.address, "started": s.started,
            "uptime_s": round(time.monotonic() - s.started_monotonic, 1), "queries": self.queries,
            "idle_exit_s": s.idle_exit_s, "ready": s.ready.is_set(), "load_s": s.load_s,
            "index_generation": None if idx is None else idx.generation,
            "model_calls": None if loaded is None else loaded.batcher.batches,
            "embedding": 0 if loaded is None else loaded.batcher.in_flight,
            "busy": s.busy, "timed_out": s.timed_out, "refused": s.refused,
            "model_switch": None if s.model_switch is None else dict(s.model_switch),
            # what it answers with, for `recall status` to compare with the asker's own (Y-03)
            "config": str(user_config_path()),
            "top_floor": None if loaded is None else loaded.app.rule().thresholds.top_floor,
            "watcher": "off" if s.watcher is None else ("polling" if s.watcher.polling else "on"),  # [watch] enabled
            "sessions": len(self.repeats),  # sessions whose recent headlines are held (never their ids)
        }

    def cmd_unsent(self, req: dict) -> dict:
        """The hook could not write the answer ``ref`` (a ``query``'s) to its agent: logged as
        ``unsent``, so that every reader of the log (``recall.agents.track.query_events``) counts
        that answer as none handed over."""
        ref, why = req.get("ref"), req.get("why")
        if not isinstance(ref, str) or not 0 < len(ref) <= 32 or not ref.isalnum():
            return {"ok": False, "error": "no ref"}
        log_event("unsent", ref=ref, why=why if why in UNSENT_WHY else "unknown")
        self.repeats.taken_back(ref)  # the agent never got them: the session may be handed them again
        return {"ok": True}

    def cmd_stop(self, req: dict) -> dict:
        log_event("stop", by="request")
        self.request_stop()
        return {"ok": True, "stopping": True}

    def _ask(self, req: dict) -> tuple[QueryResult, str]:
        """Run one question through the core: waits for the model while it loads, within the
        asker's deadline; embedded in a batch with the questions that arrive meanwhile."""
        prompt, cwd = req.get("prompt"), req.get("cwd")
        if not isinstance(prompt, str):
            raise _NotNow("no prompt")
        self.state.last_question = time.monotonic()
        give_up_at = req.get("give_up_at")  # the asker's deadline (epoch seconds), if any
        if not isinstance(give_up_at, int | float) or isinstance(give_up_at, bool):
            give_up_at = None
        t0 = time.perf_counter()
        if not self.state.ready.is_set():  # still loading: wait, within the asker's time
            self.state.asked_while_loading.set()
            wait = LOAD_WAIT_S if give_up_at is None else give_up_at - time.time()
            if not self.state.ready.wait(max(0.0, wait)):
                log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1), loading=True)
                raise _NotNow("loading")
        from recall.embedding.batcher import Expired
        from recall.ipc.client import ends
        from recall.privacy.paths import encode_project_path, shown_project_key
        from recall.ranking.scope import Scope

        loaded = self.state.loaded
        assert loaded is not None  # ready is set only once it is
        app = loaded.app
        root = self.roots.root(cwd if isinstance(cwd, str) and cwd else os.path.expanduser("~"))  # never raises
        scope = Scope(project=encode_project_path(root, resolve=False),  # resolved by the walk: no stat again
                      library=app.config.documents.library_per_message)
        project = shown_project_key(root)  # what is logged and shown: a secret in a folder name masked
        try:
            # The daemon's own cut, as a client's (the core reads what was typed around a paste,
            # then cuts again, exactly, to one window of the model).
            with loaded.batcher.give_up_at(give_up_at):
                return app.query(ends(prompt), scope), project
        except Expired:
            # Under a burst, questions queue for the model; one whose asker has already
            # given up is skipped instead of delaying everyone behind it.
            log_event("expired", waited_ms=round((time.perf_counter() - t0) * 1000, 1))
            raise _NotNow("expired") from None

    def cmd_query(self, req: dict) -> dict:
        t0 = time.perf_counter()
        changed = self._settings_changed()
        turn = self._turn(req)  # a message of an agent's session, counted whatever it gets
        try:
            res, project = self._ask(req)
        except _NotNow as exc:
            return {"ok": False, "error": exc.error}
        wall_ms = (time.perf_counter() - t0) * 1000
        self.queries += 1
        self.state.answered.set()
        if "stale" in res.timings and self.state.catch_up is not None:  # another model indexed since
            self.state.catch_up()
        if res.behind and self.state.repair is not None:  # a ranked note gone or changed on disk
            self.state.repair(res.behind)
        give_up_at = req.get("give_up_at")  # past it the hook has printed nothing: no injection (Y-01)
        late = {"late": True} if isinstance(give_up_at, int | float) and time.time() >= give_up_at else {}
        ref = os.urandom(6).hex()  # what the hook names when it could not hand this answer over (cmd_unsent)
        d, held = self._without_repeats(res, turn, ref if not late else None)
        timings = {k: round(v, 2) for k, v in res.timings.items()}
        timings["daemon_ms"] = round(wall_ms, 2)
        decision = d.as_dict()
        chosen = [{"id": c["id"], "score": c["score"]} for c in decision["chosen"]]
        # recall's own checks (`recall install`'s timing) are no message of yours: not counted as one
        log_event("check" if req.get("check") is True else "query", decision=d.kind, reason=d.reason,
                  top=_r4(d.top), gap=_r4(d.gap), bytes=d.line_bytes, chosen=chosen, timings_ms=timings,
                  project=project, ref=ref, **({"held": held} if held else {}), **late)
        return {  # the decision, block text included: each agent's module wraps it (recall.agents.registry)
            "ok": True, "ref": ref,
            "model": self.model_id,
            "decision": decision | {"text": d.text},
            "ranked": [{"id": h.note.get("id"), "name": h.note.get("name"), "kind": h.note.get("kind"),
                        "score": round(h.score, 4)} for h in res.hits[:RANKED_IN_REPLY]],
            "timings_ms": timings,
        } | changed

    def _turn(self, req: dict) -> Turn | None:
        """This message's place in its agent's session (``session``: the agent's id, as
        ``recall.agents.wire.session_of`` reads it), or None: no session, or ``[hook]
        repeat_after`` 0 (nothing kept then)."""
        session, app = session_of(req.get("session")), self.state.app
        if session is None or (app is not None and app.config.hook.repeat_after <= 0):
            return None
        return self.repeats.turn(session)

    def _without_repeats(self, res: QueryResult, turn: Turn | None, ref: str | None) -> tuple[Decision, int]:
        """The decision less the headlines its session was handed within ``[hook] repeat_after``
        messages, and how many were held back: with every one of them held back, nothing (the
        reason says when they were handed over); the rest are handed over and remembered
        (``ref`` None: the hook gave up on this answer, so nothing reached the agent)."""
        from recall.ranking.selector import Decision, line_bytes, render

        d = res.decision
        app = self.state.app
        repeat_after = app.config.hook.repeat_after if app is not None else 0
        if turn is None or not d.chosen or repeat_after <= 0:
            return d, 0
        held = self.repeats.held(turn, [_note_key(h) for h in d.chosen], repeat_after)
        ago = sorted(set(held.values()))
        if ago:
            span = f"{ago[0]}" if len(ago) == 1 else f"{ago[0]} to {ago[-1]}"
            when = f"handed over {span} message{'s' if ago[-1] > 1 else ''} ago in this session"
            rest = [h for h in d.chosen if _note_key(h) not in held]
            s = res.rule.selector
            text, kept = render(rest, s.full_max_bytes if d.kind == "full" else s.short_max_bytes)
            if not kept:
                d = Decision("nothing", f"{when} ([hook] repeat_after {repeat_after}); {d.reason}",
                             d.top, d.gap, negative=d.negative)
            else:
                d = Decision(d.kind, f"{d.reason}; {len(held)} held back, {when}", d.top, d.gap, kept, text,
                             line_bytes(text), d.negative)
        if ref is not None:
            self.repeats.gave(turn, [_note_key(h) for h in d.chosen], ref)
        return d, len(held)

    def _settings_changed(self) -> dict:
        """One stat of config.toml per question, before it is answered. When the settings
        changed, this question is answered with them: what the ranking and the decision read
        (thresholds, selector, search, hook) is replaced in place, and when anything else
        changed too (another model, the sources, the daemon's own settings), this daemon stops
        after this answer and the next question starts one with them (a new model embeds the
        notes again: ``lifecycle.switch_model``); ``restarting`` is added to the reply then.
        An outside tester's edit that should have silenced every note was ignored by the
        running daemon for hours."""
        from recall.config.load import load_config
        from recall.config.snapshot import config_stamp
        from recall.embedding.models import model_id_of
        from recall.privacy.paths import user_config_path

        stamp = config_stamp(user_config_path())
        if stamp == self.state.config_stamp:
            return {}
        self.state.config_stamp = stamp
        try:
            config = load_config()
            model_id = model_id_of(config.model, config.gemini.dimensions)
        except Exception:  # noqa: BLE001 - a broken config: the next `recall` command says what is wrong
            return {}
        app = self.state.app
        if model_id == self.model_id:
            if app is None or config == app.config:
                return {}
            before = app.config
            app.replace_settings(config)
            log_event("settings", by="config.toml changed")
            if dataclasses.replace(before, **{f: getattr(config, f) for f in IN_PLACE}) == config:
                return {}
        log_event("stop", by="model changed in config.toml" if model_id != self.model_id
                  else "settings changed in config.toml", model=model_id)
        self.request_stop()
        return {"restarting": model_id}

    def cmd_explain(self, req: dict) -> dict:
        """What ``query`` would hand over, with everything behind the decision (for
        ``recall ui``'s "try a message"): every ranked note, the settings in force and the
        config file each came from. Not an injection: nothing is logged, not even the
        decision, and the prompt never is."""
        self._settings_changed()
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

