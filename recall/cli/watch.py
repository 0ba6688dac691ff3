"""`recall watch`: re-index notes as they are saved."""

from __future__ import annotations

from pathlib import Path

import click

from recall.cli.common import FolderPath, check_folders, fail_cleanly, recall_app, say


@click.command("watch")
@click.argument("dirs", nargs=-1, type=FolderPath(path_type=Path))
@click.option("--kind", type=click.Choice(["dir", "rule", "memory", "library"]), default="dir", show_default=True,
              help="How DIRs are indexed (as in `recall index`).")
@click.option("--debounce-ms", type=click.IntRange(0, 600_000), default=None,
              help="Quiet time after the last file event before re-indexing (default: [watch] debounce_ms).")
@fail_cleanly
def watch_cmd(dirs: tuple[Path, ...], kind: str, debounce_ms: int | None) -> None:
    """Re-index notes as they are saved, until Ctrl-C.

    Watches DIRs, or every folder already indexed under RECALL_HOME. A saved note is
    searchable within a second; searches never see it half-updated or twice.
    """
    from recall.indexing.indexer import SourceSpec
    from recall.privacy.paths import project_key
    from recall.watch import run_watch

    check_folders(dirs, "recall watch")
    sources = None
    if dirs:
        project = project_key(Path.cwd()) if kind == "memory" else None
        given = click.get_current_context().get_parameter_source("kind") is not click.core.ParameterSource.DEFAULT
        sources = [SourceSpec(kind, d, project, kind_given=given) for d in dirs]
    app = recall_app()
    debounce = None if debounce_ms is None else debounce_ms / 1000  # None: [watch] debounce_ms (recall.watch.Watcher)
    run_watch(app, sources, debounce=debounce, echo=lambda line: say(line, err=True))
