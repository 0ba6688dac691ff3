"""`recall search`: look something up on purpose, over every source (notes, rules, folders,
conversations' titles, documents, screenshots, recordings and library folders)."""

from __future__ import annotations

from pathlib import Path

import click

from recall.cli.common import fail_cleanly, nothing_yet, recall_app, say, say_json, typed_text
from recall.privacy.safetext import one_line

SNIPPET_CHARS = 240


@click.command()
@click.argument("words", nargs=-1, required=True)
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 100), help="Results to show.")
@click.option("--repo", help="Search one other project's notes and titles (its folder name).")
@click.option("--all", "everything", is_flag=True, help="Search every project, not just this one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--for-agent", is_flag=True, help="Print JSON for an agent to read: every string one line of plain "
                                                "text, no markup, as the MCP tool recall_search answers.")
@fail_cleanly
def search(words: tuple[str, ...], k: int, repo: str | None, everything: bool, as_json: bool,
           for_agent: bool) -> None:
    """Search for WORDS and list the best matches, whatever the hook would say.

    Unlike `recall query` (what the hook would hand over, or nothing), this always lists
    the K best notes and documents: this project's memory and conversation titles, the
    shared rules and folders, and library folders (mirrored repositories' docs, which
    the hook leaves out). A document's result names the page, slide, sheet, section or
    time range that matched, with the matching text. WORDS `-`: read from stdin (a
    command line is visible to other users in the process list).
    """
    from recall.ranking.scope import Scope

    text = typed_text(words)
    app = recall_app()
    scope = Scope.from_flags(Path.cwd(), repo, everything, library=True)
    res = app.query(text, scope, k_notes=k, search_short=True, typed=True)
    rows = [_row(app, rank, h, text) for rank, h in enumerate(res.hits[:k], 1)]
    found = {"model": app.embedder.model_id, "query_chars": len(text), "results": rows}
    if for_agent:  # a document's text cannot pose as markup or a new line to the agent (the plugin's fallback)
        from recall.privacy.safetext import agent_json

        say_json(agent_json(found))
        return
    if as_json:  # terminal-safe: control characters escaped as JSON spells them, still valid JSON
        say_json(found, indent=2)
        return
    if not rows:
        say(f"({nothing_yet(app.home, 'nothing indexed matches: run `recall index DIR` first, or widen with --all')})",
            err=True)
        return
    for r in rows:  # every field from a note or document: one line, nothing a terminal obeys
        where = f" · {one_line(r['location'])}" if r["location"] else ""
        what = r["type"] if r["type"] in ("document", "image", "recording") else "note"
        say(f"{r['rank']:3d}  {r['score']:.4f}  {one_line(r['name'])}{where}  [{one_line(r['kind'])} {what}]")
        say(f"     {one_line(r['path'])}")
        if r["snippet"]:
            say(f"     {one_line(r['snippet'])}")


def _row(app, rank: int, hit, query: str) -> dict:
    note = hit.note
    return {"rank": rank, "score": round(hit.score, 4), "name": note.get("name"), "id": note.get("id"),
            "kind": note.get("kind"), "type": note.get("type") or "", "path": note.get("path"),
            "location": hit.location, "snippet": _snippet(app, note, hit.chunk, query)}


def _snippet(app, note: dict, chunk: int | None, query: str) -> str:
    """The best chunk's text on one line, without its "name · location" first line, from
    a little before the first word of the query it holds."""
    if chunk is None or note.get("pk") is None:
        return ""
    detail = app.store.note_detail(int(note["pk"]))
    if detail is None or not 0 <= chunk < len(detail["chunks"]):
        return ""
    role, text = detail["chunks"][chunk]
    body = text.split("\n", 1)[1] if role == "text" and "\n" in text else text
    flat = " ".join(body.split())
    low = flat.lower()
    found = [i for w in query.lower().split() if len(w) > 2 and (i := low.find(w)) >= 0]
    start = max(0, min(found) - 60) if found else 0
    if start:
        start = flat.find(" ", start) + 1 or start
    piece = flat[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(flat) else "")
