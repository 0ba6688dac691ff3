"""The daemon's files in run_dir(): the status file and the lock checked; stray files removed (the socket's
are the listener's, ``listener.Listener.bind``)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from recall.daemon.logs import log_event, log_exception
from recall.daemon.state import DaemonState
from recall.ipc import client
from recall.privacy.paths import DIR_MODE, FILE_MODE, file_id, private_open
from recall.privacy.trust import process_start


def remove_files(*paths: Path) -> int:
    """Remove the daemon's own files (only called while holding the lock); how many there were.
    Something that is not a file where one belongs (a folder at the socket's path) is moved
    aside to ``NAME.stray-TIME`` and logged, so that it cannot keep a daemon from starting."""
    removed = 0
    for p in paths:
        try:
            p.unlink()
            removed += 1
        except FileNotFoundError:
            pass
        except (IsADirectoryError, PermissionError):
            if not p.is_dir() or p.is_symlink():
                raise
            import time

            aside = p.with_name(f"{p.name}.stray-{time.time_ns()}")
            os.rename(p, aside)
            log_event("moved aside", path=str(p), to=aside.name, why="a folder where a daemon file belongs")
            removed += 1
    return removed


def keep_private_mode(socket_path: Path) -> None:
    """The socket 0600 and its folder 0700 again when their mode was changed under the daemon
    (``chmod 000`` shuts every hook out, ``chmod 777`` opens them to all); logged."""
    for where, mode in ((socket_path.parent, DIR_MODE), (socket_path, FILE_MODE)):
        try:
            if stat.S_IMODE(os.stat(where).st_mode) == mode:
                continue
            os.chmod(where, mode)
        except OSError as exc:
            log_exception("setting the socket's mode back", exc)
            return
        log_event("socket mode changed", action=f"set back to {mode:04o}")


def lock_lost(lock_fd: int) -> bool:
    """The lock file was deleted or replaced: it no longer keeps a second daemon out."""
    fst = os.fstat(lock_fd)
    return file_id(client.lock_path()) != (fst.st_dev, fst.st_ino)


def _stamp(path) -> tuple[int, ...] | None:
    """Which file ``path`` is and what was last written to it: (device, inode, size, mtime)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class StatusFile:
    """``run/daemon.json``: what clients check before they trust a daemon (its pid, socket,
    model, protocol, whether it is ready). Written atomically, written anew when lost."""

    def __init__(self, state: DaemonState) -> None:
        self.state = state
        self._id: tuple[int, ...] | None = None
        # The loader thread writes it once ready; the loop removes it at the end. Once removed
        # it stays removed: a stop just after "ready" left a status file naming a dead daemon.
        self._lock = threading.Lock()
        self._removed = False

    def write(self) -> None:
        """Written after bind (and again once ready): a reader sees all of it or none."""
        with self._lock:
            if not self._removed:
                self._write()

    def _write(self) -> None:
        s = self.state
        status = {
            "pid": os.getpid(), "socket": s.address, "model": s.model_id, "device": s.device,
            "started": s.started, "transport": s.transport, "port": s.port,
            "protocol": client.PROTOCOL, "ready": s.ready.is_set(), "code": s.code, "foreground": s.foreground,
            "pid_start": process_start(os.getpid()),  # a pid reused by another process is not the daemon
        }
        tmp = client.status_path().with_suffix(".tmp")
        with private_open(tmp) as fh:
            json.dump(status, fh)
        # What was written is known before it is in place (a rename keeps the inode and the time):
        # stamped after, a file damaged between the rename and the stamp was taken for ours and
        # never written again (make test under load, stop 58).
        self._id = _stamp(tmp)
        os.replace(tmp, client.status_path())
        with private_open(client.run_dir() / client.LISTENED_NAME) as fh:  # kept when this daemon ends
            fh.write(str(os.getpid()))

    def rewrite_if_lost(self, stale: bool = False) -> None:
        """Deleted, replaced or changed in place (emptied, cut, overwritten: an outside tester's
        zero-filled file silenced every hook until the daemon ended), or ``stale`` (the socket
        it names was bound anew): written again."""
        if stale or _stamp(client.status_path()) != self._id:
            try:
                self.write()
            except OSError as exc:
                log_exception("writing the status file", exc)

    def remove(self) -> None:
        """First at the end: clients stop trusting the daemon before its socket goes."""
        with self._lock:
            self._removed = True
            remove_files(client.status_path())
