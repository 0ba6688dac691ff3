"""Which recall a process runs: a stamp of the package's files, so a daemon started by an
older recall is found out after an upgrade (``pip install -U``, a ``git pull`` of a checkout).

An outside tester's upgrade left the older daemon answering every hook for good, with the
older version's model and code, while ``recall query`` (the new code) answered otherwise
(stop 47, S02). The daemon publishes its stamp in its status file and ends itself, between
questions, once the files under it change (``recall.daemon.loop``); a status file without a
stamp is a daemon from before this check, which the hook asks to stop
(``recall.ipc.client.ask_or_start``). The next question starts a daemon with the new code.
Not imported by the hook: it reads only whether a stamp is there.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # recall/


def code_stamp(package: Path = PACKAGE) -> str:
    """A digest of every ``.py`` and ``.toml`` file under ``package``: its path, size and
    modification time (~1 ms for the package's ~130 modules, no file read). "" when a folder of it
    cannot be read (out of descriptors): unknown, no proof of an upgrade (a daemon short of
    descriptors ended itself as "recall upgraded": stop 58); ``GONE`` when ``package`` is no more."""
    digest = hashlib.sha256()
    unread: list[OSError] = []
    for folder, dirs, files in os.walk(package, onerror=unread.append):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".toml")):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                rel = os.path.relpath(os.path.join(folder, name), package)
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    if unread:
        try:
            os.stat(package)
        except (FileNotFoundError, NotADirectoryError):
            return GONE  # deleted (a reinstall at another path): changed code, not unknown
        except OSError:
            pass
        return ""
    return digest.hexdigest()[:16]


# The stamp of a package folder that is gone: a daemon started from it served the deleted code for
# good, its stamp "" (unknown), while `recall status` said it would end within seconds (an outside tester).
GONE = "gone"


def upgraded(then: str | None, now: str) -> bool:
    """Whether stamp ``now`` proves recall's files changed since ``then`` (either unknown: no; a
    folder that is gone, ``GONE``: yes)."""
    return bool(then) and bool(now) and then != now
