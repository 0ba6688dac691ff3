"""The daemon's files in run_dir(): socket, status file, lock; bound, written and checked again."""

from __future__ import annotations

import json
import os
import selectors
import socket
from pathlib import Path

from recall.daemon.logs import log_event, log_exception
from recall.daemon.state import DaemonState
from recall.ipc import client
from recall.privacy.paths import FILE_MODE, ensure_private_dir, private_open

# Connections the kernel holds for us between two accepts (a burst of hooks at once).
LISTEN_BACKLOG = 512


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


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class DaemonFiles(DaemonState):
    """The part of ``server.Daemon`` that owns its files: binds, writes and checks them."""

    # lifecycle
    def bind(self) -> None:
        if self.transport == "tcp":
            import secrets

            self.secret = secrets.token_hex(32)
            with private_open(client.secret_path()) as fh:
                fh.write(self.secret)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))  # loopback only, any free port
            self.port = sock.getsockname()[1]
            self.address = f"127.0.0.1:{self.port}"
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
            self.listener = sock
        else:
            self.listener = self._bind_unix()

    def _bind_unix(self) -> socket.socket:
        path = client.socket_path()
        ensure_private_dir(path.parent)
        remove_files(path)  # we hold the lock: an existing socket is a dead daemon's, or a stray file
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if len(os.fsencode(str(path))) < client.SUN_PATH_MAX:
                sock.bind(str(path))
            else:  # too long for sun_path: bind by name from inside the folder (our cwd)
                os.chdir(path.parent)
                sock.bind(path.name)
            os.chmod(path, FILE_MODE)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        st = os.stat(path)
        self._socket_id = (st.st_dev, st.st_ino)
        self.address = str(path)
        return sock

    def write_status(self) -> None:
        """Written after bind (and again once ready), atomically: a reader sees all of it or none."""
        status = {
            "pid": os.getpid(), "socket": self.address, "model": self.model_id, "device": self.device,
            "started": self.started, "transport": self.transport, "port": self.port,
            "protocol": client.PROTOCOL, "ready": self.ready.is_set(),
        }
        tmp = client.status_path().with_suffix(".tmp")
        with private_open(tmp) as fh:
            json.dump(status, fh)
        os.replace(tmp, client.status_path())
        st = os.stat(client.status_path())
        self._status_id = (st.st_dev, st.st_ino)


    def close(self) -> None:
        """Status file first (clients stop trusting it), then the socket."""
        remove_files(client.status_path())
        if self.listener is not None:
            self.listener.close()
        if self.transport == "unix":
            remove_files(client.socket_path())
        else:
            remove_files(client.secret_path())
        close_batcher = getattr(getattr(self.app, "embedder", None), "close", None)
        if close_batcher is not None:
            close_batcher()


    def _check_files(self) -> str | None:
        """Our socket, status and lock files still ours? Rebind / rewrite; a reason to exit if
        the lock file is gone (then nothing keeps a second daemon from starting beside us)."""
        if self.lock_fd is not None:
            fst = os.fstat(self.lock_fd)
            if _file_id(client.lock_path()) != (fst.st_dev, fst.st_ino):
                log_event("lock file lost", action="exit")
                return "lock file lost"
        if self.transport == "unix" and _file_id(client.socket_path()) != self._socket_id:
            try:
                new = self._bind_unix()
            except OSError as exc:
                log_exception("binding the socket again", exc)
                return None
            old, self.listener = self.listener, new
            if self._listening:
                assert self._sel is not None and old is not None
                self._sel.unregister(old)
                self._sel.register(new, selectors.EVENT_READ, "listen")
            if old is not None:
                old.close()
            log_event("socket lost", action="bound again")
            self._status_id = None  # the status names the socket: write it again
        if _file_id(client.status_path()) != self._status_id:
            try:
                self.write_status()
            except OSError as exc:
                log_exception("writing the status file", exc)
        return None
