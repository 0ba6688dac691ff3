"""A fake Gemini Embedding API on loopback (``helpers.fake_http``) that checks the shape of
every request as https://ai.google.dev/api/embeddings describes ``batchEmbedContents``, and
answers with deterministic vectors (recall's hash embedder over the request's text, so a
ranking test means something; media add a component of their own).

A request of the wrong shape is answered 400 with the reason, and kept in ``errors``: a
test asserts there are none.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from helpers.fake_http import json_reply, serve

KEY = "fake-gemini-key-for-tests"
MEDIA_TYPES = {"image/png", "image/jpeg", "video/mp4", "video/mpeg"}
QUERY_PREFIX = "task: search result | query: "
DOC_PREFIX = "title: none | text: "


class FakeGemini:
    def __init__(self, model: str = "gemini-embedding-2", status_plan: list[int] | None = None) -> None:
        self.model = model
        self.requests: list[dict] = []  # every request's body, in order
        self.errors: list[str] = []
        self.status_plan = list(status_plan or [])  # statuses to answer first (429, 500, ...)
        self.url = ""
        self.lock = threading.Lock()

    # --- what it saw -----------------------------------------------------------
    def inputs(self) -> list[dict]:
        with self.lock:
            return [r for body in self.requests for r in body.get("requests", [])]

    def texts(self) -> list[str]:
        return [p["text"] for r in self.inputs() for p in r["content"]["parts"] if "text" in p]

    def media(self) -> list[tuple[str, bytes]]:
        return [(p["inline_data"]["mime_type"], base64.b64decode(p["inline_data"]["data"]))
                for r in self.inputs() for p in r["content"]["parts"] if "inline_data" in p]

    def saw(self, words: str) -> bool:
        return any(words in t for t in self.texts())

    # --- the API ------------------------------------------------------------------
    def on_post(self, path: str, headers: dict, body: dict):
        lower = {k.lower(): v for k, v in headers.items()}
        with self.lock:
            self.requests.append(body)
            if self.status_plan:
                status = self.status_plan.pop(0)
                return json_reply({"error": {"code": status, "message": "planned failure"}}, status)
        problem = self.check(path, lower, body)
        if problem:
            with self.lock:
                self.errors.append(problem)
            return json_reply({"error": {"code": 400, "message": problem, "status": "INVALID_ARGUMENT"}}, 400)
        return json_reply({"embeddings": [{"values": self.vector(r)} for r in body["requests"]]})

    def check(self, path: str, headers: dict, body: dict) -> str:
        if path != f"/v1beta/models/{self.model}:batchEmbedContents":
            return f"unexpected path {path}"
        if headers.get("x-goog-api-key") != KEY:
            return "missing or wrong x-goog-api-key"
        if "key=" in path:
            return "the key must not travel in the URL"
        if not headers.get("content-type", "").startswith("application/json"):
            return "content-type must be application/json"
        if set(body) != {"requests"} or not isinstance(body["requests"], list) or not 1 <= len(body["requests"]) <= 100:
            return "body must be {requests: [1..100 EmbedContentRequest]}"
        for r in body["requests"]:
            if not set(r) <= {"model", "content", "output_dimensionality", "taskType", "title"}:
                return f"unknown fields {sorted(set(r))}"
            if r.get("model") != f"models/{self.model}":
                return f"model must be models/{self.model}"
            if self.model.startswith("gemini-embedding-2") and "taskType" in r:
                return "gemini-embedding-2 takes no taskType (a text prefix instead)"
            dim = r.get("output_dimensionality")
            if not isinstance(dim, int) or not 128 <= dim <= 3072:
                return "output_dimensionality must be an integer in 128..3072"
            parts = r.get("content", {}).get("parts")
            if not isinstance(parts, list) or not parts:
                return "content.parts must be a non-empty list"
            for p in parts:
                if set(p) == {"text"} and isinstance(p["text"], str):
                    if self.model.startswith("gemini-embedding-2") and not p["text"].startswith(
                            (QUERY_PREFIX, DOC_PREFIX)):
                        return "gemini-embedding-2 text without a task prefix"
                    if not self.model.startswith("gemini-embedding-2") and "taskType" not in r:
                        return "gemini-embedding-001 needs a taskType"
                    continue
                if set(p) != {"inline_data"} or set(p["inline_data"]) != {"mime_type", "data"}:
                    return f"a part must be text or inline_data: {sorted(p)}"
                if p["inline_data"]["mime_type"] not in MEDIA_TYPES:
                    return f"unsupported mime_type {p['inline_data']['mime_type']}"
                try:
                    base64.b64decode(p["inline_data"]["data"], validate=True)
                except (binascii.Error, ValueError):
                    return "inline_data.data is not base64"
        return ""

    @staticmethod
    def vector(request: dict) -> list[float]:
        from recall.embedding.models import HashEmbedder

        dim = request["output_dimensionality"]
        text = " ".join(p["text"].removeprefix(QUERY_PREFIX).removeprefix(DOC_PREFIX)
                        for p in request["content"]["parts"] if "text" in p)
        vec = HashEmbedder(dim)._one(text)
        for p in request["content"]["parts"]:
            if "inline_data" in p:
                h = hashlib.sha256(p["inline_data"]["data"].encode()).digest()
                vec[h[0] % dim] += 0.5
        return vec


@contextmanager
def fake_gemini(**kwargs) -> Iterator[FakeGemini]:
    api = FakeGemini(**kwargs)
    with serve(api.on_post, json_reply({"error": {"code": 404, "message": "not here"}}, 404)) as url:
        api.url = url + "/v1beta"
        yield api


def gemini_config(api: FakeGemini, *, send_messages: bool = False, media: bool = True, model: str = "gemini") -> str:
    """config.toml text that points recall at ``api``."""
    return (f'model = "{model}"\n[gemini]\nendpoint = "{api.url}"\ndimensions = 256\n'
            f"send_messages = {str(send_messages).lower()}\nmedia = {str(media).lower()}\ntimeout_s = 10\n")
