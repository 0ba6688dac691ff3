"""``recall-eval``: the evaluation harness's command line.

Each subcommand lives in its own module ``recall_eval/commands/<name>.py`` exposing ``command``
(a click command); ``COMMANDS`` below maps names to modules, and modules are imported
only when their command runs, so ``--help`` stays fast. Adding a subcommand is one
module plus one line in ``COMMANDS``.

Results go to stdout (one JSON object with ``--json``); progress and notes to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from recall import __version__

COMMANDS: dict[str, str] = {
    "generate": "recall_eval.commands.generate",
    "expand": "recall_eval.commands.expand",
    "score": "recall_eval.commands.score",
    "latency": "recall_eval.commands.latency",
    "clinc150": "recall_eval.commands.clinc150",
    "compare": "recall_eval.commands.compare",
    "export-beir": "recall_eval.commands.beir",
    "import-beir": "recall_eval.commands.beir",
    "report": "recall_eval.commands.report",
    "run": "recall_eval.commands.run",
    "tune": "recall_eval.commands.tune",
    "regress": "recall_eval.commands.regress",
    "versus": "recall_eval.commands.versus",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        found = getattr(importlib.import_module(module), "commands", None)
        if isinstance(found, dict):  # a module holding several commands (export-beir, import-beir)
            return found[cmd_name]
        return importlib.import_module(module).command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recall-eval")
def main() -> None:
    """recall-eval: measure whether recall finds the right note and stays silent otherwise.

    `recall-eval run --collection sample` is the main job (`make eval`).
    """


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that every ``with`` on the way out runs: the
    temporary RECALL_HOME of ``run`` and ``score`` (recall.db and the index: a copy of the
    notes' text, 3.2 MB on the sample) is removed. It was left in $TMPDIR (an outside tester,
    stop 58). A BaseException, as KeyboardInterrupt is: no ``except Exception`` swallows it."""


TERMINATED_EXIT = 128 + 15  # what a shell reports for a process SIGTERM ended


def _terminate_cleanly() -> None:
    """SIGTERM ends the command as Ctrl-C does (its temporary files removed, one line), exit 143;
    a second SIGTERM while that cleanup runs is ignored (SIGKILL still ends it at once)."""
    import signal

    def leave(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, leave)


def run() -> None:
    from recall.privacy import coredumps

    coredumps.forbid()  # it holds notes' text before masking and the questions: a crash must not dump them
    os.umask(0o077)  # what it and its libraries create (matplotlib's caches in ~) is the user's only
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _terminate_cleanly()
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    except Terminated:
        click.echo("terminated (SIGTERM): its temporary files were removed; what was finished is kept; "
                   "run the same command again to go on", err=True)
        sys.exit(TERMINATED_EXIT)


if __name__ == "__main__":
    run()
