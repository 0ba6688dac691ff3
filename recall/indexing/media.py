"""A screenshot's or recording's chunks embedded with the picture or video itself, for a
cloud multimodal embedder (``recall.embedding.gemini``, ``[gemini] media = true``); used by the
indexer's write path (``recall.indexing.indexer``)."""

from __future__ import annotations

from recall.embedding.models import Embedder
from recall.notes.files import Note
from recall.privacy.masking import mask_secrets
from recall.store.records import Chunk, NoteRecord, text_hash

MEDIA_TYPES = ("image", "recording")
MEDIA_SALT = ":media1"  # in the fingerprint of an image or recording embedded with its media


def media_embedder(embedder: Embedder):
    """The embedder's ``embed_media`` (recall.embedding.gemini, with [gemini] media on), else None."""
    inner = getattr(embedder, "inner", embedder)  # the daemon's QueryBatcher wraps the model
    settings = getattr(inner, "settings", None)
    return getattr(inner, "embed_media", None) if getattr(settings, "media", False) else None


def media_of(note: Note, record: NoteRecord, chunks: list[Chunk]) -> tuple[list[Chunk], dict]:
    """An image's or recording's text chunks keyed by their media too, and hash -> ``Media``.

    A chunk's hash then covers the file's bytes and its time range as well as its text (a
    picture that changed but reads the same is embedded again). A chunk whose OCR text held
    a secret gets no media: the picture would show what the masked text hides."""
    from recall.embedding.gemini import Media, parse_range

    tainted = [parse_range(loc) or (0.0, float("inf")) for loc, text in note.segments or []
               if mask_secrets(text) != text]
    media: dict[str, Media] = {}
    out = list(chunks)
    for i, loc in enumerate(record.extra.get("locations") or [""]):
        if i >= len(out) or out[i].role != "text":
            break
        span = parse_range(loc) if note.type == "recording" else None
        if note.type == "recording" and span is None:  # a recording without text: its first piece
            span = (0.0, 97.0)
        if any(span is None or (a < span[1] and span[0] < b) for a, b in tainted):
            continue
        h = text_hash(f"{out[i].text}\0media:{note.content_hash}:{loc}")
        out[i] = Chunk(out[i].text, h, "text")
        media[h] = Media(note.path, note.type, *(span or (0.0, 0.0)))
    return out, media
