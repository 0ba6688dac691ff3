"""``recall-eval run``: the main job (``make eval``): score a collection with the default
pipeline and the baselines, write the report, print the summary table."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import (
    fail_cleanly,
    log,
    resolve_inputs,
    resolve_note_questions,
    say,
    scoring_options,
    show_progress,
)


@click.command("run")
@scoring_options
@click.option("--reports", "reports_root", type=click.Path(path_type=Path),
              help="Reports folder (default: <project>/reports).")
@click.option("--latency", is_flag=True, help="Run the hook benchmark first (otherwise its last result, "
                                               "if any, goes into the report).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@fail_cleanly
def command(collection: str | None, notes: Path | None, questions: tuple[Path, ...], note_questions: Path | None,
            no_note_questions: bool, model: str | None, home: Path | None, reports_root: Path | None, latency: bool,
            quiet: bool) -> None:
    """Score --collection (default: sample) with every shipped set, baselines included,
    then each held-out set (datasets/NAME/heldout/, written under other briefs and never
    tuned on) on its own, and write reports/<collection>/<run id>/{results.json,report.md,
    report.html}."""
    import tempfile

    from recall_eval.datasets.collections import PROJECT_ROOT, heldout_sets, load_sets, read_provenance
    from recall_eval.files import check_output
    from recall_eval.reports.report import summary_table, write_report
    from recall_eval.scoring import latency as lat
    from recall_eval.scoring.score import describe_sets, score_collection

    if collection is None and notes is None:
        collection = "sample"
    name, notes_dir, files = resolve_inputs(collection, notes, questions)
    reports_root = reports_root or PROJECT_ROOT / "reports"
    check_output(reports_root, "--reports", folder=True)  # before the scoring, not after it
    exp, use_questions = resolve_note_questions(collection, note_questions, no_note_questions, notes_dir)
    qs = load_sets(files)
    log(f"{name}: {len(qs)} questions from {', '.join(f.name for f in files)}")
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as tmp:
        cache = home or Path(tmp)  # one index for the main sets and the held-out ones
        results = score_collection(notes_dir, qs, model=model, home=cache, baselines=True,
                                   progress=show_progress(quiet), log=log, note_questions=exp,
                                   use_questions=use_questions)
        results["sets"] = describe_sets(files)
        held = {}
        for f in ([] if questions else heldout_sets(collection)):
            log(f"held-out set {f.name}")
            # Records kept: `recall-eval versus` tests two runs' held-out answers question by question.
            r = score_collection(notes_dir, load_sets([f]), model=model, home=cache, baselines=True,
                                 progress=show_progress(quiet), note_questions=exp, use_questions=use_questions)
            held[f.stem] = {k: r[k] for k in ("pipelines", "by_style", "cross_lang", "by_lang", "n_paraphrase",
                                              "n_unrelated", "calibration", "thresholds")}
            held[f.stem]["provenance"] = read_provenance(f)
        results["heldout"] = held
    if latency:
        data, message = lat.run_bench()
        log(message)
    else:
        data = lat.load()
    results["latency"] = data
    out = write_report(results, reports_root, name)
    say(f"{name} — model {results['model']['model_id']}, {results['n_notes']} notes, "
               f"{results['n_paraphrase']} paraphrases + {results['n_unrelated']} unrelated; "
               f"value [95% CI]")
    say(summary_table(results))
    say(f"\nreport: {out / 'report.html'}")
