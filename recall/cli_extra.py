"""CLI commands for the watcher and the MCP server (the team store's are in ``recall.cli_team``).

``recall.cli`` adds them with ``register(main)``; imports stay inside the commands so
``recall --help`` does not load watchdog, mcp or psycopg.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import click


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
    from .api import Recall

    return Recall()


# --- watch ------------------------------------------------------------------------

@click.command("watch")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory"]), default="dir", show_default=True,
              help="How DIRs are indexed (as in `recall index`).")
@click.option("--debounce-ms", type=int, default=None,
              help="Quiet time after the last file event before re-indexing (default: [watch] debounce_ms).")
@_clean_errors
def watch_cmd(dirs: tuple[Path, ...], kind: str, debounce_ms: int | None) -> None:
    """Re-index notes as they are saved, until Ctrl-C.

    Watches DIRs, or every folder already indexed under RECALL_HOME. A saved note is
    searchable within a second; searches never see it half-updated or twice.
    """
    from .api import project_key
    from .indexer import SourceSpec
    from .watch import run_watch

    sources = None
    if dirs:
        project = project_key(Path.cwd()) if kind == "memory" else None
        sources = [SourceSpec(kind, d, project) for d in dirs]
    app = _app()
    debounce = (app.config.watch.debounce_ms if debounce_ms is None else debounce_ms) / 1000
    run_watch(app, sources, debounce=debounce, echo=lambda line: click.echo(line, err=True))


# --- mcp --------------------------------------------------------------------------

@click.command("mcp")
def mcp_cmd() -> None:
    """Run the MCP server over stdio (for `claude mcp add`).

    Register it with: claude mcp add --scope user --transport stdio recall -- PYTHON -m recall.mcp
    """
    from .mcp_server import main as serve

    serve()


def register(main: click.Group) -> None:
    """Add ``watch``, ``mcp`` and ``team`` (``recall.cli_team``) to the ``recall`` command group."""
    from .cli_team import team
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main.add_command(watch_cmd)
    main.add_command(mcp_cmd)
    main.add_command(team)
