"""The daemon's trigger: saved notes get their questions in the background once allowed
(``recall.authoring.agentcli``)."""

from __future__ import annotations

from recall.authoring.agentcli import consented, indexed_sources, plan
from recall.authoring.runner import start_background


def after_watch_batch(app, stats) -> bool:
    """The daemon's watcher re-indexed saved notes: once allowed, start a background run over
    every indexed note folder (only new or changed notes are asked for). Never raises. The consent
    is the config file's as it is now (``_now``): the daemon's own, read at its start, kept
    starting runs that refused after `recall questions off`, each said as a failure, and started
    none after `recall questions on` until it restarted (an outside tester's, stop 58)."""
    if not (stats.added or stats.changed):
        return False
    try:
        settings = _now(app)
        if not consented(settings.questions.generate):
            return False
        from recall.api import Recall

        # The watcher's thread: a store connection of its own (SQLite's are per thread; the
        # daemon's app.store belongs to the thread that opened it first).
        mine = Recall(home=app.home, config=app.config, embedder=app.embedder)
        try:
            sources = indexed_sources(mine)
        finally:
            mine.store.close()
        states, _cost = plan(sources, settings.questions.batch_notes)
        return bool(states) and start_background(app.home, ["--indexed", "--quiet"], app.home)
    except Exception:  # noqa: BLE001 - the watcher keeps watching whatever happens here
        return False


def _now(app):
    """The settings as the config file holds them now (the daemon's when it cannot be read)."""
    from recall.config.load import load_config

    try:
        return load_config()
    except Exception:  # noqa: BLE001 - a config being edited: the daemon's settings meanwhile
        return app.config
