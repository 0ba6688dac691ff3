"""The resident search daemon: the model and the index loaded once, kept warm.

The hook is a new process per message; loading a model there would cost seconds. The
daemon loads it once and answers each question in milliseconds. Its shape is mypy's
dmypy: one JSON request and one JSON reply per connection; a status file that clients
check before they trust it; a foreground mode for debugging (``recall serve --foreground``).

Three parts, each with one job, composed in one place (``loop.Loop``) over one typed state
(``state.DaemonState``; the loaded model as ``state.Loaded``, the facade typed ``Recall``):

* ``listener.Listener``: the socket (bound, re-bound when lost), accepting, the peer's uid,
  reading whole requests in time (framing), the TCP secret; each whole request becomes an
  ``Exchange`` handed to
* ``dispatcher.Dispatcher``: a request's ``cmd`` -> its handler (``handlers.Commands``:
  query, explain, status, stop, ping), quick ones at once, questions through a queue to
  worker threads;
* ``loop.Loop``: the life of one daemon: start (bind, status file), ready, idle exit, its
  files checked, stop, clean-up. ``lifecycle`` holds the lock, loads the model (a thread)
  and switches models.

Fast to answer its first question: the socket is bound and the status file written
before anything heavy is imported; the model and the index load in a thread meanwhile,
and questions that arrive during the load wait for it (within their asker's deadline).
``ping`` answers at once and says whether the model is ``ready``. A model that cannot load
ends the daemon (exit 1) and leaves ``run/daemon.failed``, so hooks stop waiting for starts
that fail until one succeeds.

Never starved, never wedged (every bound is in ``[daemon]`` of the config):

* one thread reads every connection (a selector): a request must arrive whole within
  ``request_timeout_ms`` from the connect, however it is sliced; at most
  ``max_connections`` are read at once, and when full the oldest unfinished one is
  answered "busy" and closed, so an idle or slow flood cannot hold out a live hook;
* whole requests go to ``workers`` threads through a queue of ``max_queued``; when it is
  full the request is answered "busy" at once (the hook then prints nothing, in time);
* questions are embedded in batches (``recall.embedding.batcher``): those that arrive while the
  model runs go in its next call together, each cut to one window of the model
  (``recall.embedding.models.fit_query``); a question whose asker gave up is dropped unembedded;
* running out of file descriptors in ``accept()`` logs one line, refuses the waiting
  connection through a spare descriptor, backs off briefly and keeps serving;
* its files are checked every ``POLL_S``: a deleted or replaced socket is bound anew, a
  deleted status file written anew; a lost lock file makes it exit (it no longer keeps
  a second daemon out). The lock file holds its pid, so ``recall stop`` / ``recall
  status`` find it even without its socket or status file.

Private by construction:

* files live in ``run_dir()`` (0700): the socket (0600), the status file (0600), the
  lock, and for TCP the shared secret (0600);
* on a UNIX socket the peer's uid is read from the kernel (SO_PEERCRED on Linux,
  LOCAL_PEERCRED on macOS/BSD) and anyone but this user is refused without a reply;
* with ``daemon.transport = "tcp"`` (Windows) it listens on 127.0.0.1 only, requests
  must carry the secret, and replies are signed (see ``recall.ipc.client``);
* the log (0600, rotated) records what was handed over: note ids, scores, bytes,
  timings, the decision. Never the prompt, and never an exception's message (which
  could quote it).

One daemon per user (an fcntl lock held for its life). It exits by itself after
``daemon.idle_exit_hours`` without a question, on ``recall stop`` and on SIGTERM,
removing its socket and status file. A re-built index is picked up without a restart:
``Recall.query`` checks the index's ``current`` marker on every question.
"""

from recall.daemon.files import remove_files
from recall.daemon.lifecycle import acquire_lock, clean_stale, lock_is_free, main, run_daemon
from recall.daemon.listener import MAX_REQUEST_BYTES
from recall.daemon.logs import log_path
from recall.daemon.loop import Loop
from recall.daemon.peer import check_peer, expected_uid, peer_uid

__all__ = ["MAX_REQUEST_BYTES", "Loop", "acquire_lock", "check_peer", "clean_stale", "expected_uid",
           "lock_is_free", "log_path", "main", "peer_uid", "remove_files", "run_daemon"]
