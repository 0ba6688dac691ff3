"""Issue 25's protocol and leftover probes, one table row per class:

* class 4  the page's token: ``recall ui`` in a subprocess; no token or live code on any
           process's command line or environment, in what it prints, in a file another user
           can read (a real second uid tries); each code signs in once; wrong, spent, forged
           and CR/LF-laden codes sign in nothing, and the right one still works after them;
* class 5  one message must not end the MCP server: raw lines over its stdio (nesting 10^3
           to 10^6 deep in every place, every kind of bad id, bad bytes, lines too long,
           batches, bad tool arguments, 1 MB queries); every request gets exactly one answer
           and a last real search is answered;
* class 9  the smaller ones and their kin: lone surrogates and bad bytes in prompts (the
           command hook and the daemon after it), the index folder deleted or emptied under
           a running daemon, something else at the socket path, a reports folder that
           points outside itself or holds a pipe, CR/LF and other bytes in redirect paths.

``leaked``: a token, code, forged block or unsafe line reached someone it should not;
``lost``: an answer owed and not given (a request with no reply, a server that died).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from helpers.daemon import MATCHING
from helpers.env import env_with
from helpers.paths import PY, ROOT
from helpers.users import OTHER_UID

# --- class 5: nothing a client sends ends the MCP server ---------------------------------------


class RawMcp:
    """``python -m recall.mcp`` on pipes: lines in, lines out, no SDK in between."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen([PY, "-m", "recall.mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=str(cwd))
        self.buf = b""

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw if raw.endswith(b"\n") else raw + b"\n")
        self.proc.stdin.flush()

    def replies(self, n: int, timeout: float = 60.0) -> list[dict]:
        """The next ``n`` reply lines (fewer if the time runs out or the server ends)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        out: list[dict] = []
        end = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < end:
            while b"\n" in self.buf and len(out) < n:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.strip():
                    out.append(json.loads(line))
            if len(out) >= n:
                break
            ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                break
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            self.buf += chunk
        return out

    def call(self, msg_id: int, tool: str, args: dict) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                           "params": {"name": tool, "arguments": args}}).encode()

    @classmethod
    def initialized(cls, tmp_path: Path) -> RawMcp:
        """A server on the hash model, past the protocol's handshake."""
        server = cls(env_with(RECALL_MODEL="hash", PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1",
                              CLAUDE_CONFIG_DIR=str(tmp_path / "claude")), tmp_path)
        try:
            server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}})
                .encode())
            assert server.replies(1)[0]["id"] == 1
            server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        except BaseException:
            server.close()
            raise
        return server

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def _nested(depth: int, open_: str, close: str, inner: str = "1") -> str:
    return open_ * depth + inner + close * depth


def mcp_attacks() -> list[tuple[str, bytes, bool]]:
    """(kind, raw line, whether it is owed exactly one reply)."""
    def req(msg_id: object, **extra: object) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/list", **extra}).encode()

    search = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"recall_search","arguments":%s}}'
    attacks: list[tuple[str, bytes, bool]] = []
    for depth in (1_000, 100_000, 1_000_000):
        attacks.append((f"args-list-{depth}", (search % (100 + len(attacks), '{"query":' + _nested(depth, "[", "]")
                                                       + "}")).encode(), True))
        attacks.append((f"args-dict-{depth}", (search % (100 + len(attacks), '{"query":"q","x":'
                                                       + _nested(depth, '{"a":', "}") + "}")).encode(), True))
        attacks.append((f"params-{depth}", ('{"jsonrpc":"2.0","id":' + str(100 + len(attacks))
                                            + ',"method":"tools/list","params":' + _nested(depth, "[", "]") + "}")
                        .encode(), True))
        attacks.append((f"top-{depth}", _nested(depth, "[", "]").encode(), True))
        attacks.append((f"unclosed-{depth}", ("{" + '"a":[' * depth).encode(), True))
    # Brackets inside strings, escaped quotes: not nesting, served as a normal search.
    attacks.append(("brackets-in-strings", (search % (300, json.dumps({"query": '[[[{{{\\"' * 5000 + " deploy"})))
                    .encode(), True))
    for i, bad_id in enumerate(({"a": 1}, [1], 1.5, None, True, False, 1e400, {"$ref": "#"}, [])):
        raw = req(bad_id) if bad_id != 1e400 else b'{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}'
        attacks.append((f"id-{type(bad_id).__name__}-{i}", raw, True))
    attacks += [
        ("id-huge-int", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}', True),
        ("not-json", b"{this is not json", True),
        ("bad-utf8", b'{"jsonrpc":"2.0","id":400,"method":"tools/list","x":"\xff\xfe\xc0"}', True),
        ("nul", b'{"jsonrpc":"2.0","id":401,"method":"tools/list"}\x00', True),
        ("bom", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":402,"method":"tools/list"}', True),
        ("crlf", b'{"jsonrpc":"2.0","id":403,"method":"tools/list"}\r', True),
        ("batch", b'[{"jsonrpc":"2.0","id":404,"method":"tools/list"}]', True),
        ("number", b"42", True),
        ("string", b'"hello"', True),
        ("empty-object", b"{}", True),
        ("method-not-string", b'{"jsonrpc":"2.0","id":405,"method":7}', True),
        ("wrong-version", b'{"jsonrpc":"1.0","id":406,"method":"tools/list"}', True),
        ("too-long", b'{"jsonrpc":"2.0","id":407,"method":"tools/list","p":"' + b"a" * (9 << 20) + b'"}', True),
        # a message past a MiB is refused before the SDK parses it (7.5 MB took it up to 1.9 s)
        ("message-past-a-mib", b'{"jsonrpc":"2.0","id":410,"method":"tools/call","params":{"name":"recall_context",'
                               b'"arguments":{"prompt":"' + b"deploy " * (300_000) + b'"}}}', True),
        # its id last, as the MCP TypeScript SDK writes every request (Claude Code's hook waited 5 s: AG01)
        ("id-last-past-a-mib", b'{"method":"tools/call","params":{"name":"recall_context","arguments":{"prompt":"'
                               + b"deploy " * (300_000) + b'"}},"jsonrpc":"2.0","id":411}', True),
        ("search-id-last-past-a-mib", b'{"method":"tools/call","params":{"name":"recall_search","arguments":{"query":"'
                                      + b"deploy " * (300_000) + b'"}},"jsonrpc":"2.0","id":"s-412"}', True),
        ("unknown-method", b'{"jsonrpc":"2.0","id":408,"method":"no/such/thing"}', True),
        ("lone-surrogate", (search % (409, '{"query":"deploy \\ud800 \\udfff flags"}')).encode(), True),
        ("unknown-notification", b'{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":[[[[1]]]]}}',
         False),
    ]
    bad_args = [{"query": "x", "k": -5}, {"query": "x", "k": 10**12}, {"query": "x", "k": "five"},
                {"query": ["a", "b"]}, {"query": "deploy " * 150_000}, {"query": "x", "repo": "../../../etc"},
                {"query": "x", "repo": "a\x00b"}, {}, {"query": None}, {"prompt": "\x1b]0;t\x07 flags " * 10}]
    for j, args in enumerate(bad_args):
        tool = "recall_context" if "prompt" in args else "recall_search"
        attacks.append((f"tool-args-{j}", json.dumps({"jsonrpc": "2.0", "id": 500 + j, "method": "tools/call",
                                                       "params": {"name": tool, "arguments": args}}).encode(), True))
    return attacks


@pytest.mark.process  # its recall_context calls start a daemon: killed at teardown (tests/conftest.py)
def test_class5_nothing_a_client_sends_ends_the_mcp_server(probe, indexed, tmp_path):
    server = RawMcp.initialized(tmp_path)
    try:
        attacks = mcp_attacks()
        lost = 0
        for kind, raw, owed in attacks:
            server.send(raw)
            got = server.replies(1, timeout=60.0 if owed else 1.0)
            probe.add(inputs=1, faults=1)
            if owed and (len(got) != 1 or "jsonrpc" not in got[0]):
                lost += 1
                print(f"no reply to {kind}")
            elif not owed and got:
                lost += 1  # a reply to a notification: the next request's reply would be mis-paired
                print(f"a reply to the notification {kind}: {got}")
            elif kind in ("message-past-a-mib", "id-last-past-a-mib"):  # not parsed: the hook's tool answers
                assert got[0].get("id") in (410, 411), got  # its empty text, never an error (docs/mcp.md)
                assert got[0]["result"] == {"content": [{"type": "text", "text": ""}], "isError": False}, got
            elif kind == "search-id-last-past-a-mib":  # refused, with its id, not parsed and served
                assert got[0].get("id") == "s-412" and got[0]["error"]["code"] == -32600, got
            elif owed and "error" in got[0]:
                assert got[0]["error"]["code"] in (-32700, -32600, -32601, -32602, -32603), (kind, got)
                if kind == "too-long":  # its id was readable: the client is told which request failed
                    assert got[0]["id"] == 407, got
            probe.add(survived=int(server.proc.poll() is None))
            assert server.proc.poll() is None, f"the server ended after {kind}"
        # Still serving: a real search is answered, and finds the note.
        server.send(server.call(999, "recall_search", {"query": MATCHING, "k": 3}))
        last = server.replies(1)
        alive = bool(last) and last[0].get("id") == 999 and "result" in last[0]
        assert alive, last
        text = last[0]["result"]["content"][0]["text"]
        assert "feature" in text.lower(), text[:300]
        lost += 0 if alive else 1
        probe.add(inputs=1, survived=int(alive), lost=lost)
        assert lost == 0
    finally:
        server.close()


def test_class5_every_request_read_is_answered_when_input_ends(probe, indexed, tmp_path):
    """``printf ... | recall mcp``: the SDK cancelled what was in flight when its input ended, so a
    search sent last was never answered (an outside tester, stop 45); arguments the tools refuse
    are one line naming the fields, not pydantic's text with the values echoed."""
    server = RawMcp.initialized(tmp_path)
    try:
        for msg_id, tool, args in ((2, "recall_search", {"query": MATCHING, "k": 3}), (3, "recall_search", {}),
                                   (4, "recall_search", {"query": "x", "k": 1e308}), (5, "recall_status", {})):
            server.send(server.call(msg_id, tool, args))
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        got = {r.get("id"): r for r in server.replies(4)}
        probe.add(inputs=4, faults=1, lost=4 - len(got))
        assert sorted(got) == [2, 3, 4, 5], got
        assert "feature" in got[2]["result"]["content"][0]["text"].lower()
        for msg_id, field in ((3, "query"), (4, "k")):
            text = got[msg_id]["result"]["content"][0]["text"]
            assert got[msg_id]["result"]["isError"] and "\n" not in text and "pydantic" not in text, text
            assert text.startswith(f"recall_search: bad arguments ({field})") and "1e+308" not in text, text
        assert server.proc.wait(timeout=30) == 0
    finally:
        server.close()


# --- class 4: the page's token and codes -------------------------------------------------------


def _secrets_in_proc(needles: list[str]) -> list[str]:
    """Processes whose command line or environment holds one of ``needles``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        for part in ("cmdline", "environ"):
            try:
                data = (entry / part).read_bytes()
            except OSError:
                continue
            found += [f"{entry.name}/{part}" for n in needles if n.encode() in data]
    return found


def _readable_by_others(root: Path, needles: list[str]) -> list[str]:
    """Files under ``root`` that others may read (or reach through a folder they may enter)
    and that hold one of ``needles``."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            try:
                mode = path.lstat().st_mode
                data = path.read_bytes() if stat.S_ISREG(mode) else b""
            except OSError:
                continue
            if mode & 0o044 and any(n.encode() in data for n in needles):
                found.append(str(path))
    return found


def landing(page: str) -> str:
    """Where the page a redeemed code answers with goes on to (its refresh address)."""
    import html
    import re

    found = re.search(r'content="0;url=([^"]*)"', page)
    return html.unescape(found.group(1)) if found else ""

def test_class4_the_page_token_reaches_no_one_else(probe, tmp_path):
    import secrets

    import httpx

    from helpers.ui import UiServer, index_sample

    home = tmp_path / "home"
    index_sample(home)
    server = UiServer.start(home)
    leaked = lost = 0
    try:
        first = server.url.split("code=", 1)[1]
        base = server.base
        with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as c:
            r = c.get(f"/?code={first}")
            assert r.status_code == 200 and "code" not in landing(r.text), (r.status_code, r.headers)
            token = r.cookies[f"recall_ui_{server.port}"]
        live = server.url.split("code=", 1)[1]
        assert live != first
        needles = [token, first, live]
        # Where another local user could look: every process's command line and environment,
        # what `recall ui` printed, files open to others.
        found = _secrets_in_proc(needles) + [f"output:{n[:6]}" for n in needles if n in server.output()]
        found += _readable_by_others(home, needles) + _readable_by_others(tmp_path, needles)
        probe.add(inputs=4, faults=1)
        leaked += len(found)
        assert found == [], found
        probe.add(survived=1)
        if os.geteuid() == 0 and shutil.which("setpriv"):
            other = subprocess.run(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                                    "cat", str(server.launcher)], capture_output=True, timeout=30)
            probe.add(inputs=1, faults=1)
            leaked += int(live.encode() in other.stdout)
            assert other.returncode != 0 and live.encode() not in other.stdout, other
            probe.add(survived=1)
        # Codes that must sign in nothing: spent, guessed, one character off, forged bytes,
        # sent by POST; then the live one still signs in (no lock-out by guessing).
        forged = [first, "", "x", live[:-1] + ("A" if live[-1] != "A" else "B"), live + "x", live.upper(),
                  live + "%0d%0aSet-Cookie:%20evil=1", "%00" + live, " " + live, live + "%00",
                  *(secrets.token_urlsafe(32) for _ in range(40))]
        with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as c:
            for code in forged:
                r = c.get(f"/notes?code={code}")
                probe.add(inputs=1, faults=1)
                bad = r.status_code != 403 or "set-cookie" in r.headers or r.status_code >= 500
                leaked += int(bad)
                probe.add(survived=int(not bad))
            for method in ("POST", "PUT"):
                r = c.request(method, f"/?code={live}", headers={"origin": base})
                probe.add(inputs=1, faults=1)
                bad = "set-cookie" in r.headers
                leaked += int(bad)
                probe.add(survived=int(not bad))
            ok = c.get(f"/notes?code={live}")
            signed_in = ok.status_code == 200 and "set-cookie" in ok.headers
            lost += int(not signed_in)
        with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as c:  # another browser
            again = c.get(f"/notes?code={live}")
            leaked += int(again.status_code != 403)
        probe.add(inputs=2, faults=1, survived=int(signed_in and again.status_code == 403))
    finally:
        launcher = server.launcher
        server.stop()
    probe.add(leaked=leaked, lost=lost)
    assert leaked == 0 and lost == 0, (leaked, lost)
    assert launcher is not None and not launcher.exists(), "the launcher (a live code) outlived the page"


# --- class 9: the smaller ones, and their kin ---------------------------------------------------


def hook_event(prompt: object, cwd: object = "/") -> bytes:
    return json.dumps({"session_id": os.urandom(8).hex(), "cwd": cwd, "hook_event_name": "UserPromptSubmit",
                       "prompt": prompt}).encode()


def run_hook_raw(stdin: bytes) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=stdin, capture_output=True, env=env_with(),
                          timeout=30)
    return proc, time.monotonic() - t0


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "recall.cli", *args], capture_output=True, text=True, env=env_with(),
                          timeout=timeout)


def answered(proc: subprocess.CompletedProcess) -> bool:
    return b"additionalContext" in proc.stdout


def test_class9_odd_prompts_and_cwds_never_break_the_daemon(probe, indexed, daemons):
    """Lone surrogates (one, reversed pairs, nothing else), surrogates, NUL and 6,000- and
    200,000-char paths in the cwd (each parent of such a path is a copy of it: walked, the
    daemon's memory grew to tens of GB), a cwd of the wrong type: the hook exits 0 in time with at most one JSON
    line, the daemon logs no failure, and a matching message still gets its block."""
    with open(indexed / "config.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[daemon]\nhook_budget_ms = 3000\n")  # a busy test machine: an answer, not a race
    daemons.start()
    cases = [
        ("prompt-lone-high", hook_event(MATCHING + " \ud800"), True),
        ("prompt-lone-low-first", hook_event("\udfff\ud800 " + MATCHING), True),
        ("prompt-only-surrogates", hook_event("\ud800" * 40), False),
        ("prompt-pair-then-lone", hook_event(MATCHING + " \ud83d\ude00 \udc00\ud83d"), True),
        ("prompt-nul-escaped", hook_event(MATCHING + "\u0000"), True),
        ("prompt-bidi-and-escapes", hook_event("\u202e\x1b]0;t\x07" + MATCHING), True),
        ("cwd-lone-surrogate", hook_event(MATCHING, "/tmp/\ud800"), True),
        ("cwd-surrogate-escape", hook_event(MATCHING, "/tmp/\udcff"), True),
        ("cwd-nul", hook_event(MATCHING, "/tmp/\u0000x"), True),
        ("cwd-6000-chars", hook_event(MATCHING, "/a" * 3000), True),
        ("cwd-200k-chars", hook_event(MATCHING, "/a" * 100_000), True),  # no project: never walked
        ("cwd-number", hook_event(MATCHING, 123), True),
        ("cwd-object", hook_event(MATCHING, {"a": [1]}), True),
        ("prompt-list", hook_event([MATCHING]), False),
        ("prompt-200k", hook_event(MATCHING + " x" * 100_000), False),  # diluted: nothing is an answer
    ]
    lost = 0
    for kind, stdin, owed in cases:
        proc, wall = run_hook_raw(stdin)
        probe.add(inputs=1, faults=1)
        ok = proc.returncode == 0 and wall < 5 and proc.stdout.count(b"\n") <= 1
        if proc.stdout:
            json.loads(proc.stdout)
        if owed and not answered(proc):
            lost += 1
            print(f"no block for {kind}: {proc.stdout[:200]!r}")
        probe.add(survived=int(ok))
        assert ok, (kind, proc.returncode, wall, proc.stdout[:200])
    after, _ = run_hook_raw(hook_event(MATCHING))
    log = (indexed / "logs" / "daemon.log").read_text(encoding="utf-8", errors="replace")
    failed = [line for line in log.splitlines() if " ERROR " in line]
    probe.add(inputs=1, survived=int(answered(after)), lost=lost + len(failed))
    assert answered(after) and failed == [] and lost == 0, (failed[:3], lost)


def _damage(home: Path, kind: str) -> None:
    index = home / "index"
    model = next(index.iterdir())
    if kind == "index folder deleted":
        shutil.rmtree(index)
    elif kind == "index folder is a file":
        shutil.rmtree(index)
        index.write_text("x")
    elif kind == "model folder emptied":
        for p in model.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    elif kind == "current names nothing":
        current = model / "current"
        if current.is_symlink() or current.is_file():
            current.unlink()
        current.write_text("gen-999999\n")
    elif kind == "generation files emptied":
        for p in model.rglob("*"):
            if p.is_file() and not p.is_symlink():
                p.write_bytes(b"")


DAMAGE = ["index folder deleted", "index folder is a file", "model folder emptied", "current names nothing",
          "generation files emptied"]


def test_class9_a_damaged_index_is_told_and_repaired_not_hidden(probe, indexed, daemons):
    """The index folder taken away or damaged under a running daemon: `query` fails with one
    line naming the repair (never "(nothing: no notes in scope)" with exit 0), `status` lists
    the problem, the hook stays quick and exits 0; the repair the line names finds the note."""
    template = indexed.parent / "template"
    shutil.copytree(indexed, template)
    for kind in DAMAGE:
        shutil.rmtree(indexed)
        shutil.copytree(template, indexed)
        daemons.start()
        _damage(indexed, kind)
        query = cli("query", MATCHING)
        status = cli("status", "--json")
        proc, wall = run_hook_raw(hook_event(MATCHING))
        probe.add(inputs=3, faults=1)
        err = query.stderr.strip()
        told = (query.returncode == 1 and len(err.splitlines()) == 1 and "recall index" in err
                and "Traceback" not in err)
        problems = json.loads(status.stdout).get("index_problems", []) if status.returncode == 0 else []
        truthful = status.returncode == 0 and bool(problems)
        quick = proc.returncode == 0 and wall < 1.5
        probe.add(survived=int(told) + int(truthful) + int(quick))
        assert told, (kind, query.returncode, query.stdout[-300:], err)
        assert truthful, (kind, status.stdout[-500:], status.stderr[-300:])
        assert quick, (kind, proc.returncode, wall)
        daemons.kill_all()
        repair = err.split("`")[1]
        assert repair.startswith("recall index"), err
        fixed = cli(*repair.split()[1:], timeout=300)
        again = cli("query", "--json", MATCHING)
        lost = int(fixed.returncode != 0 or "feature" not in again.stdout.lower())
        probe.add(inputs=1, lost=lost)
        assert not lost, (kind, fixed.stderr[-300:], again.stdout[-300:])


SOCKET_THINGS = ["folder (0755)", "folder (0700)", "file (0644)", "file (0600)", "fifo (0600)",
                 "dangling link", "link to another socket"]


def _plant_at_socket(run: Path, kind: str, tmp: Path) -> None:
    sock = run / "daemon.sock"
    if kind.startswith("folder"):
        sock.mkdir(mode=0o755 if "0755" in kind else 0o700)
        os.chmod(sock, 0o755 if "0755" in kind else 0o700)
        (sock / "inside").write_text("x")
    elif kind.startswith("file"):
        sock.write_text("x")
        os.chmod(sock, 0o644 if "0644" in kind else 0o600)
    elif kind.startswith("fifo"):
        os.mkfifo(sock, 0o600)
    elif kind == "dangling link":
        sock.symlink_to(tmp / "nowhere" / "x.sock")
    else:
        other = socket.socket(socket.AF_UNIX)
        other.bind(str(tmp / "other.sock"))
        other.listen(1)
        sock.symlink_to(tmp / "other.sock")


def test_class9_something_else_at_the_socket_path(probe, indexed, daemons, tmp_path):
    """A folder, file, pipe or link where the socket goes: `serve` answers within seconds,
    either serving (a private leftover moved aside) or with one line whose repair works."""
    run = indexed / "run"
    for kind in SOCKET_THINGS:
        daemons.kill_all()
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(mode=0o700)
        _plant_at_socket(run, kind, tmp_path)
        t0 = time.monotonic()
        served = cli("serve", "--wait", "10", timeout=60)
        wall = time.monotonic() - t0
        probe.add(inputs=1, faults=1)
        assert wall < 15 and "Traceback" not in served.stderr, (kind, wall, served.stderr[-300:])
        if served.returncode != 0:
            err = served.stderr.strip()
            assert len(err.splitlines()) == 1 and "repair" in err and "`" in err, (kind, err)
            subprocess.run(err.split("`")[1], shell=True, check=True, timeout=30)
            served = cli("serve", "--wait", "10", timeout=60)
        proc, _ = run_hook_raw(hook_event(MATCHING))
        ok = served.returncode == 0 and answered(proc)
        probe.add(survived=int(ok), lost=int(not ok))
        assert ok, (kind, served.returncode, served.stderr[-300:])
    assert not (tmp_path / "nowhere").exists()  # a dangling link is never followed to make a socket


def _reports_variant(root: Path, kind: str, outside: Path) -> None:
    """One way a reports folder (``./reports`` of a cloned repository, say) can lie."""
    from helpers.ui import write_report

    shutil.rmtree(root, ignore_errors=True)
    col = root / "c"
    run = col / "run1"
    if kind == "latest is a folder":
        (col / "latest").mkdir(parents=True)
    elif kind == "latest links outside":
        col.mkdir(parents=True)
        (col / "latest").symlink_to(outside / "latest")
    elif kind in ("latest names ..", "latest names an absolute path", "latest names ../../x"):
        col.mkdir(parents=True)
        (col / "latest").write_text({"latest names ..": "..", "latest names an absolute path": str(outside),
                                     "latest names ../../x": "../../x"}[kind])
    elif kind == "run folder links outside":
        col.mkdir(parents=True)
        run.symlink_to(outside)
        (col / "latest").write_text("run1")
    elif kind.startswith("results.json"):
        run.mkdir(parents=True)
        (col / "latest").write_text("run1")
        results = run / "results.json"
        if kind == "results.json is a pipe":
            os.mkfifo(results)
        elif kind == "results.json links outside":
            results.symlink_to(outside / "results.json")
        elif kind == "results.json is not UTF-8":
            results.write_bytes(b"\xff\xfe{}")
        elif kind == "results.json has the wrong shapes":
            results.write_text(json.dumps({"created": 5, "metrics": {"injected_hit_rate": {"value": "x", "ci95": 3}},
                                           "curve": {"gap_floor": "abc", "injected_hit_rate": None},
                                           "model": [], "thresholds": "no", "n_notes": {"a": 1}}))
        elif kind == "results.json curve with NaN and strings":
            results.write_text('{"created": "z", "curve": {"gap_floor": [NaN, "a", 1e400], '
                               '"injected_hit_rate": [1, 2], "silence_rate": [], "current": {"gap_floor": "q"}}}')
        (run / "report.html").write_text("<p>inside</p>")
    elif kind == "report.html links outside":
        run.mkdir(parents=True)
        (col / "latest").write_text("run1")
        (run / "results.json").write_text(json.dumps({"created": "2026"}))
        (run / "report.html").symlink_to(outside / "report.html")
    else:  # a good run beside a pipe named report.html
        write_report(root)
        html = next(root.rglob("results.json")).parent / "report.html"
        os.mkfifo(html)


REPORT_LIES = ["latest is a folder", "latest links outside", "latest names ..", "latest names an absolute path",
               "latest names ../../x", "run folder links outside", "results.json is a pipe",
               "results.json links outside", "results.json is not UTF-8", "results.json has the wrong shapes",
               "results.json curve with NaN and strings", "report.html links outside", "report.html is a pipe"]


def test_class9_the_quality_page_reads_nothing_outside_and_never_fails(probe, tmp_path):
    """Each lie in turn, on one running page (it reads the folder per request): /quality and
    /quality/report answer 200 or 404 within seconds, never 500, and serve no byte of the
    files outside; then CR, LF, NUL and other bytes in the address a code redirects to."""
    import httpx

    from helpers.ui import UiServer, index_sample

    outside = tmp_path / "outside"
    run = outside
    run.mkdir()
    (outside / "latest").write_text("run1")
    (outside / "results.json").write_text(json.dumps({"created": "9999", "secret": "OUTSIDE-CANARY-1"}))
    (outside / "report.html").write_text("<p>OUTSIDE-CANARY-2</p>")
    home = tmp_path / "home"
    index_sample(home)
    reports = tmp_path / "reports"
    reports.mkdir()
    server = UiServer.start(home, "--reports", str(reports))
    leaked = failed = 0
    try:
        server.token  # noqa: B018 - signs this test in (one code)
        with httpx.Client(base_url=server.base, cookies=server.cookie, follow_redirects=False, timeout=15) as c:
            for kind in REPORT_LIES:
                _reports_variant(reports, kind, outside)
                for path in ("/quality", "/quality/report"):
                    probe.add(inputs=1, faults=1)
                    try:
                        r = c.get(path)
                    except httpx.TimeoutException:
                        failed += 1
                        print(f"{kind} {path}: no answer in 15 s")
                        continue
                    bad_status = r.status_code not in (200, 404)
                    canary = "OUTSIDE-CANARY" in r.text
                    failed += int(bad_status)
                    leaked += int(canary)
                    probe.add(survived=int(not bad_status and not canary))
                    if bad_status or canary:
                        print(f"{kind} {path}: {r.status_code} {'canary' if canary else ''}")
        # Landing addresses: the page a code answers with goes on to this site only, one header per line.
        for path in ("/x%0d%0aSet-Cookie:%20evil=1", "/%0aLocation:%20http://evil.example", "/x%00y",
                     "/%e2%80%a8x", "//evil.example/", "/\\evil.example", "/%2f%2fevil.example", "/%5c%5cevil",
                     "/..%2f..%2fetc", "/" + "a" * 6000):
            code = server.url.split("code=", 1)[1]
            with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
                s.sendall(f"GET {path}?code={code} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                          "Connection: close\r\n\r\n".encode())
                data = b""
                while part := s.recv(65536):  # Connection: close: the whole answer
                    data += part
            head_raw, _, body = data.partition(b"\r\n\r\n")
            head = head_raw.decode("latin-1").split("\r\n")
            probe.add(inputs=1, faults=1)
            status = head[0].split(" ")[1] if head and len(head[0].split(" ")) > 1 else "?"
            location = landing(body.decode("utf-8", "replace")) if status == "200" else "/"
            forged = any(h.lower().startswith("set-cookie: evil") or h.lower().startswith("location: http")
                         for h in head)
            offsite = not location.startswith("/") or location.startswith(("//", "/\\"))
            bad = status.startswith("5") or forged or offsite
            leaked += int(forged or offsite)
            failed += int(status.startswith("5"))
            probe.add(survived=int(not bad))
            assert not bad, (path, head)
    finally:
        server.stop()
    probe.add(leaked=leaked, lost=failed)
    assert leaked == 0 and failed == 0, (leaked, failed)
