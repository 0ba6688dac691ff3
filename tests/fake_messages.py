"""A fake Anthropic Messages API on loopback HTTP: the only fake the tests use for the
generation backends (the real SDK talks to it through ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer


class FakeMessages:
    """What the server received (``requests``: path, key, body) and how it answers
    (``reply(prompt) -> text``, settable by a test)."""

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.requests: list[dict] = []
        self.reply = reply


@contextmanager
def serve(monkeypatch, reply: Callable[[str], str]) -> Iterator[FakeMessages]:
    state = FakeMessages(reply)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            # The SDK sends the key as x-api-key or (newer versions) as a bearer token.
            bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            state.requests.append({"path": self.path, "key": self.headers.get("x-api-key") or bearer,
                                   "body": body})
            text = state.reply(body["messages"][0]["content"])
            payload = json.dumps({
                "id": "msg_fake01", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1200, "output_tokens": 400},
            }).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):  # keep test output clean
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
