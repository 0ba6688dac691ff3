"""The MCP tools' logic (search, status, the hook's context), apart from the protocol.

Every answer reaches an agent: each string in it is one line of printable text
(``recall.privacy.safetext.agent_json``; the context's block is wrapped by Claude Code's agent module,
``recall.agents.claude``, which cleans it)."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError
from recall.privacy.paths import os_error_line
from recall.privacy.safetext import agent_block, agent_json

if TYPE_CHECKING:

    from recall.api import Recall


log = logging.getLogger("recall.mcp")
MAX_K = 50  # an agent asking for more than this is paging through noise


def failure(exc: OSError | RecallError) -> dict[str, str]:
    """What a tool answers when recall cannot: the one line a command would print (what is
    wrong, the command that repairs it), for the agent to relay, rather than the SDK's bare
    "Error executing tool"."""
    return agent_json({"error": str(exc) if isinstance(exc, RecallError) else os_error_line(exc)})


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

    @property
    def app(self) -> Recall:
        if self._app is None:
            from recall.api import Recall

            self._app = Recall()
        return self._app

    def search(self, query: str, k: int = 5, repo: str | None = None) -> dict[str, Any]:
        try:
            return self._search(query, k, repo)
        except (RecallError, OSError) as exc:  # damaged index, bad config, unusable home: said, with the repair
            return failure(exc)

    def _search(self, query: str, k: int, repo: str | None) -> dict[str, Any]:
        from recall.ranking.scope import Scope

        k = max(1, min(int(k), MAX_K))
        scope = Scope.from_flags(self.cwd, repo, library=True)  # asked on purpose: library folders too
        with self._lock:
            app = self.app
            res = app.query(query, scope, k_notes=k, search_short=True)  # asked on purpose: searched
        hits, timings, decision = res.hits, res.timings, res.decision
        answer = agent_json({
            "model": app.embedder.model_id,
            "scope": {"project": scope.project, "repo": scope.repo, "shared": scope.shared,
                      "library": scope.library},
            "results": [
                {"rank": rank, "score": round(h.score, 4), "id": h.note.get("id"), "name": h.note.get("name"),
                 "description": h.note.get("description"), "path": h.note.get("path"),
                 "kind": h.note.get("kind"), "type": h.note.get("type"), "location": h.location}
                for rank, h in enumerate(hits[:k], 1)
            ],
            "selector": decision.as_dict(),
            "timings_ms": {name: round(ms, 2) for name, ms in timings.items()},
            **({"withheld": "not searched: the index is a cloud model's and [gemini] send_messages is false, "
                            "so an agent's query is not sent; the user can run `recall search` themselves"}
               if "withheld" in timings else {}),
        })
        # recall's own block, as the hook hands it over: its curly quotes delimit the (already
        # sanitized) fields, so it is not straightened with the strings others wrote.
        answer["selector"]["text"] = agent_block(decision.text)
        return answer

    def context(self, prompt: object, cwd: object = None, as_text: bool = False) -> str:
        """The hook's answer for ``prompt``: the command hook's JSON line (or, ``as_text``, the
        headline block as plain text), or "" (skipped, nothing, no daemon, late).

        Never raises: a hook tool that errors is shown to the user by some clients.
        """
        try:
            from recall.agents import registry
            from recall.agents.wire import agent_context

            claude = registry.get("claude")  # Claude Code's envelope and cap (Codex reads the same shape)
            block = self._context(prompt, cwd)
            if not block:
                return ""
            return agent_context(block, claude.MAX_CHARS) if as_text else claude.output(block) or ""
        except Exception as exc:  # noqa: BLE001 - fail open, like the command hook
            log.debug("recall_context: %s", type(exc).__name__)  # never the message itself
            return ""

    def _context(self, prompt: object, cwd: object) -> str:
        from recall.agents.hook import context_block

        # No daemon: the hook's path starts one and waits for it within the budget (the first
        # message after a cold start is answered when the start fits in it).
        where = cwd if isinstance(cwd, str) and cwd else str(self.cwd)
        return context_block(prompt, where, os.environ.get("CLAUDE_CODE_ENTRYPOINT", ""))

    def status(self) -> dict[str, Any]:
        try:
            return self._status()
        except (RecallError, OSError) as exc:
            from recall.ipc.client import daemon_status

            return {**failure(exc), **agent_json({"daemon": daemon_status()})}

    def _status(self) -> dict[str, Any]:
        st = self.app.status()
        return agent_json({
            "recall_home": str(st.home),
            "model": st.model,
            "counts": st.counts,
            "index": {"generation": st.generation,
                      "runs": [{"model_id": m, "generation": g, "built_at": t, "chunks": c}
                               for m, g, t, c in st.runs]},
            "indexing": st.indexing,
            "project": str(self.cwd),
        })


