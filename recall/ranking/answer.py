"""What a search on purpose answers: the K best notes, each with its best chunk's text as a
snippet, and what the selector would hand over (``search_answer``: `recall search --json` and
the MCP tool ``recall_search``, one shape for both, as the README promises; an outside tester
found the two apart, stop 48); that answer as an agent reads it (``for_agent``: the MCP tool's
and `recall search --for-agent`'s). ``recall.api.Recall.search`` asks and answers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.privacy.masking import mask_key
from recall.privacy.paths import DB_NAME
from recall.privacy.safetext import agent_block, agent_json

if TYPE_CHECKING:
    from recall.ranking.scope import Scope
    from recall.ranking.selector import Decision, Hit
    from recall.store.sqlite import Store


def search_answer(home: Path, model_id: str, text: str, scope: Scope, k: int,
                  hits: list[Hit], decision: Decision, timings: dict[str, float]) -> dict[str, Any]:
    """The answer for ``text`` in ``scope``: the first ``k`` of ``hits`` (``Recall.query``'s, with
    its ``decision`` and ``timings``) with their snippets, read from ``home``'s store."""
    from recall.store.sqlite import Store

    store = Store(home / DB_NAME)  # its own connection: any thread may ask (the MCP server's do)
    try:
        snippets = [_snippet(store, model_id, h.note, h.chunk, text) for h in hits[:k]]
    finally:
        store.close()
    return {
        "model": model_id,
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
        **({"stale": f"not searched: the notes are being indexed with {model_id} (a switch of model); "
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
