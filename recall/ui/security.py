"""The rules every request to ``recall ui`` passes, as one ASGI middleware.

The page serves private notes on a port any local process (and any web page the user
opens, through the browser) can reach, so:

* **Host** must be ``127.0.0.1:PORT`` (or ``localhost:PORT`` and ``[::1]:PORT`` where the page
  holds [::1] on its port too): a DNS-rebinding page (evil.example resolving to 127.0.0.1)
  sends its own name and is refused;
* the connection must come from a process of the **user** who started the page (the kernel's
  TCP tables), whatever it carries;
* a **token**, random per launch, is required on every request, as an HttpOnly,
  SameSite=Strict cookie. It is never in an address: the browser gets it by opening an
  address with a **one-time code** (``OneTimeCode``), good for one exchange and then
  replaced. The current code lies only in a launcher file that only this user can read
  (``RECALL_HOME/run/ui-PORT.html``, 0600 in a 0700 folder), and ``recall ui`` opens the
  browser on that file, so neither the token nor a live code is on a command line
  (``/proc/*/cmdline``) that another local user could read;
* anything but GET/HEAD/POST is refused; a POST whose ``Origin`` or ``Sec-Fetch-Site``
  says another site sent it is refused (the form's CSRF field is checked by the page);
* every reply carries a strict Content-Security-Policy (no script, no inline style, no
  framing), ``no-store`` and no CORS header at all.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CODE_PARAM = "code"
CSP = ("default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
CSP_KEY = b"content-security-policy"
# The harness's report.html: its own inline styles and data: images, no script, in a sandbox.
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox; frame-ancestors 'none'"
SECURITY_HEADERS = [
    (CSP_KEY, CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make POSTs send "Origin: null"
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),  # a tried message must not land in the browser's disk cache
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
METHODS = ("GET", "HEAD", "POST")


def new_token() -> str:
    return secrets.token_urlsafe(32)


class OneTimeCode:
    """The code an address carries to open the page: it sets the launch's cookie once, and is
    then replaced by a fresh one, written to ``launcher`` (a page that sends the browser on
    with it) for the next browser; only this user can read that file."""

    def __init__(self, port: int, launcher: Path | None = None) -> None:
        self.port = port
        self.launcher = launcher
        self.current = ""
        self.renew()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?{CODE_PARAM}={self.current}"

    def renew(self) -> None:
        self.current = new_token()
        if self.launcher is None:
            return
        from recall.privacy.paths import private_open

        url = html.escape(self.url())
        tmp = self.launcher.with_name(self.launcher.name + ".tmp")
        with private_open(tmp) as fh:  # 0600 in the run folder (0700)
            fh.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
                     f'<title>recall ui</title><a href="{url}">open recall ui</a>\n')
        os.replace(tmp, self.launcher)

    def redeem(self, given: str) -> bool:
        """Whether ``given`` is the live code; if so it is spent (a fresh one replaces it)."""
        if not hmac.compare_digest(given.encode(), self.current.encode()):
            return False
        self.renew()
        return True

    def remove(self) -> None:
        if self.launcher is not None:
            self.launcher.unlink(missing_ok=True)


def csrf_value(token: str) -> str:
    """The hidden field every form carries: derived from the token, so a page that does
    not know the token cannot forge a POST even if a cookie were sent."""
    return hmac.new(token.encode(), b"recall-ui-csrf", hashlib.sha256).hexdigest()


def cookie_name(port: int) -> str:
    # Cookies are per host, not per port: two pages on two ports keep their own.
    return f"recall_ui_{port}"


class Guard:
    """Wraps the app; refuses what the rules above refuse, adds the headers to the rest."""

    def __init__(self, app: Callable[..., Awaitable[None]], token: str, port: int,
                 codes: OneTimeCode | None = None, localhost: bool = True) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.codes = codes or OneTimeCode(port)
        # localhost: only where the page holds [::1] on its port too (recall.ui.server.bind)
        self.hosts = {f"127.0.0.1:{port}"} | ({f"localhost:{port}", f"[::1]:{port}"} if localhost else set())
        self.origins = {f"http://{h}" for h in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan; websockets are not routed
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        if not _from_this_user(scope):
            await _plain(send, 403, "refused: this page answers only the user who started it")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host", "") not in self.hosts:
            await _plain(send, 403, "refused: this page answers only at 127.0.0.1 or localhost on its own port")
            return
        method = scope.get("method", "GET")
        if method not in METHODS:
            await _plain(send, 405, "method not allowed", [(b"allow", b"GET, HEAD, POST")])
            return
        if method == "POST" and not self._same_site(headers):
            await _plain(send, 403, "refused: a form from another site")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get(CODE_PARAM)
        if given is not None and method in ("GET", "HEAD") and self.codes.redeem(given):
            location = _same_site_location(scope.get("path", "/"), [(k, v) for k, v in query if k != CODE_PARAM])
            cookie = (f"{cookie_name(self.port)}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode()
            await _landing(send, location, cookie)
            return
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is just no cookie
            jar = SimpleCookie()
        morsel = jar.get(cookie_name(self.port))
        if morsel is None or not self._valid(morsel.value):
            spent = " (its one-time code was used already)" if given is not None else ""
            where = f" ({self.codes.launcher.as_uri()})" if self.codes.launcher is not None else ""
            await _plain(send, 403, f"refused{spent}: open the page that `recall ui` printed{where}; it holds "
                                    "a fresh one-time code")
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = _without_cors(message.get("headers", []))
                # A route may set a stricter policy of its own (the sandboxed evaluation report)
                own = any(k.lower() == b"content-security-policy" for k, _ in headers)
                message["headers"] = [*headers, *(h for h in SECURITY_HEADERS if not (own and h[0] == CSP_KEY))]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _valid(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _same_site(self, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return False
        return headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")


def _from_this_user(scope: Scope) -> bool:
    """Whether the connection comes from a process of the user who started the page, as the
    kernel says (``recall.privacy.trust.tcp_peer_uid``). Browsers send a cookie to every port
    of 127.0.0.1: an outside tester's server, run by another local user on another port, lured
    the browser there, took the token and read the notes with it. A connection the kernel's
    tables do not list is refused on Linux; where there are no such tables (macOS, Windows),
    the token alone decides. (A client that is no address at all is an in-process test's.)"""
    import ipaddress

    from recall.privacy.trust import my_uid, tcp_peer_uid

    client, server = scope.get("client"), scope.get("server")
    if not (client and server) or not os.path.exists("/proc/net/tcp"):
        return True
    try:
        ipaddress.ip_address(client[0])
    except ValueError:
        return True
    return tcp_peer_uid((client[0], int(client[1])), (server[0], int(server[1]))) == my_uid()


def _same_site_location(path: str, query: list[tuple[str, str]]) -> str:
    """A Location on this site for ``path`` (decoded) and ``query``: percent-encoded, so no
    CR, LF or other byte of the address can reach the header; one leading slash, so
    "//host" cannot send the browser to another site."""
    rest = urlencode(query)
    return "/" + quote(path.lstrip("/"), safe="/-._~!$&'()*+,;=:@") + (f"?{rest}" if rest else "")


def _without_cors(headers: list) -> list:
    return [(k, v) for k, v in headers if not k.lower().startswith(b"access-control-")]


async def _landing(send: Send, location: str, cookie: bytes) -> None:
    """The answer to a redeemed code: the cookie, and a page that goes on to ``location``.

    Not a redirect: the launcher is a file:// page, so the navigation it starts is
    cross-site, and a browser sends no SameSite=Strict cookie anywhere along that
    navigation's redirects (the next page would be refused). A refresh from this page is a
    navigation of this site's own, which carries the cookie (and needs no script: the CSP
    allows none)."""
    url = html.escape(location, quote=True)
    body = (f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
            f'<title>recall ui</title><a href="{url}">continue</a>\n').encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/html; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), (b"set-cookie", cookie),
                            (b"cache-control", b"no-store"), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, text: str, extra: list | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or []), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
