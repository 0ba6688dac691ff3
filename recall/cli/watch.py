"""`recall watch`: re-index notes as they are saved."""

from __future__ import annotations

import functools
from pathlib import Path

import click


def _pg_store_error() -> type[Exception]:
    from ..pgstore import PgStoreError

    return PgStoreError


def _clean_errors(fn):
    """``recall.cli.clean_errors`` plus PgStoreError. ``recall.cli`` imports this module at
    its end, so importing it here at import time would be circular: look it up per call."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from .common import clean_errors

        return clean_errors(_pg_store_error)(fn)(*args, **kwargs)
    return wrapper


def _app():
    from ..api import Recall

    return Recall()



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
    from ..api import project_key
    from ..indexer import SourceSpec
    from ..watch import run_watch

    sources = None
    if dirs:
        project = project_key(Path.cwd()) if kind == "memory" else None
        sources = [SourceSpec(kind, d, project) for d in dirs]
    run_watch(_app(), sources, debounce=debounce_ms / 1000, echo=lambda line: click.echo(line, err=True))
