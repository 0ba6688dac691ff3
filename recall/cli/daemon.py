"""`recall serve`, `recall stop`, `recall log`: the search daemon's life and its log.

Heavy modules are imported inside the commands.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import click

from recall.cli.common import Finite, UserError, fail_cleanly, say
from recall.privacy.regular import NotAFile, open_regular
from recall.privacy.safetext import one_line

STOP_WAIT_S = 10.0


@click.command()
@click.option("--foreground", is_flag=True,
              help="Run in this terminal, logging to stderr too; Ctrl-C stops it.")
@click.option("--wait", "wait_s", default=120.0, show_default=True, type=Finite(0, 86_400),
              help="Seconds to wait for a background daemon to answer (0: start it and return).")
@fail_cleanly
def serve(foreground: bool, wait_s: float) -> None:
    """Start the search daemon (the hook also starts it by itself when needed).

    It loads the model and the index once and answers the hook over a private socket;
    it exits after daemon.idle_exit_hours without a question, or on `recall stop`.
    """
    from recall.ipc import client

    _preflight()
    if foreground:
        from recall.daemon import run_daemon

        sys.exit(run_daemon(foreground=True))
    ready = client.wait_until_ready(timeout_s=0.3)
    status = client.read_status() if ready is not None else None
    if status is not None and client.runs_older_code(status):  # right after an upgrade: "already running"
        say(f"replacing pid {ready.get('pid') if ready else '?'}, which runs recall as it was before an upgrade: "
            f"{stop_daemon()}")  # of the older code, which ended seconds later (or never: an outside tester)
        ready = None
    if ready is None:
        started = client.spawn_daemon(cooldown_s=0)
        if wait_s == 0:  # start, do not wait (the range allows 0): no answer yet is no failure
            say("starting in the background; `recall status` says when it answers")
            return
        ready = client.wait_until_ready(timeout_s=wait_s, started=started)
        if ready is None:
            code = getattr(started, "returncode", None)
            holder = client.lock_holder()
            if code == 0 and holder is not None:  # it found a daemon there, one that does not answer
                raise UserError(f"a daemon is already running (pid {holder}) but does not answer: it is stopped or "
                                "stuck; `recall stop` ends it, then `recall serve` starts a fresh one")
            how = f"exited with status {code}" if code is not None else f"did not answer within {wait_s:g} s"
            why = client.last_start_failure() if code is not None else None
            raise UserError(f"the daemon {how}: {why}" if why
                            else f"the daemon {how}; `recall serve --foreground` shows why")
        say(f"started: pid {ready.get('pid')}, model {ready.get('model')}")
        return
    say(f"already running: pid {ready.get('pid')}, model {ready.get('model')}")


def _preflight() -> None:
    """What would make the daemon exit at start, said in one line before starting it (not
    after `--wait` seconds of silence): another user's or a read-only home, a broken config
    file, a damaged index."""
    from recall.config.load import ConfigError, load_config
    from recall.embedding.models import model_id_of
    from recall.errors import IndexDamaged
    from recall.privacy.paths import recall_home
    from recall.privacy.trust import require_home
    from recall.store.vectors import load_index

    require_home(recall_home())  # another user's or read-only: HomeUnusable, its line
    try:
        config = load_config()
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    try:
        model_id = model_id_of(config.model, config.gemini.dimensions)
    except Exception:  # noqa: BLE001 - an unknown model is the daemon's to report
        return
    try:
        if load_index(model_id) is None:  # none on disk: was one built (its folder deleted)?
            from recall.api import Recall
            from recall.store.indexes import missing_indexes

            app = Recall(config=config)
            for path, what in missing_indexes(app.home, app.store.index_runs(), model_id):
                raise IndexDamaged(path, what)
    except IndexDamaged as exc:
        raise UserError(str(exc)) from None


def _wait_gone(timeout_s: float) -> bool:
    """Wait until the daemon's lock is free, i.e. its process has exited."""
    from recall.daemon import lock_is_free

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if lock_is_free():
            return True
        time.sleep(0.05)
    return lock_is_free()


@click.command()
@fail_cleanly
def stop() -> None:
    """Stop the search daemon (it removes its socket and status file).

    Found by its status file, or else by its lock file (a daemon whose socket or status
    file was deleted under it), and asked to stop; one that does not answer gets SIGTERM.
    """
    say(stop_daemon())


def stop_daemon() -> str:
    """Stop the daemon if one runs (``recall stop``; ``recall index --rebuild`` before it moves a
    damaged store aside, which the daemon may hold locked): what happened, in a line."""
    from recall.daemon import clean_stale
    from recall.ipc import client

    status = client.read_status()
    pid = int(status["pid"]) if status is not None else client.lock_holder()
    if pid is None:
        cleaned = clean_stale()
        return "not running" + (" (stale files removed)" if cleaned else "")
    try:
        if status is None or _frozen(pid):
            raise client.DaemonUnavailable("no status file" if status is None else "stopped")
        client.request({"cmd": "stop"}, timeout=5)
    except (client.DaemonUnavailable, client.DaemonError):
        holder = client.lock_holder()
        if holder is None:
            cleaned = clean_stale()
            return "not running" + (" (stale files removed)" if cleaned else "")
        pid = holder
        os.kill(pid, signal.SIGTERM)  # not answering: the signal handler cleans up too
        os.kill(pid, signal.SIGCONT)  # ... once it runs again (SIGSTOP, a debugger, a suspended job)
    if not _wait_gone(STOP_WAIT_S):
        _kill(pid)  # its handler is stuck: nothing is lost (an index resumes, the store is transactional)
        clean_stale()
        return f"stopped (pid {pid} did not leave within {STOP_WAIT_S:.0f} s of being asked: killed)"
    return f"stopped (pid {pid})"


def _frozen(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger, a suspended job): it cannot answer."""
    from recall.privacy.children import stat_fields

    fields = stat_fields(pid)  # None: not Linux, or gone
    return fields is not None and fields[:1] in ([b"T"], [b"t"])


def _kill(pid: int) -> None:
    from recall.ipc import client

    if client.lock_holder() != pid:
        return  # gone meanwhile (or another daemon holds the lock now)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if not _wait_gone(STOP_WAIT_S):
        raise UserError(f"daemon pid {pid} survived SIGKILL (stuck in the kernel: a hung disk?); "
                        f"repair: check `ps -o stat,wchan -p {pid}`, then `recall serve` once it is gone")


@click.command("log")
@click.option("-n", "lines", default=20, show_default=True, type=click.IntRange(1, 1_000_000), help="How many lines.")
@click.option("--stats", is_flag=True,
              help="Per note: how often it was injected, and how often the agent then opened it "
                   "(needs `recall install --track-reads`).")
@fail_cleanly
def log_cmd(lines: int, stats: bool) -> None:
    """Show the end of the daemon's log: what was handed over (never the prompts)."""
    from recall.daemon import log_path
    from recall.privacy.paths import daemon_logs

    if stats:
        _print_stats()
        return

    path = log_path()
    # Newest first: the live file, then backups .1, .2, .3, each read from its end and only as
    # far as the last N lines need: a torn tail of zero bytes (a crash) was printed whole, 24 MB
    # in 8.5 s (stop 48, Y-08).
    files = daemon_logs()[::-1]
    tail: list[str] = []
    zeros = 0
    for f in files:
        if len(tail) >= lines:
            break
        try:
            found, dropped = _last_lines(f, lines - len(tail))
        except FileNotFoundError:
            continue
        except NotAFile as exc:
            raise UserError(f"{f} is {exc}, not a file: move it aside (`mv {f} {f}.old`); "
                            "the daemon starts a new log") from None
        tail, zeros = found + tail, zeros + dropped
    if zeros:
        say(f"note: the log holds {zeros:,} zero bytes (what a crash leaves), left out", err=True)
    if not tail:
        say(f"(no log yet at {path})", err=True)
    for line in tail:
        say(line)


TAIL_BYTES_PER_LINE = 4096  # read from a file's end per line asked for: a log line is far shorter


def _last_lines(path: Path, n: int) -> tuple[list[str], int]:
    """The last ``n`` lines of ``path`` from at most ``n * TAIL_BYTES_PER_LINE`` bytes of its end,
    and how many zero bytes were left out of them."""
    with open(open_regular(path), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        start = max(0, size - n * TAIL_BYTES_PER_LINE)
        fh.seek(start)
        raw = fh.read()
    zeros = raw.count(b"\0")
    text = raw.replace(b"\0", b"").decode("utf-8", errors="replace")
    found = [line for line in text.split("\n") if line.strip()]
    if start and found:  # the first was cut by the read's start: left out, or marked as cut where it is
        found = found[1:] if len(found) > n else ["…" + found[0], *found[1:]]  # all there is (a line longer
    return found[-n:] if n else [], zeros  # than the read: "no log yet" was said; an outside tester's, stop 55)


def _print_stats() -> None:
    from recall.agents.track import read_logs, stats

    rows = stats()
    if not rows:
        say("(nothing injected yet)", err=True)
        return
    names = [one_line(r["note"]) for r in rows]  # a note id or path: written by whoever named the file
    width = max(len("note"), *map(len, names))
    say(f"{'note':<{width}}  injected  opened  last injected")
    for r, name in zip(rows, names, strict=True):
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["last_injected"])) if r["last_injected"] else "-"
        say(f"{name:<{width}}  {r['injected']:>8}  {r['opened']:>6}  {last}")
    if not any(path.exists() for path in read_logs()):
        say("(no reads recorded: `recall install --track-reads` records them)", err=True)
