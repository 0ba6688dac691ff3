"""An optional cloud embedder: Google's Gemini Embedding, text, images and video in one space.

Off by default: nothing leaves the machine unless ``model = "gemini"`` (or
``"gemini:<model name>"``) is set and the key is in the environment variable named by
``[gemini] api_key_env``. Then:

* what is sent is said (stderr, once per process) before the first request;
* indexed text is sent as recall keeps it: secrets masked (``recall.privacy.masking``);
* with ``[gemini] media``, a screenshot goes with its text, and a recording's 97 s piece
  (sound removed: the API takes at most 120 s of silent video) with the text read in it,
  as one input, so a text question finds a picture. An image or piece whose OCR text held
  a secret is not sent: its masked text alone is;
* the user's messages (the hook's per-message search, an agent's MCP search) are never
  sent unless ``[gemini] send_messages = true``; without it the hook stays silent and the
  store answers only what the user types on purpose (``recall search``, ``recall query``),
  the gate being ``recall.api.Recall.query``.

The API (https://ai.google.dev/api/embeddings): ``POST {endpoint}/models/{model}:batchEmbedContents``
with header ``x-goog-api-key``, body ``{"requests": [{"model": "models/{model}", "content":
{"parts": [{"text": ...} | {"inline_data": {"mime_type": ..., "data": base64}}]},
"output_dimensionality": N}]}``, answer ``{"embeddings": [{"values": [...]}, ...]}`` in
order. gemini-embedding-2 takes its task as a text prefix ("task: search result | query:
..."); gemini-embedding-001 as ``taskType``. One ``httpx.Client`` per embedder keeps its
connection. ``tests/core/embedding/test_gemini.py`` runs it against a fake API on loopback that checks
every request's shape.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from recall.errors import RecallError
from recall.privacy.masking import mask_secrets

if TYPE_CHECKING:
    import numpy as np

    from recall.config.settings import GeminiSettings

DEFAULT_MODEL = "gemini-embedding-2"
VIDEO_MAX_S = 120  # the API's longest silent video per input
REQUEST_BYTES = 16_000_000  # media per request (base64 inflates by a third; the API's own cap is 20 MB)
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_told = threading.Event()  # the disclosure line is printed once per process


class GeminiError(RecallError):
    """The cloud embedder cannot be used or answered badly: one line, the key never in it."""


def _unit_rows(rows) -> np.ndarray:
    import numpy as np

    arr = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms)


@dataclass(frozen=True)
class Media:
    """What a chunk's vector is made from besides its text: an image file, or a recording's
    time range (``start``..``end`` seconds)."""

    path: str
    kind: str  # image | recording
    start: float = 0.0
    end: float = 0.0


def messages_allowed(embedder) -> bool:
    """Whether the user's messages may go to ``embedder``: a cloud one says; a local one, yes."""
    return bool(getattr(getattr(embedder, "inner", embedder), "messages_allowed", True))


def model_name(spec: str) -> str:
    return spec.split(":", 1)[1] if ":" in spec else DEFAULT_MODEL


def model_id(spec: str, dimensions: int | None) -> str:
    """The id that keys vectors and thresholds: model and size (vectors of two sizes never mix);
    ``dimensions`` is the caller's ``[gemini] dimensions``, handed down (never read here)."""
    if dimensions is None:
        raise GeminiError("model = gemini's id needs its [gemini] dimensions, handed down")
    return f"google/{model_name(spec)}@{dimensions}"


def disclosure(name: str, settings: GeminiSettings) -> str:
    """The line said before the first request: where, what, and what is not sent."""
    media = ("screenshots and recordings (97 s pieces, no sound) with their text"
             if settings.media else "no images or video (their OCR text only)")
    messages = ("your messages to the agent ARE sent, to search them ([gemini] send_messages = true)"
                if settings.send_messages else
                "your messages to the agent are not sent (the hook stays silent; `recall search` sends "
                "what you type there; [gemini] send_messages = true to search every message)")
    return (f"recall: model = gemini sends to {settings.endpoint} ({name}): the text of your indexed notes "
            f"and documents (secrets masked), {media}; {messages}.")


class GeminiEmbedder:
    """``recall.embedding.models.Embedder`` over the Gemini API (see the module doc)."""

    device = "remote (Gemini API)"

    def __init__(self, spec: str, settings: GeminiSettings | None) -> None:
        if settings is None:  # the caller's [gemini] settings, handed down (never read here)
            raise GeminiError("model = gemini is built with its [gemini] settings, handed down")
        try:
            import httpx
        except ImportError as exc:
            raise GeminiError("model = gemini needs httpx: pip install 'recall-memory[gemini]'") from exc
        key = os.environ.get(settings.api_key_env, "").strip()
        if not key:
            raise GeminiError(f"model = gemini needs a key in ${settings.api_key_env} (export "
                                f"{settings.api_key_env}=...; or set model back to a local one in config.toml)")
        parts = urlsplit(settings.endpoint)
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in LOOPBACK):
            raise GeminiError(f"[gemini] endpoint {settings.endpoint!r} must be https:// (plain http only "
                                "on loopback): the key travels with every request")
        self.settings = settings
        self.name = model_name(spec)
        self.model_id = model_id(spec, settings.dimensions)
        self.dimension = settings.dimensions
        self.messages_allowed = settings.send_messages  # read by recall.api.Recall.query
        self._url = f"{settings.endpoint.rstrip('/')}/models/{self.name}:batchEmbedContents"
        self._client = httpx.Client(timeout=settings.timeout_s, headers={"x-goog-api-key": key})
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests made (bench and tests read it)

    # --- the Embedder interface --------------------------------------------------
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self._content(t, None, query=True) for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self._content(t, None, query=False) for t in texts])

    def embed_media(self, items: Sequence[tuple[str, Media | None]]) -> np.ndarray:
        """One vector per (passage text, its image or recording piece or None)."""
        if not self.settings.media:
            return self.embed_passages([t for t, _ in items])
        return self._embed([self._content(t, m, query=False) for t, m in items])

    def close(self) -> None:
        self._client.close()

    # --- requests -----------------------------------------------------------------
    def _text(self, text: str, query: bool) -> str:
        if not self.name.startswith("gemini-embedding-2"):
            return text  # gemini-embedding-001 takes the task as taskType
        return f"task: search result | query: {text}" if query else f"title: none | text: {text}"

    def _content(self, text: str, media: Media | None, query: bool) -> dict:
        request: dict = {"model": f"models/{self.name}", "content": {"parts": [{"text": self._text(text, query)}]},
                         "output_dimensionality": self.dimension}
        if not self.name.startswith("gemini-embedding-2"):
            request["taskType"] = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
        if media is not None:
            mime, data = media_bytes(media)
            request["content"]["parts"].append(
                {"inline_data": {"mime_type": mime, "data": base64.b64encode(data).decode("ascii")}})
        return request

    def _embed(self, requests: list[dict]) -> np.ndarray:
        import numpy as np

        if not requests:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows: list[list[float]] = []
        for batch in _batches(requests):
            rows += self._post(batch)
        return _unit_rows(rows)

    def _post(self, batch: list[dict]) -> list[list[float]]:
        """One batchEmbedContents call; 429 and 5xx are tried again (three times in all,
        after the server's Retry-After or 1, 2 s); any other failure is one line."""
        import httpx

        if not _told.is_set():
            _told.set()
            print(mask_secrets(disclosure(self.name, self.settings)), file=sys.stderr, flush=True)
        for attempt in range(3):
            try:
                with self._lock:
                    self.requests += 1
                    resp = self._client.post(self._url, json={"requests": batch})
            except httpx.HTTPError as exc:
                if attempt == 2:
                    raise GeminiError(f"Gemini API unreachable at {self.settings.endpoint} "
                                        f"({type(exc).__name__}); check the network or [gemini] endpoint") from None
                time.sleep(2**attempt)
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                if attempt < 2:
                    time.sleep(_retry_after(resp, 2**attempt))
                    continue
            if resp.status_code != 200:
                raise GeminiError(f"Gemini API answered {resp.status_code}: {_error_message(resp)}")
            return _values(resp, len(batch), self.dimension)
        raise AssertionError("unreachable")  # pragma: no cover


def _batches(requests: list[dict], most: int = 100) -> list[list[dict]]:
    """At most ``most`` inputs (the API's cap) and about REQUEST_BYTES of media per call."""
    out: list[list[dict]] = [[]]
    size = 0
    for r in requests:
        n = sum(len(p.get("inline_data", {}).get("data", "")) for p in r["content"]["parts"])
        if out[-1] and (len(out[-1]) == most or size + n > REQUEST_BYTES):
            out.append([])
            size = 0
        out[-1].append(r)
        size += n
    return out


def _values(resp, count: int, dimension: int) -> list[list[float]]:
    try:
        rows = [e["values"] for e in resp.json()["embeddings"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise GeminiError(f"Gemini API answer without embeddings ({type(exc).__name__})") from None
    if len(rows) != count or any(len(r) != dimension for r in rows):
        raise GeminiError(f"Gemini API sent {len(rows)} vectors for {count} inputs (or not of size "
                            f"{dimension}: [gemini] dimensions)")
    return rows


def _error_message(resp) -> str:
    try:
        return str(resp.json()["error"]["message"])[:200]
    except (ValueError, KeyError, TypeError):
        return resp.text[:200] or resp.reason_phrase


def _retry_after(resp, default: float) -> float:
    try:
        return min(30.0, float(resp.headers.get("retry-after", default)))
    except ValueError:
        return default


# --- media -------------------------------------------------------------------------


def media_bytes(media: Media) -> tuple[str, bytes]:
    """(MIME type, bytes) as the API takes them: PNG or JPEG as they are, other images as
    PNG; a recording's piece as a silent MP4 at one frame a second (small to send)."""
    path = Path(media.path)
    if media.kind == "image":
        suffix = path.suffix.lower()
        if suffix == ".png":
            return "image/png", path.read_bytes()
        if suffix in (".jpg", ".jpeg"):
            return "image/jpeg", path.read_bytes()
        import io

        from PIL import Image

        with Image.open(path) as img:
            out = io.BytesIO()
            img.convert("RGB").save(out, "PNG")
        return "image/png", out.getvalue()
    return "video/mp4", video_piece(path, media.start, min(media.end, media.start + VIDEO_MAX_S))


def video_piece(path: Path, start: float, end: float) -> bytes:
    """``path`` from ``start`` to ``end`` seconds as a silent H.264 MP4, 1 fps, <= 640 px wide."""
    if shutil.which("ffmpeg") is None:
        raise GeminiError("recordings need ffmpeg (apt install ffmpeg)")
    from recall.privacy.children import unnamed

    with tempfile.TemporaryDirectory(prefix="recall-piece-") as tmp, unnamed(path) as (given, fds):
        out = Path(tmp) / "piece.mp4"
        run = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-ss", f"{start:g}", "-t", f"{end - start:g}",
                              "-i", given, "-an", "-vf", "fps=1,scale='min(640,iw)':-2", "-c:v", "libx264",
                              "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(out)],
                             capture_output=True, text=True, timeout=600, pass_fds=fds)
        if run.returncode != 0 or not out.exists():
            why = (run.stderr.strip().splitlines() or ["no output"])[-1][:100]
            raise GeminiError(f"cannot cut {path.name} at {start:g}-{end:g} s ({why})")
        return out.read_bytes()


def parse_range(location: str) -> tuple[float, float] | None:
    """"00:01:22–00:02:59" (or a merged "a–b – c–d") -> (82, 179): first start, last end."""
    import re

    stamps = re.findall(r"(\d+):(\d\d):(\d\d)", location)
    if len(stamps) < 2:
        return None
    secs = [int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in stamps]
    return float(secs[0]), float(secs[-1])
