"""A fake Anthropic Messages API on loopback HTTP: the only fake the tests use for the
model. The generation tests point the real SDK at it (``serve``, through
ANTHROPIC_BASE_URL); the end-to-end tests point the real Claude Code CLI at it (``start``).

It records every request body, answers ``POST /v1/messages`` as one JSON message, or as
the server-sent event stream when the body says ``"stream": true`` (``message_start``,
then per content block ``content_block_start`` / ``content_block_delta`` /
``content_block_stop``, then ``message_delta`` with the stop reason and ``message_stop``,
the order Anthropic's streaming documentation gives), and answers with text or with tool
calls: ``answer(body) -> [text("..."), tool_use("Read", {...})]``, settable by a test.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from helpers.fake_http import Reply, json_reply, sse_reply
from helpers.fake_http import serve as serve_http

Block = dict[str, Any]


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict[str, Any], tool_id: str = "toolu_fake01") -> Block:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


class FakeMessages:
    """What the server received (``requests``: path, key, body) and how it answers:
    ``answer(body) -> blocks`` if set, else ``reply(first user message) -> text``."""

    def __init__(self, reply: Callable[[str], str] | None = None,
                 answer: Callable[[dict], list[Block]] | None = None) -> None:
        self.requests: list[dict] = []
        self.reply = reply
        self.answer = answer
        self.url = ""
        self.lock = threading.Lock()

    def blocks_for(self, body: dict) -> list[Block]:
        if self.answer is not None:
            return self.answer(body)
        if self.reply is not None:
            return [text(self.reply(body["messages"][0]["content"]))]
        return [text("ok")]

    def bodies(self, path: str = "/v1/messages") -> list[dict]:
        with self.lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0] == path]


def message(body: dict, blocks: list[Block]) -> dict:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": "msg_fake01", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 400}}


def sse_events(body: dict, blocks: list[Block]) -> Iterator[tuple[str, dict]]:
    full = message(body, blocks)
    start = dict(full, content=[], stop_reason=None, usage={"input_tokens": 1200, "output_tokens": 1})
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": dict(block, input={})}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": 400}}
    yield "message_stop", {"type": "message_stop"}


def _not_found(path: str) -> Reply:
    return json_reply({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)


@contextmanager
def start(reply: Callable[[str], str] | None = None,
          answer: Callable[[dict], list[Block]] | None = None) -> Iterator[FakeMessages]:
    """The server on 127.0.0.1 (a free port); ``state.url`` is its base URL."""
    state = FakeMessages(reply, answer)

    def on_post(path: str, headers: dict, body: dict) -> Reply:
        # The SDK sends the key as x-api-key or (newer versions) as a bearer token.
        lower = {k.lower(): v for k, v in headers.items()}
        bearer = (lower.get("authorization") or "").removeprefix("Bearer ")
        with state.lock:
            state.requests.append({"path": path, "key": lower.get("x-api-key") or bearer, "body": body})
        path = path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return json_reply({"input_tokens": 1200})
        if path != "/v1/messages":
            return _not_found(path)
        blocks = state.blocks_for(body)
        if not body.get("stream"):
            return json_reply(message(body, blocks))
        return sse_reply(sse_events(body, blocks))

    with serve_http(on_post, _not_found("GET")) as url:
        state.url = url
        yield state


@contextmanager
def serve(monkeypatch, reply: Callable[[str], str]) -> Iterator[FakeMessages]:
    """``start`` with ANTHROPIC_BASE_URL and a dummy ANTHROPIC_API_KEY set for the test."""
    with start(reply) as state:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", state.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
        yield state
