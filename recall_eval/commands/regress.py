"""``recall-eval regress``: fail (exit 1) when the effective config scores below the
committed baseline (``make regress``, run by CI). The rule is in recall_eval/reports/regress.py."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import (
    UserError,
    echo_json,
    fail_cleanly,
    log,
    own_command,
    resolve_inputs,
    resolve_note_questions,
    say,
    scoring_options,
)
from recall_eval.files import check_output


@click.command("regress")
@scoring_options
@click.option("--baseline", "baseline_path", type=click.Path(path_type=Path),
              help="Baseline JSON (default: reports/baseline/<collection>.json for a collection's own "
                   "notes; required for a notes folder of yours).")
@click.option("--update", is_flag=True, help="Rewrite the baseline from this run instead of checking.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@fail_cleanly
def command(collection: str | None, notes: Path | None, questions: tuple[Path, ...], note_questions: Path | None,
            no_note_questions: bool, model: str | None, home: Path | None, baseline_path: Path | None, update: bool,
            as_json: bool) -> None:
    # Long because: resolve the inputs, refuse what cannot be compared or written before the scoring, then
    # score, and either write the baseline or check against it; each step is a helper's call.
    """Score the collection (default: sample, every set) and compare with the baseline:
    hit_rate@1, hit_rate@3, MRR, injected_hit_rate and silence_rate may each lose at most
    2 questions net (losses minus gains on the same questions)."""
    from recall_eval.datasets.collections import collection_hash, load_sets, shipped_collection, write_json
    from recall_eval.reports.regress import (
        check,
        failure_message,
        load_baseline,
        make_baseline,
        questions_hash,
        same_questions,
        table,
    )
    from recall_eval.results import to_json
    from recall_eval.scoring.score import score_collection

    collection = collection or ("sample" if notes is None else shipped_collection(notes))  # a folder of yours: None
    name, notes_dir, files = resolve_inputs(collection, notes, questions)
    path = baseline_path or _default_baseline(collection, notes_dir)
    if update:  # before the scoring: a baseline it could not write is said first
        check_output(path, "--baseline", folder=False)
    elif not path.is_file():
        raise UserError(f"no baseline at {path}; create it with: {own_command('--update')}")
    exp, use_questions = resolve_note_questions(collection, note_questions, no_note_questions, notes_dir)
    qs = load_sets(files)
    update_hint = "check them, then run the same command with --update to rewrite the baseline"
    if not update:  # before the scoring: the same notes and sets, or no comparison at all
        baseline = load_baseline(path, own_command('--update'))
        same_questions(baseline, [f.stem for f in files], collection_hash(notes_dir), update_hint,
                       questions_hash(files))
    results = score_collection(notes_dir, qs, model=model, home=home, baselines=False, log=log, note_questions=exp,
                               use_questions=use_questions)
    model_id = results["model"]["model_id"]
    if update:
        write_json(path, to_json(make_baseline(results, name, collection_hash(notes_dir), [f.stem for f in files],
                                               questions_hash(files))))
        say(f"baseline written: {path} ({model_id}, {len(qs)} questions)")
        return
    if baseline.model["model_id"] != model_id:
        raise UserError(f"baseline {path} was made with {baseline.model['model_id']}, this run uses {model_id}; "
                        f"pass --model, or rewrite it with: {own_command('--update')}")
    checks = check(baseline, results, update_hint)
    if as_json:
        echo_json({"baseline": str(path), "model_id": model_id, "checks": [c.as_dict() for c in checks]})
    else:
        say(f"{name} — {model_id}, thresholds [{results['thresholds_source']}], {len(qs)} questions; "
                   f"baseline {path.name} ({baseline.created})")
        say(table(checks))
    if not all(c.ok for c in checks):
        raise UserError(failure_message(checks))
    say("regression gate passed", err=as_json)


def _default_baseline(collection: str | None, notes_dir: Path) -> Path:
    """reports/baseline/NAME.json (committed) for a collection's own notes; for a user's folder
    there is no default: --baseline FILE is asked for, with the command that makes one."""
    from recall_eval.datasets.collections import PROJECT_ROOT, shipped_collection

    if collection is not None and shipped_collection(notes_dir) == collection:
        return PROJECT_ROOT / "reports" / "baseline" / f"{collection}.json"
    suggested = notes_dir.resolve().parent / f"{notes_dir.resolve().name}-baseline.json"
    raise UserError(f"{notes_dir} is not a shipped collection's notes folder, so no committed baseline applies: "
                    f"give --baseline FILE, a baseline of yours; create one with: "
                    f"{own_command('--baseline', str(suggested), '--update')}")
