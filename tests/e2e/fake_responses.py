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

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from helpers.fake_http import Recorder, Reply, json_reply, serve, sse_reply

NOT_FOUND = json_reply({"error": {"message": "not found"}}, 404)


class FakeResponses(Recorder):
    def bodies(self) -> list[dict]:
        return self.bodies_where(lambda path: path.endswith("/responses"))


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

    def on_post(path: str, _headers: dict, body: dict) -> Reply:
        n = state.record(path, body)
        if not path.split("?")[0].endswith("/responses"):
            return NOT_FOUND
        return sse_reply((e["type"], e) for e in sse_events(state.reply(body), n))

    with serve(on_post, NOT_FOUND) as url:
        state.url = url
        yield state
