"""The ``recall`` group: its commands are added from one module per concept."""

from __future__ import annotations

import os
import sys

import click

from recall import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recall")
def main() -> None:
    """recall: memory notes that come back to your coding agent at the right moment.

    Files live under RECALL_HOME (default: a per-user data folder); settings in
    RECALL_HOME/config.toml (see `recall config`).
    """
    from recall.privacy import coredumps

    coredumps.forbid()  # a command holds typed words or notes' text: a crash must not dump them to disk
    os.umask(0o077)  # what it and its libraries create (a model's or OCR's caches in ~) is the user's only
    try:
        os.getcwd()
    except FileNotFoundError:  # removed under the shell (a git worktree removed): "[Errno 2]" from every command
        from recall.cli.common import say

        os.chdir("/")
        say("note: the current folder no longer exists, so no project is in scope; `cd` to one that does", err=True)


def _register(group: click.Group) -> None:
    """Every command, one module per concept; each imports its heavy modules when it runs."""
    from recall.cli import agents, daemon, index, mcp, models, query, questions, search, status, team, ui, watch

    for command in (index.index, index.calibrate, query.query, search.search,
                    status.status, status.config_cmd, models.models,
                    daemon.serve, daemon.stop, daemon.log_cmd, agents.install, agents.uninstall, questions.questions,
                    watch.watch_cmd, mcp.mcp_cmd, team.team, ui.ui_cmd):
        group.add_command(command)


_register(main)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def run() -> None:
    """The console script: ``main``, with Ctrl-C as exit 130 and any of recall's own errors
    (one root, ``recall.errors.RecallError``) and file errors that a command did not catch as
    one ``Error: ...`` line (exit 1), as ``common.clean_errors`` prints them."""
    from recall.cli.common import UserError
    from recall.errors import RecallError

    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    except (MemoryError, ImportError) as exc:  # out of memory, or a native library it could not map
        _short_of_memory(exc)
    except RuntimeError as exc:  # no room for a thread's stack (`recall serve --foreground` under `ulimit -v`)
        from recall.errors import short_of_memory

        if not short_of_memory(exc):
            raise
        _short_of_memory(MemoryError())
    except RecallError as exc:
        UserError(str(exc)).show()
        sys.exit(1)
    except OSError as exc:  # met before a command's own wrapper (reading config.toml, say; --help's output)
        from recall.cli.common import output_failed
        from recall.privacy.paths import os_error_line

        UserError(output_failed(exc) or os_error_line(exc)).show()
        sys.exit(1)


def _short_of_memory(exc: BaseException) -> None:
    """Out of memory (a limit such as `ulimit -v`), or a native library that could not be mapped
    under one, or a broken install: one line, written plainly (masking would load more code, and
    under the same limit fail in turn: an outside tester's second traceback came from there)."""
    from recall.cli.common import say_plain
    from recall.errors import OUT_OF_MEMORY

    line = OUT_OF_MEMORY if isinstance(exc, MemoryError) else (
        f"a library recall needs could not be loaded ({exc}): under a memory limit (`ulimit -v`), raise it; "
        "otherwise reinstall recall (`make setup` in a clone, or pip install again)")
    try:
        say_plain(line)
    finally:
        sys.exit(1)
