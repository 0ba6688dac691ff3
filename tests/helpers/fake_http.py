"""The loopback HTTP server behind every fake model API (``fake_messages`` for Anthropic,
``e2e/fake_responses`` for OpenAI's Responses API, ``e2e/fake_gemini`` for Gemini): it reads
each POST's JSON body and sends what the fake's handler returns. Only 127.0.0.1, a free port.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[int, str, bytes]  # status, content type, payload


def json_reply(data: dict, status: int = 200) -> Reply:
    return status, "application/json", json.dumps(data).encode()


def sse_reply(events: Iterable[tuple[str | None, dict]]) -> Reply:
    """A server-sent event stream; an event without a name is a bare ``data:`` line."""
    return 200, "text/event-stream", b"".join(
        (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
        for name, data in events)


@contextmanager
def serve(on_post: Callable[[str, dict, dict], Reply], not_found: Reply) -> Iterator[str]:
    """Run the server; ``on_post(path, headers, body) -> Reply``; a GET gets ``not_found``.
    Yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - http.server's naming
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            self._send(*on_post(self.path, dict(self.headers), body))

        def do_GET(self):  # noqa: N802 - e.g. GET /v1/models: nothing here
            self._send(*not_found)

        def _send(self, status: int, ctype: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


class Recorder:
    """What a fake model API saw: every POST's path and JSON body, in order (thread-safe),
    and the function that writes the model's answer from a request body."""

    def __init__(self, reply: Callable[[dict], str]) -> None:
        self.requests: list[dict] = []
        self.reply = reply
        self.url = ""
        self.lock = threading.Lock()

    def record(self, path: str, body: dict) -> int:
        """Keep one request; returns how many there have been."""
        with self.lock:
            self.requests.append({"path": path, "body": body})
            return len(self.requests)

    def bodies_where(self, wanted: Callable[[str], bool]) -> list[dict]:
        """The bodies of the requests whose path (without its query) ``wanted`` accepts."""
        with self.lock:
            return [r["body"] for r in self.requests if wanted(r["path"].split("?")[0])]
