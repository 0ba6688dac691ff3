"""A fake Gemini API (generativelanguage ``v1beta``) on loopback HTTP, for the real
Gemini CLI.

The CLI reaches it through ``GOOGLE_GEMINI_BASE_URL`` (its "gateway" auth type, read by
the bundled @google/genai client) and sends ``POST /v1beta/models/<model>:
streamGenerateContent?alt=sse`` (or ``:generateContent``, ``:countTokens``). The answer
is one ``GenerateContentResponse`` (``candidates[0].content.parts[].text``,
``finishReason``, ``usageMetadata``), as JSON or as one server-sent ``data:`` event.
Every request body is recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeGemini:
    def __init__(self, reply: Callable[[dict], str]) -> None:
        self.requests: list[dict] = []
        self.reply = reply
        self.url = ""
        self.lock = threading.Lock()

    def bodies(self) -> list[dict]:
        """Bodies of the content-generating requests (not token counts)."""
        with self.lock:
            return [r["body"] for r in self.requests if "GenerateContent" in r["path"]
                    or "generateContent" in r["path"]]


def response(text: str) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240},
            "modelVersion": "gemini-fake"}


@contextmanager
def start(reply: Callable[[dict], str] = lambda body: "Sure, done.") -> Iterator[FakeGemini]:
    state = FakeGemini(reply)

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
            path = self.path.split("?")[0]
            if path.endswith(":countTokens"):
                return self._send(200, "application/json", json.dumps({"totalTokens": 1200}).encode())
            if path.endswith(":streamGenerateContent"):
                data = json.dumps(response(state.reply(body)))
                return self._send(200, "text/event-stream", f"data: {data}\n\n".encode())
            if path.endswith(":generateContent"):
                return self._send(200, "application/json", json.dumps(response(state.reply(body))).encode())
            self._send(404, "application/json", b'{"error": {"code": 404, "message": "not found"}}')

        def do_GET(self):  # noqa: N802
            self._send(404, "application/json", b'{"error": {"code": 404, "message": "not found"}}')

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
