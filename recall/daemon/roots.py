"""Which project a message's folder belongs to, found without letting a hung disk take the
daemon's workers.

The project is the git root above the message's ``cwd`` (``recall.privacy.paths.project_root``:
a few ``stat`` calls up the folder's parents). On a stale network mount (sshfs, NFS) a ``stat``
never returns: an outside tester's session there left one worker stuck in the kernel per
message, and after 40 messages no session of the user got an answer (stop 46). Here the walk
runs in a small pool of its own (``recall.privacy.bounded``), for at most ``WAIT_S``; past it, or
while ``MAX_STUCK`` walks are still under way, the message's own folder is its project (no walk:
nothing that can hang).
Answers are kept two seconds per folder (``TTL_S``), for a burst of hooks: kept a minute, a
folder that changed project (a ``current`` link pointed elsewhere, a ``git init`` in a
subfolder) was answered from the old project's notes meanwhile (stop 49, an outside tester's
AA10), and a healthy walk costs well under a millisecond.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from recall.privacy.bounded import Bounded
from recall.privacy.paths import project_root
from recall.store.lru import Lru

WAIT_S = 0.1  # a walk on a healthy disk takes well under a millisecond
MAX_STUCK = 4  # walks under way at once; past it, no walk is started
CACHE = 512  # folders remembered
TTL_S = 2.0  # how long a folder's project is remembered (a link repointed since is seen after it)


class Roots:
    def __init__(self) -> None:
        self._pool = Bounded(MAX_STUCK, WAIT_S, "recall-root")
        self._lock = threading.Lock()
        self._known = Lru(CACHE)  # cwd -> (its project, when it was walked)

    def root(self, cwd: str) -> Path:
        """The project folder of ``cwd``, resolved, within ``WAIT_S``; ``cwd`` itself, made absolute
        without looking at the disk, when the disk is slow."""
        now = time.monotonic()
        with self._lock:
            hit = self._known.get(cwd)
            if hit is not None and now - hit[1] < TTL_S:
                return hit[0]
        return self._pool.run(lambda: self._walk(cwd), Path(os.path.abspath(cwd)))

    def _walk(self, cwd: str) -> Path:
        found = project_root(cwd)  # never raises: a path it cannot walk is "/"
        with self._lock:
            self._known.put(cwd, (found, time.monotonic()))
        return found
