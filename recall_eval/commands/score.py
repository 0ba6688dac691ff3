"""``recall-eval score``: metrics of one collection against one or more question sets."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import (
    echo_json,
    fail_cleanly,
    log,
    resolve_inputs,
    resolve_note_questions,
    say,
    scoring_options,
    show_progress,
)


@click.command("score")
@scoring_options
@click.option("--baselines", is_flag=True, help="Also score the baselines (original rule, BM25, grep).")
@click.option("--records", is_flag=True, help="Include every question's ranking and decision in the JSON.")
@click.option("--seed", default=None, type=click.IntRange(0, 2**32 - 1),
              help="Bootstrap seed (default: the harness's fixed seed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object of metrics on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@fail_cleanly
def command(collection: str | None, notes: Path | None, questions: tuple[Path, ...], note_questions: Path | None,
            no_note_questions: bool, model: str | None, home: Path | None, baselines: bool, records: bool,
            seed: int | None, as_json: bool, quiet: bool) -> None:
    """Score NOTES against question sets: hit rates, MRR, silence, bytes, 95% intervals.

    The notes are indexed into a temporary RECALL_HOME (or a cache under --home /
    RECALL_HOME) with the effective config's model, or --model.
    """
    from recall_eval.datasets.collections import load_sets
    from recall_eval.reports.report import summary_table
    from recall_eval.scoring import metrics as M
    from recall_eval.scoring.score import describe_sets, score_collection, strip_records

    name, notes_dir, files = resolve_inputs(collection, notes, questions)
    exp, use_questions = resolve_note_questions(collection, note_questions, no_note_questions, notes_dir)
    qs = load_sets(files)
    log(f"scoring {len(qs)} questions from {len(files)} set(s) against {notes_dir}")
    results = score_collection(notes_dir, qs, model=model, home=home, baselines=baselines,
                               progress=show_progress(quiet), seed=M.SEED if seed is None else seed, log=log,
                               note_questions=exp, use_questions=use_questions)
    results["collection"] = name
    results["sets"] = describe_sets(files)
    if as_json:
        echo_json(results if records else strip_records(results))
        return
    say(summary_table(results))
