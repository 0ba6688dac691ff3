"""Conversions that failed for a reason of the file's own bytes, remembered: the next index
skips the file at once and says its line again, until its bytes change.

A workbook that takes the converter past its time limit or its memory cap, a damaged PDF, a zip
bomb: converting it again gives the same line. Not remembered, every ``recall index`` (the
plugin's at every session start, the watcher's) paid the cost again: an outside tester's second
index with nothing changed took 235 s and 3.9 GB. Kept by the file's ``content_key`` (a hash of
its bytes, the converter's version, the settings that change its chunks) and the limits it ran
under (``convert_max_mb``, ``convert_timeout_s``: raising one, as the line says, tries again),
with the one line said, masked; never any of the document's text. ``recall index --rebuild``
forgets them all. A failure from outside the file (the docs extra or ffmpeg missing, a file the
user cannot read: ``Unavailable``, ``ImportError``, ``OSError``) is not kept: it is tried again
once that is fixed.

The file: ``$RECALL_HOME/failed-documents.json`` (0600), {key: [line, when]}, the newest
``KEEP``.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from recall.privacy.masking import mask_secrets
from recall.privacy.paths import ensure_private_dir, read_text, recall_home, replace_private

if TYPE_CHECKING:
    from pathlib import Path

    from recall.config.settings import DocumentsSettings

FAILED_FILE = "failed-documents.json"
KEEP = 2000  # failures kept at most (the oldest go first): files deleted since leave theirs behind
AGAIN = "as when last tried: the file is unchanged; `recall index --rebuild` tries it again"

_cache: dict[str, tuple[tuple[int, int], dict[str, list]]] = {}  # file -> ((mtime_ns, size), its entries)


def failure_key(key: str, opts: DocumentsSettings) -> str:
    """A file's ``content_key`` with the limits its conversion ran under."""
    return f"{key}:m{opts.convert_max_mb:g}:t{opts.convert_timeout_s:g}"


def _path() -> Path:
    return recall_home() / FAILED_FILE


def _load() -> dict[str, list]:
    path = _path()
    try:
        st = path.stat()
        sig = (st.st_mtime_ns, st.st_size)
        if (cached := _cache.get(str(path))) is not None and cached[0] == sig:
            return cached[1]
        data = json.loads(read_text(path, errors="replace"))
    except (OSError, ValueError):
        return {}  # none yet, or damaged: conversions are tried again, and the file written anew
    entries = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, list) and len(v) == 2
               and isinstance(v[0], str)} if isinstance(data, dict) else {}
    _cache[str(path)] = (sig, entries)
    return entries


def remembered(key: str) -> str | None:
    """The line a conversion of these bytes under these limits failed with, if it did."""
    entry = _load().get(key)
    return entry[0] if entry is not None else None


def remember(key: str, line: str) -> None:
    """Keep ``line`` (masked) for ``key``; a home that cannot be written keeps nothing."""
    entries = dict(_load())
    entries[key] = [mask_secrets(line.splitlines()[0] if line else line)[:300], time.time()]
    if len(entries) > KEEP:
        entries = dict(sorted(entries.items(), key=lambda kv: kv[1][1] if isinstance(kv[1][1], float) else 0)[-KEEP:])
    try:
        ensure_private_dir(recall_home())
        replace_private(_path(), json.dumps(entries))
    except OSError:
        pass  # not remembered: the next index converts it again, as before
    _cache.pop(str(_path()), None)


def forget_all() -> None:
    """``recall index --rebuild``: every failed file is tried again."""
    try:
        _path().unlink()
    except FileNotFoundError:
        pass
    _cache.pop(str(_path()), None)
