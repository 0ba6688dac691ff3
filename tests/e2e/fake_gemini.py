"""A fake Gemini API (generativelanguage ``v1beta``) on loopback HTTP, for the real
Gemini CLI.

The CLI reaches it through ``GOOGLE_GEMINI_BASE_URL`` (its "gateway" auth type, read by
the bundled @google/genai client) and sends ``POST /v1beta/models/<model>:
streamGenerateContent?alt=sse`` (or ``:generateContent``, ``:countTokens``). The answer
is one ``GenerateContentResponse`` (``candidates[0].content.parts[].text``,
``finishReason``, ``usageMetadata``), as JSON or as one server-sent ``data:`` event.
Every request body is recorded.

A request that asks for JSON by a schema (``generationConfig.responseJsonSchema``: the CLI's
own side requests, such as the router that picks a model when none is given with ``-m``)
gets what a model would write: an object with the schema's required fields (a string, a
number, the first of an enum), not the test's answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from helpers.fake_http import Recorder, Reply, json_reply, serve, sse_reply

NOT_FOUND = json_reply({"error": {"code": 404, "message": "not found"}}, 404)


class FakeGemini(Recorder):
    def bodies(self) -> list[dict]:
        """Bodies of the content-generating requests (not token counts)."""
        return self.bodies_where(lambda path: "GenerateContent" in path or "generateContent" in path)


def response(text: str) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240},
            "modelVersion": "gemini-fake"}


def schema_answer(schema: dict):
    """The least value that fits an OpenAPI-style schema (types in either case)."""
    kind = str(schema.get("type", "string")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_answer(props.get(k, {})) for k in schema.get("required", list(props))}
    if kind == "array":
        return []
    return {"integer": 1, "number": 1, "boolean": False}.get(kind, "ok")


def answer_text(state: FakeGemini, body: dict) -> str:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return json.dumps(schema_answer(schema)) if schema else state.reply(body)


@contextmanager
def start(reply: Callable[[dict], str] = lambda body: "Sure, done.") -> Iterator[FakeGemini]:
    state = FakeGemini(reply)

    def on_post(path: str, _headers: dict, body: dict) -> Reply:
        state.record(path, body)
        path = path.split("?")[0]
        if path.endswith(":countTokens"):
            return json_reply({"totalTokens": 1200})
        if path.endswith(":streamGenerateContent"):
            return sse_reply([(None, response(answer_text(state, body)))])
        if path.endswith(":generateContent"):
            return json_reply(response(answer_text(state, body)))
        return NOT_FOUND

    with serve(on_post, NOT_FOUND) as url:
        state.url = url
        yield state
