"""Children that end with recall: the kernel's parent-death signal (Linux ``prctl``).

A converter's ffmpeg and the agent CLI that writes questions were left running, reparented to
init, when the process that started them died without its cleanup (Ctrl-C's kill of a
converter, SIGKILL or the out-of-memory killer on `recall questions run`): one went on writing
gigabytes of frames (stop 48, an outside tester's Z01 and Z05). ``ending_with_me()`` is the
``preexec_fn`` that asks the kernel to kill the child when its parent goes, whatever the way.
Elsewhere than Linux it does nothing: the callers' own cleanup still runs.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def ending_with_me(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess``: the child gets ``sig`` when the thread that started
    it ends (for the callers, who wait for their child, that is their process's end). The C
    library is looked up here, before the fork, so the child only makes one system call."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig))

    return child
