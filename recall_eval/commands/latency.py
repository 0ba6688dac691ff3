"""``recall-eval latency``: hook latency, measured by the project's hook benchmark."""

from __future__ import annotations

import click

from recall_eval.commands.common import echo_json, fail_cleanly, log, say


@click.command("latency")
@click.option("--json", "as_json", is_flag=True, help="Print the benchmark's JSON on stdout.")
@click.option("--reuse", is_flag=True, help="Read the last reports/bench/hook.json instead of running.")
@fail_cleanly
def command(as_json: bool, reuse: bool) -> None:
    """Run bench/bench_hook.py (hook vs a warm daemon) and show its figures.

    Exits 0 with a message when the benchmark module is not in this checkout; 1 when
    --reuse finds no readable result.
    """
    from recall_eval.scoring.latency import last, result_path, run_bench, summary

    if reuse:
        data, message = last(), f"read the last result ({result_path()})"
    else:
        data, message = run_bench()
    log(message)
    if data is None:
        return
    if as_json:
        echo_json(data)
        return
    for key, value in summary(data).items():
        say(f"{key:<32} {value:g}")
