"""The MCP tools' logic (search, status, the hook's context), apart from the protocol.

Every answer reaches an agent: each string in it is one line of printable text
(``recall.privacy.safetext.agent_json``; the context's block is wrapped by Claude Code's agent module,
``recall.agents.claude``, which cleans it)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.errors import RecallError
from recall.privacy.masking import mask_key, mask_path
from recall.privacy.paths import os_error_line
from recall.privacy.safetext import agent_block, agent_json

if TYPE_CHECKING:

    from recall.api import Recall
    from recall.ranking.scope import Scope
    from recall.store.sqlite import Store


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
        from recall.ranking.scope import Scope

        repo = repo.strip() if isinstance(repo, str) and repo.strip() else None  # an agent's "": no other project
        scope = Scope.from_flags(self.cwd, repo, library=True)  # asked on purpose: library folders too
        with self._lock:
            return for_agent(search_answer(self.app, query, scope, max(1, min(int(k), MAX_K))))

    def context(self, prompt: object, cwd: object = None, as_text: bool = False, session: object = None) -> str:
        """The hook's answer for ``prompt``: the command hook's JSON line (or, ``as_text``, the
        headline block as plain text), or "" (skipped, nothing, no daemon, late). ``session``: the
        agent's session id, when the hook passes it (``${session_id}``): a note handed over in it is
        not handed over again for ``[hook] repeat_after`` messages, as with the command hook.

        Never raises: a hook tool that errors is shown to the user by some clients.
        """
        try:
            from recall.agents import registry
            from recall.agents.wire import agent_context

            claude = registry.get("claude")  # Claude Code's envelope and cap (Codex reads the same shape)
            block = self._context(prompt, cwd, session)
            if not block:
                return ""
            return agent_context(block, claude.MAX_CHARS) if as_text else claude.output(block) or ""
        except Exception as exc:  # noqa: BLE001 - fail open, like the command hook
            log.debug("recall_context: %s", type(exc).__name__)  # never the message itself
            return ""

    def _context(self, prompt: object, cwd: object, session: object = None) -> str:
        from recall.agents.hook import context_block
        from recall.agents.wire import session_of

        # No daemon: the hook's path starts one and waits for it within the budget (the first
        # message after a cold start is answered when the start fits in it).
        where = cwd if isinstance(cwd, str) and cwd else str(self.cwd)
        return context_block(prompt, where, os.environ.get("CLAUDE_CODE_ENTRYPOINT", ""), session=session_of(session))

    def status(self) -> dict[str, Any]:
        try:
            return self._status()
        except (RecallError, OSError) as exc:
            from recall.ipc.client import daemon_status

            return {**failure(exc), **agent_json({"daemon": daemon_status()})}

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


def search_answer(app: Recall, text: str, scope: Scope, k: int, typed: bool = False) -> dict[str, Any]:
    """The K best notes for ``text`` in ``scope`` and what the selector would hand over: the
    MCP tool ``recall_search``'s answer, and `recall search --json` / ``--for-agent``'s (one
    shape for both, as the README promises; an outside tester found the two apart, stop 48)."""
    from recall.privacy.paths import DB_NAME
    from recall.store.sqlite import Store

    res = app.query(text, scope, k_notes=k, search_short=True, typed=typed)  # asked on purpose: searched
    hits, timings, decision = res.hits, res.timings, res.decision
    store = Store(app.home / DB_NAME)  # its own connection: any thread may ask (the MCP server's do)
    try:
        snippets = [_snippet(store, app.embedder.model_id, h.note, h.chunk, text) for h in hits[:k]]
    finally:
        store.close()
    return {
        "model": app.embedder.model_id,
        "scope": {"project": None if scope.project is None else mask_key(scope.project),  # as the CLI says it
                  "repo": scope.repo, "shared": scope.shared, "library": scope.library},
        "results": [
            {"rank": rank, "score": round(h.score, 4), "id": h.note.get("id"), "name": h.note.get("name"),
             "description": h.note.get("description"), "path": h.note.get("path"), "kind": h.note.get("kind"),
             "type": h.note.get("type") or "", "location": h.location, "snippet": snippet}
            for rank, (h, snippet) in enumerate(zip(hits[:k], snippets, strict=True), 1)
        ],
        "selector": {**decision.as_dict(), "text": decision.text},
        "timings_ms": {name: round(ms, 2) for name, ms in timings.items()},
        **({"withheld": "not searched: the index is a cloud model's and [gemini] send_messages is false, "
                        "so an agent's query is not sent; the user can run `recall search` themselves"}
           if "withheld" in timings else {}),
        **({"stale": f"not searched: the notes are being indexed with {app.embedder.model_id} (a switch of model); "
                     "`recall status` shows how far, and `recall index` finishes it now"}
           if "stale" in timings else {}),
    }


def for_agent(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as an agent reads it: every string one line of plain text (``agent_json``);
    recall's own block as the hook hands it over (its curly quotes delimit fields already
    sanitized, so it is not straightened with the strings others wrote)."""
    out = agent_json(answer)
    out["selector"]["text"] = agent_block(answer["selector"]["text"])
    return out


SNIPPET_CHARS = 240


def _snippet(store: Store, model_id: str, note: dict, chunk: int | None, query: str) -> str:
    """The best chunk's text on one line, without its "name · location" first line, from
    a little before the first word of the query it holds."""
    if chunk is None or note.get("pk") is None or chunk < 0:
        return ""
    matched = store.indexed_chunk(int(note["pk"]), model_id, chunk)
    if matched is None:
        return ""
    role, text = matched
    body = text.split("\n", 1)[1] if role == "text" and "\n" in text else text
    flat = " ".join(body.split())
    low = flat.lower()
    found = [i for w in query.lower().split() if len(w) > 2 and (i := low.find(w)) >= 0]
    start = max(0, min(found) - 60) if found else 0
    if start:
        start = flat.find(" ", start) + 1 or start
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")
