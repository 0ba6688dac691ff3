"""The MCP tools' logic (search, status, the hook's context), apart from the protocol.

Every answer reaches an agent: each string in it is one line of printable text
(``recall.privacy.safetext.agent_json``; the context's block is wrapped by Claude Code's agent module,
``recall.agents.claude``, which cleans it)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError
from recall.privacy.masking import mask_path
from recall.privacy.paths import os_error_line
from recall.privacy.safetext import agent_json

if TYPE_CHECKING:
    from recall.agents.deadline import Deadline
    from recall.api import Recall


log = logging.getLogger("recall.mcp")
MAX_K = 50  # an agent asking for more than this is paging through noise
# recall_context's threads at once, a stuck one included (its home on a mount that hangs): past it the
# empty answer at once, not one more thread (recall.agents.deadline.bounded)
CONTEXT_THREADS = 4


def failure(exc: OSError | RecallError) -> dict[str, str]:
    """What a tool answers when recall cannot: the one line a command would print (what is
    wrong, the command that repairs it), for the agent to relay, rather than the SDK's bare
    "Error executing tool"."""
    return agent_json({"error": str(exc) if isinstance(exc, RecallError) else os_error_line(exc)})


def _untaken(found: tuple[str, object]) -> None:
    """An answer ``recall_context`` did not hand over (it came after the budget): told to the daemon,
    which logged it as handed over, so that it is counted as none (``recall log --stats``, the page)."""
    from recall.agents.hook import tell_unsent

    if isinstance(found[1], str):
        tell_unsent(found[1], "not read in time")


def project_dir() -> Path:
    return Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


class RecallTools:
    """The tools' logic, separate from the protocol so it is testable in-process.

    The SDK runs synchronous tools in worker threads: the lock keeps one search at a
    time (embedders are not all thread-safe), and status opens its own SQLite connection
    (connections belong to the thread that opened them).
    """

    def __init__(self, app: Recall | None = None, cwd: Path | None = None) -> None:
        self._app = app
        self.cwd = cwd or project_dir()
        self._lock = threading.Lock()
        self._context_slots = threading.BoundedSemaphore(CONTEXT_THREADS)
        self._stamp: list | None = None  # config.toml as the app was made or last brought in line with it

    @property
    def app(self) -> Recall:
        """The server's ``Recall``, in line with config.toml at each call, as the daemon is: a
        server kept the model it started with for its whole session, answered nothing after a
        switch of model (a hidden "stale") and named the old one (an outside tester's AE01)."""
        from recall.config.snapshot import config_stamp
        from recall.privacy.paths import user_config_path

        stamp = config_stamp(user_config_path())
        if self._app is not None and stamp != self._stamp:
            self._follow_config()
        if self._app is None:
            from recall.api import Recall

            self._app = Recall()
        self._stamp = stamp
        return self._app

    def _follow_config(self) -> None:
        """Settings changed in config.toml: replaced in place, or, for another model, a new app."""
        from recall.config.load import load_config

        try:
            config = load_config()
        except RecallError:
            return  # a broken config: the next command says what is wrong
        app = self._app
        if app is None or config == app.config:
            return
        if config.model != app.config.model:
            import sqlite3

            self._app = None
            with contextlib.suppress(sqlite3.Error):  # its store was opened by a worker thread: left to the GC
                app.close()
        else:
            app.replace_settings(config)

    def search(self, query: str, k: int = 5, repo: str | None = None) -> dict[str, Any]:
        try:
            return self._search(query, k, repo)
        except (RecallError, OSError) as exc:  # damaged index, bad config, unusable home: said, with the repair
            return failure(exc)

    def _search(self, query: str, k: int, repo: str | None) -> dict[str, Any]:
        from recall.ranking.answer import for_agent
        from recall.ranking.scope import Scope

        repo = repo.strip() if isinstance(repo, str) and repo.strip() else None  # an agent's "": no other project
        scope = Scope.from_flags(self.cwd, repo, library=True)  # asked on purpose: library folders too
        with self._lock:
            return for_agent(self.app.search(query, scope, max(1, min(int(k), MAX_K))))

    def context(self, prompt: object, cwd: object = None, as_text: bool = False, session: object = None) -> str:
        """The hook's answer for ``prompt``: the command hook's JSON line (or, ``as_text``, the
        headline block as plain text), or "" (skipped, nothing, no daemon, late). ``session``: the
        agent's session id, when the hook passes it (``${session_id}``): a note handed over in it is
        not handed over again for ``[hook] repeat_after`` messages, as with the command hook.

        Within the hook's budget as a whole, reading the settings and RECALL_HOME included: computed
        in a thread of its own (``recall.agents.deadline.bounded``), "" at the deadline.

        Never raises: a hook tool that errors is shown to the user by some clients.
        """
        try:
            from recall.agents import deadline, registry
            from recall.agents.wire import agent_context

            claude = registry.get("claude")  # Claude Code's envelope and cap (Codex reads the same shape)
            started = time.monotonic()
            until = deadline.Deadline(started + deadline.SETTINGS_WAIT_S)  # the budget's, once the settings are read
            found = deadline.bounded(lambda d: self._context(prompt, cwd, session, started, d), until, None,
                                     self._context_slots, late=_untaken)
            block = found[0] if found else ""
            if not block:
                return ""
            return agent_context(block, claude.MAX_CHARS) if as_text else claude.output(block) or ""
        except Exception as exc:  # noqa: BLE001 - fail open, like the command hook
            log.debug("recall_context: %s", type(exc).__name__)  # never the message itself
            return ""

    def _context(self, prompt: object, cwd: object, session: object, started: float,
                 until: Deadline) -> tuple[str, str] | None:
        """The daemon's block for ``prompt`` and its ref, or None; an answer read after the budget
        (the thread was held) is told to the daemon as never handed over, and is None."""
        from recall.agents.deadline import GRACE_S
        from recall.agents.hook import block_of, hook_settings, reply_for
        from recall.agents.wire import session_of

        conf = hook_settings(until)
        if conf is None:
            return None
        until.move(started + conf["budget_ms"] / 1000.0 + GRACE_S)
        # No daemon: the hook's path starts one and waits for it within the budget (the first
        # message after a cold start is answered when the start fits in it).
        where = cwd if isinstance(cwd, str) and cwd else str(self.cwd)
        reply = reply_for(prompt, where, os.environ.get("CLAUDE_CODE_ENTRYPOINT", ""), started, conf,
                          session_of(session))
        block, ref = block_of(reply), reply.get("ref") if isinstance(reply, dict) else None
        if not block:
            return None
        if time.monotonic() > started + conf["budget_ms"] / 1000.0:
            _untaken((block, ref))
            return None
        return block, ref if isinstance(ref, str) else ""

    def status(self) -> dict[str, Any]:
        try:
            return self._status()
        except (RecallError, OSError) as exc:
            from recall.ipc.client import daemon_status

            try:  # the daemon's status needs the same home: where that is what failed, it is not asked
                daemon = daemon_status()
            except (RecallError, OSError):
                daemon = {"running": False, "note": "not asked: the home above cannot be used"}
            return {**failure(exc), **agent_json({"daemon": daemon})}

    def _status(self) -> dict[str, Any]:
        st = self.app.status()
        return agent_json({
            "recall_home": mask_path(str(st.home)),
            "model": st.model,
            "counts": st.counts,
            "index": {"generation": st.generation,
                      "runs": [{"model_id": m, "generation": g, "built_at": t, "chunks": c}
                               for m, g, t, c in st.runs]},
            "indexing": st.indexing,
            "project": mask_path(str(self.cwd)),  # as `recall status` prints it (an outside tester's, stop 58)
            **({"index_problems": st.problems} if st.problems else {}),  # as `recall status` says them (Y-06)
        })
