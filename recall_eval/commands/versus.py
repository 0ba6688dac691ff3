"""``recall-eval versus``: whole pipelines side by side (``recall_eval.comparison.versus``):
two or more ``recall-eval run`` results on the same questions, tested question by question."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import UserError, echo_json, fail_cleanly, refuse_to_replace, say


@click.command("versus")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Also write the table (Markdown) here.")
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@fail_cleanly
def command(runs: tuple[Path, ...], out: Path | None, force: bool, as_json: bool) -> None:
    """Compare RUNS (run folders or results.json of `recall-eval run`, e.g. one per --model;
    the first is the reference) on the question sets they share, held-out sets included:
    intervals per run, paired tests against the first (Holm-corrected)."""
    from recall_eval.comparison.versus import compare_runs, markdown
    from recall_eval.reports.report import load_results

    if out is not None and out.is_dir():
        raise UserError(f"--out {out} is a folder: name the file to write, e.g. {out / 'versus.md'}")
    if out is not None:  # before the runs are read and tested, not after
        from recall_eval.files import check_output

        check_output(out, "--out", folder=False)
        refuse_to_replace(out, force)

    result = compare_runs([load_results(p) for p in runs], [str(p) for p in runs])
    if as_json:
        echo_json(result)
    else:
        say(markdown(result))
    if out is not None:
        from recall_eval.files import masked, write_private

        write_private(out, masked(markdown(result) + "\n"))
