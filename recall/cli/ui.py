"""``recall ui``: the local web page (recall/ui). Starlette and uvicorn are imported only
when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from recall.cli.common import FolderPath, UserError, fail_cleanly, say
from recall.privacy.paths import expand_user


@click.command("ui")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--no-open", is_flag=True, help="Print the address; do not open a browser.")
@click.option("--reports", type=FolderPath(path_type=Path, file_okay=False, exists=True),
              help="Evaluation reports folder (default: ./reports, the clone's reports/, RECALL_HOME/reports).")
@click.option("--allow-writes", is_flag=True, help="Show the re-index button (a POST with this launch's token).")
@click.option("--upload-dir", type=FolderPath(path_type=Path, file_okay=False, exists=True),
              help="With --allow-writes: uploaded files land in this folder, which is then indexed.")
@fail_cleanly  # Ctrl-C: one line and 130, not click's "Aborted!" and 1 (stop 48, Z07)
def ui_cmd(port: int, no_open: bool, reports: Path | None, allow_writes: bool, upload_dir: Path | None) -> None:
    """A local web page: notes, try a message, injections, quality, status.

    Serves on 127.0.0.1 only. It opens your browser on a 0600 file (never a command line
    naming a code) that holds a one-time code, spent on first use for a cookie every request
    needs (the code left in the browser's history opens nothing; `--no-open`: it says where
    that file is). Searches go to the daemon (started if down); the page loads no model.
    Read-only unless --allow-writes; uploads need --upload-dir too.
    """
    if upload_dir is not None and not allow_writes:
        raise UserError("--upload-dir needs --allow-writes (uploads write files)")
    try:
        from recall.ui.server import serve
    except ImportError as exc:
        raise UserError(f"the page needs the ui extra ({exc.name} missing): pip install -e '.[ui]'") \
            from None
    try:
        serve(port=port, open_browser=not no_open, reports=reports, allow_writes=allow_writes, say=say,
              upload_dir=expand_user(upload_dir, "--upload-dir").resolve() if upload_dir else None)
    except OSError as exc:
        raise UserError(f"cannot serve on 127.0.0.1:{port} ({exc.strerror or exc}); "
                                   "try another --port, or 0 for a free one") from None
