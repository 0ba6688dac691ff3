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

from helpers.daemon import MATCHING, write_config
from helpers.env import env_with
from helpers.paths import PY, ROOT
from helpers.users import OTHER_UID, need_second_user

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
        attacks.append((f"params-{depth}", ('{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}'
                                            % (100 + len(attacks), _nested(depth, "[", "]"))).encode(), True))
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


def test_class5_nothing_a_client_sends_ends_the_mcp_server(probe, indexed, tmp_path):
    env = env_with(RECALL_MODEL="hash", PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1",
                   CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    server = RawMcp(env, tmp_path)
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}})
            .encode())
        assert server.replies(1)[0]["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
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
            elif owed and "error" in got[0]:
                assert got[0]["error"]["code"] in (-32700, -32600, -32601, -32602, -32603), (kind, got)
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
            assert r.status_code == 303 and "code" not in r.headers["location"], (r.status_code, r.headers)
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
            lost += int(ok.status_code != 303)
        with httpx.Client(base_url=base, follow_redirects=False, timeout=30) as c:  # another browser
            again = c.get(f"/notes?code={live}")
            leaked += int(again.status_code != 403)
        probe.add(inputs=2, survived=int(ok.status_code == 303 and again.status_code == 403))
    finally:
        launcher = server.launcher
        server.stop()
    probe.add(leaked=leaked, lost=lost)
    assert leaked == 0 and lost == 0, (leaked, lost)
    assert launcher is not None and not launcher.exists(), "the launcher (a live code) outlived the page"
