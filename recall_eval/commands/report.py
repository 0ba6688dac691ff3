"""``recall-eval report``: re-render a run's report.md and report.html from results.json."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import UserError, collection_option, fail_cleanly, say


@click.command("report")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@collection_option("With no RUN_DIR: re-render reports/COLLECTION/<latest run>.", default="sample",
                   show_default=True)
@click.option("--reports", "reports_root", type=click.Path(path_type=Path),
              help="Reports folder (default: <project>/reports).")
@fail_cleanly
def command(run_dir: Path | None, collection: str, reports_root: Path | None) -> None:
    """Rewrite the report files of RUN_DIR (default: the latest run of --collection)."""
    from recall_eval.datasets.collections import PROJECT_ROOT
    from recall_eval.files import check_output
    from recall_eval.reports.report import rerender

    root = reports_root or PROJECT_ROOT / "reports"
    if run_dir is None:
        check_output(root, "--reports", folder=True)  # a file there was "no run yet"; said as every command says it
        latest = root / collection / "latest"
        if not latest.exists():
            raise UserError(f"no run yet for {collection!r} ({latest} missing): run `recall-eval run` first")
        run_dir = root / collection / latest.read_text(encoding="utf-8").strip()
        if run_dir.resolve().parent != (root / collection).resolve():  # `latest` names a run of this collection
            raise UserError(f"{latest} names no run of {collection!r} ({run_dir}): run `recall-eval run` again")
    out = rerender(run_dir)
    say(out / "report.html")
