"""Start ``recall ui``: bind 127.0.0.1, make this launch's token and its first one-time code
(in a launcher file only this user can read), print the address, open the browser on the
launcher file, serve until Ctrl-C.

The socket is bound here (port 0 = a free one) and handed to uvicorn, so the port the
token and Host check name is the port served, with no window for another process to
take it. uvicorn's access log is off: it would record every path, and nothing the page
is asked may be written anywhere.
"""

from __future__ import annotations

import errno
import socket
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from recall.ui.security import OneTimeCode, new_token

HOST = "127.0.0.1"  # loopback only, by construction: there is no option to change it


def bind(port: int) -> list[socket.socket]:
    """127.0.0.1:PORT, and [::1] on the same port where the machine has IPv6: a browser sends
    ``localhost`` to [::1] first, and an outside tester's other local user listened there (no
    clash with 127.0.0.1) with a look-alike page. With ``port`` 0, a port free on both; a
    ``port`` named that another process holds on [::1] is refused (``localhost:PORT`` would reach
    it: an outside tester's page answered there, stop 46); where the machine has no IPv6, the
    page answers 127.0.0.1 only (``Guard``'s hosts)."""
    for _ in range(20):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        chosen = sock.getsockname()[1]
        try:
            six = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            six.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            six.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            six.bind(("::1", chosen))
        except OSError as exc:
            six.close()
            if exc.errno == errno.EADDRINUSE:
                sock.close()
                if port == 0:
                    continue  # taken on [::1]: another port
                raise OSError(errno.EADDRINUSE, "another process holds it on [::1], where localhost goes") from None
            six = None  # no IPv6 here
        sock.listen(64)
        if six is not None:
            six.listen(64)
        return [sock] + ([six] if six is not None else [])
    raise OSError(errno.EADDRINUSE, "no port free on both 127.0.0.1 and [::1]")


def warm_daemon() -> str:
    """Start the daemon in the background if none answers (searches need it)."""
    from recall.ipc import client

    try:
        if client.request({"cmd": "ping"}, timeout=1.0).get("ok"):
            return "the search daemon is up"
    except (client.DaemonUnavailable, client.DaemonError):
        pass
    client.spawn_daemon(cooldown_s=0)
    return "starting the search daemon (the first search waits for its model)"


def serve(port: int = 0, open_browser: bool = True, reports: Path | None = None, allow_writes: bool = False,
          say: Callable[[str], None] = print, start_daemon: bool = True, upload_dir: Path | None = None) -> None:
    import uvicorn

    from recall.ipc import client
    from recall.privacy import coredumps
    from recall.privacy.paths import ensure_private_dir, run_dir
    from recall.ui.app import Launch, build_app

    coredumps.forbid()  # the page's "Try a message" holds what you type: a crash must not dump it

    socks = bind(port)
    port = socks[0].getsockname()[1]
    token = new_token()
    ensure_private_dir(run_dir())
    client.check_run_dir()  # the launcher file holds a live code: only in a folder that is the user's only
    codes = OneTimeCode(port, run_dir() / f"ui-{port}.html")
    app = build_app(Launch(token=token, port=port, cwd=Path.cwd(), reports=reports, allow_writes=allow_writes,
                             upload_dir=upload_dir, localhost=len(socks) == 2),
                    codes)
    if start_daemon:
        say(warm_daemon())
    say(f"recall ui: http://{HOST}:{port}/")
    say(f"open it through {codes.launcher.as_uri()} (only you can read it; it holds a one-time code "  # type: ignore[union-attr]
        "that signs this browser in, and a fresh one for the next)")
    say(("re-index allowed (POST with the token)" if allow_writes else "read-only")
        + (f"; uploads land in {upload_dir}" if upload_dir else "") + "; Ctrl-C stops it")
    config = uvicorn.Config(app, access_log=False, log_level="warning", server_header=False, date_header=False,
                            lifespan="off")
    server = uvicorn.Server(config)
    if open_browser:  # the browser's command line names the file, never a code or the token
        threading.Timer(0.5, webbrowser.open, args=(codes.launcher.as_uri(),)).start()  # type: ignore[union-attr]
    _exit_on_signals()
    try:
        server.run(sockets=socks)
    finally:
        codes.remove()


def _exit_on_signals() -> None:
    """SIGTERM and SIGHUP end the page through ``SystemExit``, so that the launcher file (a
    live code) is removed: uvicorn shuts down on them, then raises the signal again with the
    handler it found installed, which without this one would end the process on the spot."""
    import signal

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, leave)
