"""A fake OpenAI Responses API on loopback HTTP, for the real Codex CLI.

Codex reaches it through a ``model_providers`` entry in its ``config.toml``
(``base_url = "http://127.0.0.1:PORT/v1"``, ``wire_api = "responses"``) and sends
``POST /v1/responses`` with ``"stream": true``. The answer is the server-sent event
stream Codex reads: ``response.created``, one ``response.output_item.done`` per output
item (an assistant ``message`` with ``output_text``), then ``response.completed`` with
the response id and usage (the shapes of Codex's own SDK test proxy,
sdk/typescript/tests/responsesProxy.ts). Every request body is recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeResponses:
    def __init__(self, reply: Callable[[dict], str]) -> None:
        self.requests: list[dict] = []
        self.reply = reply
        self.url = ""
        self.lock = threading.Lock()

    def bodies(self) -> list[dict]:
        with self.lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0].endswith("/responses")]


def sse_events(text: str, n: int) -> list[dict]:
    rid, mid = f"resp_fake{n:02d}", f"msg_fake{n:02d}"
    item = {"type": "message", "role": "assistant", "id": mid,
            "content": [{"type": "output_text", "text": text}]}
    return [
        {"type": "response.created", "response": {"id": rid}},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(item, content=[])},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": mid,
         "delta": text},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {
            "id": rid, "usage": {"input_tokens": 1200, "input_tokens_details": None, "output_tokens": 40,
                                 "output_tokens_details": None, "total_tokens": 1240}}},
    ]


@contextmanager
def start(reply: Callable[[dict], str] = lambda body: "Sure, done.") -> Iterator[FakeResponses]:
    state = FakeResponses(reply)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - http.server's naming
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            with state.lock:
                state.requests.append({"path": self.path, "body": body})
                n = len(state.requests)
            if not self.path.split("?")[0].endswith("/responses"):
                return self._send(404, "application/json", b'{"error": {"message": "not found"}}')
            out = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
                           for e in sse_events(state.reply(body), n))
            self._send(200, "text/event-stream", out)

        def do_GET(self):  # noqa: N802 - e.g. GET /v1/models: nothing here
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

        def _send(self, status: int, ctype: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
