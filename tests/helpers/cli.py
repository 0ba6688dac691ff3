"""The ``recall`` command in this process, through click's ``CliRunner``.

A test that needs a real process (the hook, a daemon, ``recall ui``) starts one itself;
every other command runs here, as fast as a function call. ``run_cli`` answers like
``subprocess.run(..., capture_output=True, text=True)``: a ``CompletedProcess`` with the
exit code, stdout and stderr. An exception the command let escape is written to stderr as
the traceback a real process would print, so "no traceback" checks keep their meaning.
Settings are read from the environment when the command runs: ``env`` is set for the call
only (a ``None`` value unsets a variable) and ``cwd`` is the working folder for the call.
"""

from __future__ import annotations

import contextlib
import subprocess
import traceback
from pathlib import Path


def run_cli(*args: str | Path, cwd: Path | str | None = None, input: str | None = None,
            check: bool = False, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess:
    from click.testing import CliRunner

    from recall.cli import main

    argv = [str(a) for a in args]
    runner = CliRunner(env=env)
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = runner.invoke(main, argv, input=input, prog_name="recall")
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    proc = subprocess.CompletedProcess(["recall", *argv], result.exit_code, result.stdout, stderr)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def run_cli_process(*args: str | Path, cwd: Path | str | None = None, input: str | None = None,
                    env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``recall`` as a real process, for what only a process start shows (work done once per
    process, such as closing up the modes of RECALL_HOME). ``env`` is added to this
    process's environment."""
    import os
    import sys

    return subprocess.run([sys.executable, "-m", "recall.cli", *map(str, args)], cwd=cwd, input=input,
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout)
