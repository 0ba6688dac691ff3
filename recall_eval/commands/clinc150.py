"""``recall-eval clinc150``: in-scope accuracy and out-of-scope recall on CLINC150."""

from __future__ import annotations

from pathlib import Path

import click

from recall_eval.commands.common import echo_json, fail_cleanly, home_option, log, model_option, say, show_progress


@click.command("clinc150")
@click.option("--data", type=click.Path(path_type=Path),
              help="data_full.json (default: <project>/../shared/benchmarks/clinc150/data_full.json).")
@model_option
@home_option
@click.option("--limit", type=click.IntRange(1, 1_000_000),
              help="Subsample each query split to N items (seeded), for quick runs.")
@click.option("--train-per-intent", type=click.IntRange(1, 1_000),
              help="Build each note from only the first N train utterances.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Seed of --limit and of the bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@fail_cleanly
def command(data: Path | None, model: str | None, home: Path | None, limit: int | None,
            train_per_intent: int | None, seed: int, as_json: bool, quiet: bool) -> None:
    """One note per intent, oos_train as the negatives; the shipped pipeline calibrates
    itself on them and answers test + oos_test; the trade-off curve gives its out-of-scope
    recall at each published system's in-scope accuracy (Larson et al. 2019). Exits 0 with a
    message when the data file is absent."""
    from recall_eval.datasets.clinc150 import DEFAULT_PATH
    from recall_eval.scoring.clinc150 import evaluate, table

    path = data or DEFAULT_PATH
    if not path.exists():
        log(f"CLINC150 not found at {path}: skipped (get data_full.json from clinc/oos-eval)")
        return
    result = evaluate(path, model=model, limit=limit, per_intent=train_per_intent, home=home, seed=seed,
                      progress=show_progress(quiet), log=log)
    if as_json:
        echo_json(result)
        return
    say(table(result))
    t = result["thresholds"]
    say(f"\nself-calibrated on oos_train: top_floor {t['top_floor']:.4f}, neg_weight {t['neg_weight']:g}; "
               f"hit@1 {result['hit_rate@1']:.3f}, hit@3 {result['hit_rate@3']:.3f}; {result['seconds']} s")
