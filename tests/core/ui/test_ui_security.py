"""``recall ui``'s security rules, through an HTTP client against the real server
(a ``recall ui`` subprocess over the sample indexed with the hash model)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from helpers.ui import UiServer, index_sample
from recall.ui.security import csrf_value

pytestmark = pytest.mark.process

NOTE = "Feature flags via Unleash"
MATCHING = "Feature flags via Unleash: how do we add a feature flag?"




def client(ui: UiServer, cookie: bool = True) -> httpx.Client:
    return httpx.Client(base_url=ui.base, cookies=ui.cookie if cookie else None, follow_redirects=False, timeout=30)


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on ``port`` (Linux /proc, v4 and v6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                found.add(addr)
    return found


V6_LOOPBACK = "00000000000000000000000001000000"  # ::1 as /proc/net/tcp6 prints it


def test_listens_on_loopback_only(ui):
    assert ui.url.startswith("http://127.0.0.1:")
    # 127.0.0.1, and ::1 on the same port where there is IPv6 (so no other user can answer
    # "localhost" there); nothing on 0.0.0.0 or ::
    assert listening_addresses(ui.port) in ({"0100007F", V6_LOOPBACK}, {"0100007F"})
    if Path("/proc/net/tcp6").exists() and V6_LOOPBACK in listening_addresses(ui.port):
        with httpx.Client(base_url=f"http://[::1]:{ui.port}", cookies=ui.cookie, timeout=30) as c:
            assert c.get("/notes", headers={"host": f"localhost:{ui.port}"}).status_code == 200


def test_another_user_with_the_token_is_refused(ui):
    """Browsers send a cookie to every port of 127.0.0.1: an outside tester's server, run by
    another local user, lured the browser to itself, took the token and read the notes."""
    import subprocess
    import sys

    from helpers.users import OTHER_UID, as_user, need_second_user

    need_second_user()
    fetch = ("import sys, urllib.request, urllib.error\n"
             "req = urllib.request.Request(sys.argv[1], headers={'Cookie': sys.argv[2]})\n"
             "try:\n    r = urllib.request.urlopen(req, timeout=20); print(r.status, r.read().decode()[:200])\n"
             "except urllib.error.HTTPError as e:\n    print(e.code, e.read().decode()[:200])\n")
    cookie = f"recall_ui_{ui.port}={ui.token}"
    mine = subprocess.run([sys.executable, "-c", fetch, ui.base + "/notes", cookie], capture_output=True, text=True,
                          timeout=60)
    assert mine.stdout.startswith("200"), mine.stdout + mine.stderr
    theirs = subprocess.run(as_user(OTHER_UID, sys.executable, "-c", fetch, ui.base + "/notes", cookie),
                            capture_output=True, text=True, timeout=60)
    assert theirs.stdout.startswith("403") and "only the user who started it" in theirs.stdout, theirs


def test_the_page_holds_typed_messages_so_it_never_dumps_core(ui):
    """"Try a message" hands the page what you type: its core limit is 0, as the daemon's."""
    from helpers.cores import core_limit

    limit = core_limit(ui.proc.pid)
    if limit is None:
        pytest.skip("no /proc here")
    assert limit == ["0", "0"]


def code_of(url: str) -> str:
    return url.split("code=", 1)[1]


def test_a_one_time_code_swaps_for_a_strict_cookie_once(ui):
    code = code_of(ui.url)  # from the launcher file, as the browser reads it
    with client(ui, cookie=False) as c:
        r = c.get(f"/notes?kind=dir&code={code}")
        # a page of this site that goes on (not a redirect: a Strict cookie is not sent along a
        # navigation that the file:// launcher started); the code leaves the address bar
        assert r.status_code == 200 and 'content="0;url=/notes?kind=dir"' in r.text
        assert NOTE not in r.text
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"recall_ui_{ui.port}={ui.token};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        r = c.get("/notes?kind=dir")  # httpx kept the cookie
        assert r.status_code == 200 and NOTE in r.text
    with client(ui, cookie=False) as c:  # the same code again, from another browser: spent
        r = c.get(f"/notes?code={code}")
        assert r.status_code == 403 and "used already" in r.text and NOTE not in r.text
        assert "set-cookie" not in r.headers
    assert code_of(ui.url) != code  # the launcher file holds the next one


def test_the_token_is_on_no_command_line_and_the_launcher_is_private(ui):
    """Another local user reads /proc/*/cmdline and can open 0644 files: neither holds the
    token or a live code; the launcher page is 0600 in a 0700 folder."""
    import os
    import stat

    token, code = ui.token, code_of(ui.url)
    assert token not in ui.launcher.read_text() and code in ui.launcher.read_text()
    assert stat.S_IMODE(os.stat(ui.launcher).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ui.launcher.parent).st_mode) == 0o700
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        assert token.encode() not in cmdline and code.encode() not in cmdline, entry


def test_the_token_redirect_stays_on_this_site(ui):
    """A path starting with // must not become a protocol-relative redirect to another host
    (raw request: HTTP clients normalise such a path away)."""
    import socket

    def raw_get(target: str) -> list[str]:
        with socket.create_connection(("127.0.0.1", ui.port), timeout=10) as sock:
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            head = b""
            while part := sock.recv(4096):  # Connection: close: read the whole answer
                head += part
        return head.decode("latin-1").split("\r\n")

    lines = raw_get(f"//evil.example/x?code={code_of(ui.url)}")
    assert lines[0].split()[1] == "200"
    assert 'content="0;url=/evil.example/x"' in lines[-1]  # stays on this site
    # CR LF in the path (issue 25): percent-encoded in the Location, no header injected, no 500
    lines = raw_get(f"/x%0d%0aSet-Cookie:%20evil=1%0d%0a?code={code_of(ui.url)}")
    assert lines[0].split()[1] == "200", lines
    assert 'url=/x%0d%0aset-cookie:%20evil=1%0d%0a"' in lines[-1].lower()
    assert not any(line.lower().startswith("set-cookie: evil") for line in lines)


@pytest.mark.parametrize("path", ["/", "/notes", "/notes/1", "/try", "/injections", "/quality", "/status",
                                  "/static/style.css", "/nowhere"])
def test_every_path_needs_the_token(ui, path):
    with client(ui, cookie=False) as c:
        r = c.get(path)
        assert r.status_code == 403
        assert "recall ui" in r.text and NOTE not in r.text
        r = c.get(path, params={"code": "not-the-code"})
        assert r.status_code == 403
        r = c.get(path, cookies={f"recall_ui_{ui.port}": ui.token[:-1] + "x"})
        assert r.status_code == 403


def test_a_foreign_host_header_is_refused_even_with_the_token(ui):
    """DNS rebinding: a page at evil.example that resolves to 127.0.0.1 sends Host: evil.example."""
    with client(ui) as c:
        for host in (f"evil.example:{ui.port}", "evil.example", f"127.0.0.1:{ui.port + 1}", f"127.0.0.2:{ui.port}",
                     f"localhost.evil.example:{ui.port}", ""):
            r = c.get("/notes", headers={"host": host})
            assert r.status_code == 403, host
            assert NOTE not in r.text
        assert c.get("/notes", headers={"host": f"localhost:{ui.port}"}).status_code == 200
        assert c.get("/notes", headers={"host": f"127.0.0.1:{ui.port}"}).status_code == 200


def test_no_cors_headers(ui):
    with client(ui) as c:
        pre = c.request("OPTIONS", "/try", headers={"origin": "http://evil.example",
                                                    "access-control-request-method": "POST"})
        assert pre.status_code == 405
        r = c.get("/notes", headers={"origin": "http://evil.example"})
        assert r.status_code == 200
        for resp in (pre, r):
            assert not [h for h in resp.headers if h.lower().startswith("access-control-")]


def test_strict_csp_and_no_inline_code_on_every_page(ui):
    with client(ui) as c:
        for path in ("/notes", "/notes/1", "/try", "/injections", "/quality", "/status", "/static/style.css"):
            r = c.get(path)
            assert r.status_code == 200, path
            csp = r.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "script-src 'none'" in csp and "frame-ancestors 'none'" in csp
            assert "unsafe-inline" not in csp
            assert r.headers["x-frame-options"] == "DENY" and r.headers["cache-control"] == "no-store"
            if path != "/static/style.css":
                assert "<script" not in r.text.lower() and " style=" not in r.text.lower()
                assert " on" + "click=" not in r.text.lower()
        # the refusal pages too
        assert "default-src 'self'" in httpx.get(ui.base + "/notes").headers["content-security-policy"]


def test_posts_need_same_site_origin_and_the_form_field(ui):
    csrf = csrf_value(ui.token)
    with client(ui) as c:
        ok = c.post("/try", data={"message": MATCHING, "csrf": csrf}, headers={"origin": ui.base})
        assert ok.status_code == 303 and 'id="decision"' in c.get(ok.headers["location"]).text
        assert c.post("/try", data={"message": MATCHING}).status_code == 403  # no form field
        assert c.post("/try", data={"message": MATCHING, "csrf": "0" * 64}).status_code == 403
        r = c.post("/try", data={"message": MATCHING, "csrf": csrf}, headers={"origin": "http://evil.example"})
        assert r.status_code == 403
        r = c.post("/try", data={"message": MATCHING, "csrf": csrf}, headers={"sec-fetch-site": "cross-site"})
        assert r.status_code == 403
    with client(ui, cookie=False) as c:  # a cross-site form carries no SameSite=Strict cookie
        assert c.post("/try", data={"message": MATCHING, "csrf": csrf}).status_code == 403


def test_read_only_by_default(ui):
    csrf = csrf_value(ui.token)
    with client(ui) as c:
        assert c.get("/reindex").status_code == 405
        r = c.post("/reindex", data={"csrf": csrf})
        assert r.status_code == 403 and "--allow-writes" in r.text
        assert "Re-index the indexed folders" not in c.get("/status").text
        for method in ("PUT", "DELETE", "PATCH"):
            assert c.request(method, "/notes").status_code == 405


def test_reindex_with_allow_writes_is_a_post_with_the_token(tmp_path):
    home = tmp_path / "home"
    index_sample(home)
    ui = UiServer.start(home, "--allow-writes")
    try:
        with client(ui) as c:
            assert "Re-index the indexed folders" in c.get("/status").text
            assert c.post("/reindex", data={}).status_code == 403  # no form field
            r = c.post("/reindex", data={"csrf": csrf_value(ui.token)}, headers={"origin": ui.base})
            assert r.status_code == 303 and r.headers["location"] == "/status"
            end = time.monotonic() + 60
            text = ""
            while time.monotonic() < end and "re-index finished" not in text:
                text = c.get("/status").text
                time.sleep(0.2)
            assert "re-index finished" in text
        with client(ui, cookie=False) as c:
            assert c.post("/reindex", data={"csrf": csrf_value(ui.token)}).status_code == 403
    finally:
        ui.stop()


def test_a_tried_message_is_never_stored_logged_or_counted(ui):
    canary = "canary-7f3a9 Feature flags via Unleash: how do we add a feature flag?"
    with client(ui) as c:
        before = c.get("/injections").text
        posted = c.post("/try", data={"message": canary, "csrf": csrf_value(ui.token)}, headers={"origin": ui.base})
        # sent on to its answer, kept in memory under a random id: the message is in no address, and
        # no browser keeps a POST body with its history entry (Chromium wrote one to its session files)
        assert posted.status_code == 303 and "canary" not in posted.headers["location"]
        r = c.get(posted.headers["location"])
        assert r.status_code == 200 and "canary-7f3a9" in r.text  # shown back in the form, once
        assert 'id="decision"' in r.text and "No answer" not in r.text
        assert "canary-7f3a9" not in c.get("/try?r=not-an-id").text
        assert c.get("/injections").text == before  # not an injection
    assert "canary-7f3a9" not in ui.output()  # no access log, no echo
    for path in ui.home.rglob("*"):
        if path.is_file():
            assert b"canary-7f3a9" not in path.read_bytes(), path


def test_a_port_named_that_another_process_holds_on_ipv6_loopback_is_refused():
    """An outside tester's other user listened on [::1]:PORT: `recall ui --port PORT` served
    127.0.0.1 only, without a word, and http://localhost:PORT/ reached the other server."""
    import errno
    import socket

    from recall.ui.server import bind

    try:
        squatter = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        squatter.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        squatter.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    squatter.listen(1)
    port = squatter.getsockname()[1]
    try:
        with pytest.raises(OSError) as refused:
            bind(port)
        assert refused.value.errno == errno.EADDRINUSE and "[::1]" in str(refused.value)
        free = bind(0)  # a free port is found on both
        assert len(free) == 2 and free[0].getsockname()[1] != port
        for s in free:
            s.close()
    finally:
        squatter.close()
