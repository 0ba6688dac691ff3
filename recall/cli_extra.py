"""CLI commands for the watcher, the MCP server and the team store.

``recall.cli`` adds them with ``register(main)``; imports stay inside the commands so
``recall --help`` does not load watchdog, mcp or psycopg.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import click


class TeamError(click.ClickException):
    """One-line error for the user (exit 1)."""


def _pg_store_error() -> type[Exception]:
    from .pgstore import PgStoreError

    return PgStoreError


def _clean_errors(fn):
    """``recall.cli.clean_errors`` plus PgStoreError. ``recall.cli`` imports this module at
    its end, so importing it here at import time would be circular: look it up per call."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .cli import clean_errors

        return clean_errors(_pg_store_error)(fn)(*args, **kwargs)
    return wrapper


def _app():
    from .service import Recall

    return Recall()


# --- watch ------------------------------------------------------------------------

@click.command("watch")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory"]), default="dir", show_default=True,
              help="How DIRs are indexed (as in `recall index`).")
@click.option("--debounce-ms", default=200, show_default=True,
              help="Quiet time after the last file event before re-indexing.")
@_clean_errors
def watch_cmd(dirs: tuple[Path, ...], kind: str, debounce_ms: int) -> None:
    """Re-index notes as they are saved, until Ctrl-C.

    Watches DIRs, or every folder already indexed under RECALL_HOME. A saved note is
    searchable within a second; searches never see it half-updated or twice.
    """
    from .indexer import SourceSpec
    from .service import project_key
    from .watch import run_watch

    sources = None
    if dirs:
        project = project_key(Path.cwd()) if kind == "memory" else None
        sources = [SourceSpec(kind, d, project) for d in dirs]
    run_watch(_app(), sources, debounce=debounce_ms / 1000, echo=lambda line: click.echo(line, err=True))


# --- mcp --------------------------------------------------------------------------

@click.command("mcp")
def mcp_cmd() -> None:
    """Run the MCP server over stdio (for `claude mcp add`).

    Register it with: claude mcp add --scope user --transport stdio recall -- PYTHON -m recall.mcp
    """
    from .mcp_server import main as serve

    serve()


# --- team -------------------------------------------------------------------------

@click.group("team")
def team() -> None:
    """Share notes through a PostgreSQL + pgvector server (RECALL_PG_URL or [team] url).

    Notes are embedded here; the server gets masked text and vectors, and at search time
    only the question's vector, never its text.
    """


def _team_index(app, url: str | None):
    from .pgstore import open_team_index

    emb = app.embedder
    return open_team_index(app.config, emb.model_id, emb.dimension, url)


_url_option = click.option("--url", help="postgresql:// URL (default: RECALL_PG_URL, then [team] url).")


@team.command("push")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory"]), default="dir", show_default=True,
              help="What DIRs hold.")
@click.option("--team/--private", "shared", default=None,
              help="Visible to every teammate, or to this machine only. Default: rules and dirs "
                   "are shared, memory is private.")
@_url_option
@_clean_errors
def team_push(dirs: tuple[Path, ...], kind: str, shared: bool | None, url: str | None) -> None:
    """Push notes (DIRs, or this project's memory and the configured rule folders).

    Only new or changed notes are embedded and sent; notes deleted here are deleted there.
    """
    from .backends import SourceRef, push_notes
    from .notes import read_folder
    from .service import project_key

    app = _app()
    cwd = Path.cwd()
    if dirs:
        plan = [(kind, d, project_key(cwd) if kind == "memory" else None) for d in dirs]
    else:
        plan = [(s.kind, s.root, s.project) for s in app.default_sources(cwd) if s.root.is_dir()]
    if not plan:
        raise TeamError("nothing to push: give DIRs, or create this project's memory folder first")
    index = _team_index(app, url)
    try:
        for k, folder, project in plan:
            root = folder.resolve()
            notes, problems = read_folder(root)
            for p in problems:
                click.echo(f"warning: {p}", err=True)
            visible = shared if shared is not None else k != "memory"
            stats = push_notes(index, SourceRef(k, str(root), project, visible), notes, app.embedder,
                               app.config.chunking)
            click.echo(f"{root} ({k}, {'team' if visible else 'private'}): added {stats.added}, "
                       f"changed {stats.changed}, removed {stats.removed}, unchanged {stats.unchanged}")
    finally:
        index.close()


@team.command("search")
@click.argument("text")
@click.option("--repo", help="Search one other project's notes (its folder name).")
@click.option("--all", "everything", is_flag=True, help="Every note you can see.")
@click.option("-k", "k", default=10, show_default=True, help="Notes to list.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_url_option
@_clean_errors
def team_search(text: str, repo: str | None, everything: bool, k: int, as_json: bool,
                url: str | None) -> None:
    """Search your notes and the team's on the server (the question stays here)."""
    from .search import Scope
    from .service import default_scope

    app = _app()
    scope = Scope(everything=True) if everything else (
        Scope(repo=repo, shared=False) if repo else default_scope(Path.cwd()))
    qvec = app.embedder.embed_queries([text])  # only this vector is sent
    index = _team_index(app, url)
    try:
        hits = index.search(qvec, scope, k)
    finally:
        index.close()
    if as_json:
        click.echo(json.dumps([{"score": round(h.score, 4), **{key: h.note.get(key) for key in (
            "id", "name", "description", "path", "kind", "owner", "team")}} for h in hits],
            ensure_ascii=False, indent=2))
        return
    if not hits:
        click.echo("(no notes)", err=True)
    for rank, h in enumerate(hits, 1):
        n = h.note
        click.echo(f"{rank:3d}  {h.score:.4f}  [{n['kind']}] {n['name']} — {n['description']}  "
                   f"({n['owner']}: {n['path']})")


@team.command("status")
@_url_option
@_clean_errors
def team_status(url: str | None) -> None:
    """Server, schema, model and the counts this machine can see."""
    app = _app()
    index = _team_index(app, url)
    try:
        info = {"owner": index.owner, "schema": index.schema, "model_id": index.model_id, **index.counts()}
    finally:
        index.close()
    for key, value in info.items():
        click.echo(f"{key}: {value}")


@team.command("forget")
@click.confirmation_option(prompt="Delete every note this machine pushed to the team store?")
@_url_option
@_clean_errors
def team_forget(url: str | None) -> None:
    """Delete everything this machine pushed (teammates' notes are untouched)."""
    app = _app()
    index = _team_index(app, url)
    try:
        click.echo(f"deleted {index.delete_own()} source(s) of {index.owner}")
    finally:
        index.close()


def register(main: click.Group) -> None:
    """Add ``watch``, ``mcp`` and ``team`` to the ``recall`` command group."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main.add_command(watch_cmd)
    main.add_command(mcp_cmd)
    main.add_command(team)
