"""CLI commands for the daemon and the hook: serve, stop, install, uninstall, log.

``register(main)`` adds them to the ``recall`` group (cli.py calls it), so this module
is the only place that knows about them. Heavy modules are imported inside commands.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from pathlib import Path

import click

STOP_WAIT_S = 10.0


class _UserError(click.ClickException):
    """One-line error for the user (exit 1)."""


@click.command()
@click.option("--foreground", is_flag=True,
              help="Run in this terminal, logging to stderr too; Ctrl-C stops it.")
@click.option("--wait", "wait_s", default=120.0, show_default=True,
              help="Seconds to wait for a background daemon to answer.")
def serve(foreground: bool, wait_s: float) -> None:
    """Start the search daemon (the hook also starts it by itself when needed).

    It loads the model and the index once and answers the hook over a private socket;
    it exits after daemon.idle_exit_hours without a question, or on `recall stop`.
    """
    from . import client

    _preflight()
    if foreground:
        from .daemon import run_daemon

        sys.exit(run_daemon(foreground=True))
    ready = client.wait_until_ready(timeout_s=0.3)
    if ready is None:
        client.spawn_daemon(cooldown_s=0)
        ready = client.wait_until_ready(timeout_s=wait_s)
        if ready is None:
            raise _UserError("the daemon did not start; `recall serve --foreground` shows why")
        click.echo(f"started: pid {ready.get('pid')}, model {ready.get('model')}")
        return
    click.echo(f"already running: pid {ready.get('pid')}, model {ready.get('model')}")


def _preflight() -> None:
    """What would make the daemon exit at start, said in one line before starting it (not
    after `--wait` seconds of silence): a broken config file, a damaged index."""
    from .config import ConfigError, load_config
    from .embedders import model_id_of
    from .errors import IndexDamaged
    from .vector_index import load_index

    try:
        config = load_config()
    except ConfigError as exc:
        raise _UserError(str(exc)) from None
    try:
        model_id = model_id_of(config.model)
    except Exception:  # noqa: BLE001 - an unknown model is the daemon's to report
        return
    try:
        load_index(model_id)
    except IndexDamaged as exc:
        raise _UserError(str(exc)) from None


def _wait_gone(timeout_s: float) -> bool:
    """Wait until the daemon's lock is free, i.e. its process has exited."""
    from .daemon import lock_is_free

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if lock_is_free():
            return True
        time.sleep(0.05)
    return lock_is_free()


@click.command()
def stop() -> None:
    """Stop the search daemon (it removes its socket and status file).

    Found by its status file, or else by its lock file (a daemon whose socket or status
    file was deleted under it), and asked to stop; one that does not answer gets SIGTERM.
    """
    from . import client
    from .daemon import clean_stale

    status = client.read_status()
    pid = int(status["pid"]) if status is not None else client.lock_holder()
    if pid is None:
        cleaned = clean_stale()
        click.echo("not running" + (" (stale files removed)" if cleaned else ""))
        return
    try:
        if status is None:
            raise client.DaemonUnavailable("no status file")
        client.request({"cmd": "stop"}, timeout=5)
    except (client.DaemonUnavailable, client.DaemonError):
        holder = client.lock_holder()
        if holder is None:
            cleaned = clean_stale()
            click.echo("not running" + (" (stale files removed)" if cleaned else ""))
            return
        pid = holder
        os.kill(pid, signal.SIGTERM)  # not answering: the signal handler cleans up too
    if not _wait_gone(STOP_WAIT_S):
        raise _UserError(f"daemon pid {pid} did not exit within {STOP_WAIT_S:.0f} s")
    click.echo(f"stopped (pid {pid})")


def _scope_option(fn):
    fn = click.option("--user", "scope", flag_value="user", default=True,
                      help="Your own settings (default): Claude Code's $CLAUDE_CONFIG_DIR or ~/.claude, "
                           "Codex's $CODEX_HOME or ~/.codex, ~/.gemini.")(fn)
    return click.option("--project", "scope", flag_value="project",
                        help="This project's settings, at the git root (.claude/, .mcp.json, .codex/, "
                             ".gemini/).")(fn)


_AGENT_CHOICE = click.Choice(["claude", "codex", "gemini"])


@click.command()
@_scope_option
@click.option("--agent", type=_AGENT_CHOICE, default="claude", show_default=True,
              help="Which agent's hook to register (each in its own format; one daemon serves all).")
@click.option("--form", type=click.Choice(["mcp_tool", "command"]),
              help="Claude Code only: the no-spawn mcp_tool hook (default where supported) or a "
                   "command hook (a process per message).")
@click.option("--track-reads", is_flag=True,
              help="Claude Code only: also record when the agent opens a note recall injected "
                   "(`recall log --stats`).")
@click.option("--skip-check", is_flag=True, help="Do not start the daemon and time a question.")
def install(scope: str, agent: str, form: str | None, track_reads: bool, skip_check: bool) -> None:
    """Register recall's prompt hook with an agent (Claude Code by default).

    Claude Code gets the mcp_tool hook (a tool call on recall's MCP server, no process per
    message) where its version and this environment allow, else the command hook; Codex CLI
    a UserPromptSubmit command hook; Gemini CLI a BeforeAgent command hook. Idempotent: a
    second run leaves one entry. Then starts the daemon, times a warm question and says
    whether it fits in daemon.hook_budget_ms.
    """
    from .agents import install_agent
    from .config import load_config, user_config_path
    from .install import InstallError, latency_check

    try:
        done = install_agent(agent, scope == "project", Path.cwd(), form, track_reads)
    except (InstallError, OSError) as exc:
        raise _UserError(str(exc)) from None
    for line in done:
        click.echo(line)
    if scope == "project":
        click.echo("note: the entry holds this machine's Python path; teammates run `recall install` too")
    if skip_check:
        return
    budget = load_config().daemon.hook_budget_ms
    try:
        report = latency_check(budget, Path.cwd(), say=click.echo)
    except (InstallError, OSError, RuntimeError) as exc:
        raise _UserError(f"hook installed, but the check failed: {exc}") from None
    if report["fits"]:
        click.echo(f"fits in the hook's budget of {budget:.0f} ms")
        return
    click.echo(
        f"a warm question took up to {report['exchange_max_ms']} ms, over the hook's budget of "
        f"{budget:.0f} ms: the hook would hand nothing over for such messages.\n"
        f"To raise the cutoff, set in {user_config_path()}:\n\n"
        f"[daemon]\nhook_budget_ms = {int(report['exchange_max_ms'] * 1.5 + 50)}\n\n"
        f"(or pick a smaller model: `recall models`)"
    )


@click.command()
@_scope_option
@click.option("--agent", type=_AGENT_CHOICE, default="claude", show_default=True,
              help="Whose hook to remove.")
def uninstall(scope: str, agent: str) -> None:
    """Remove exactly what `recall install` added for that agent (hook, MCP server entry, flags)."""
    from .agents import uninstall_agent
    from .install import InstallError

    try:
        done = uninstall_agent(agent, scope == "project", Path.cwd())
    except (InstallError, OSError) as exc:
        raise _UserError(str(exc)) from None
    for line in done:
        click.echo(line)


@click.command("log")
@click.option("-n", "lines", default=20, show_default=True, help="How many lines.")
@click.option("--stats", is_flag=True,
              help="Per note: how often it was injected, and how often the agent then opened it "
                   "(needs `recall install --track-reads`).")
def log_cmd(lines: int, stats: bool) -> None:
    """Show the end of the daemon's log: what was handed over (never the prompts)."""
    from .daemon import log_path

    if stats:
        _print_stats()
        return

    path = log_path()
    # Oldest first: backups .3, .2, .1, then the live file; keep only the last N lines.
    backups = [p for p in path.parent.glob(path.name + ".*") if p.suffix[1:].isdigit()]
    files = sorted(backups, key=lambda p: -int(p.suffix[1:])) + [path]
    tail: deque[str] = deque(maxlen=max(lines, 0))
    for f in files:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                tail.extend(line.rstrip("\n") for line in fh)
        except FileNotFoundError:
            continue
    if not tail:
        click.echo(f"(no log yet at {path})", err=True)
    for line in tail:
        click.echo(line)


def _print_stats() -> None:
    from .track import reads_path, stats

    rows = stats()
    if not rows:
        click.echo("(nothing injected yet)", err=True)
        return
    width = max(len("note"), *(len(r["note"]) for r in rows))
    click.echo(f"{'note':<{width}}  injected  opened  last injected")
    for r in rows:
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["last_injected"])) if r["last_injected"] else "-"
        click.echo(f"{r['note']:<{width}}  {r['injected']:>8}  {r['opened']:>6}  {last}")
    if not reads_path().exists():
        click.echo("(no reads recorded: `recall install --track-reads` records them)", err=True)


def register(main: click.Group) -> None:
    """Add the daemon and hook commands to the ``recall`` command group."""
    for command in (serve, stop, install, uninstall, log_cmd):
        main.add_command(command)
