"""`recall search`: look something up on purpose, over every source (notes, rules, folders,
conversations' titles, documents, screenshots, recordings and library folders)."""

from __future__ import annotations

from pathlib import Path

import click

from recall.cli.common import fail_cleanly, nothing_yet, recall_app, say, say_json, scope_flags, typed_text
from recall.privacy.safetext import one_line


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
    from recall.ranking.answer import for_agent as agent_answer
    from recall.ranking.scope import Scope

    text = typed_text(words)
    app = recall_app()
    scope = Scope.from_flags(Path.cwd(), *scope_flags(repo, everything), library=True)
    answer = app.search(text, scope, k, typed=True)
    if for_agent:  # the MCP tool's answer: nothing in a note can pose as markup or a new line (the plugin's fallback)
        say_json(agent_answer(answer))
        return
    if as_json:  # terminal-safe: control characters escaped as JSON spells them, still valid JSON
        say_json(answer, indent=2)
        return
    rows = answer["results"]
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

