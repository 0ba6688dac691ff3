"""Conversions that failed for a reason of the file's own bytes, remembered: the next index
skips the file at once and says its line again, until its bytes change.

A workbook that takes the converter past its memory cap, a damaged PDF, a zip bomb: converting
it again gives the same line. A conversion past its time limit may be the machine's doing (other
work at the time): it is tried again at the next index and remembered only once it timed out
``TIMEOUTS`` times in a row (``timed_out``; a run under load had a file skipped until it
changed). Not remembered, every ``recall index`` (the plugin's at every session start, the
watcher's) paid the cost again: an outside tester's second index with nothing changed took 235 s
and 3.9 GB. Kept by the file's ``content_key`` (a hash of its bytes, the converter's version,
the settings that change its chunks) and the limits it ran under (``convert_max_mb``,
``convert_timeout_s``: raising one, as the line says, tries again), with the one line said,
masked; never any of the document's text. ``recall index --rebuild`` forgets them all. A failure
from outside the file (the docs extra or ffmpeg missing, a file the user cannot read:
``Unavailable``, ``ImportError``, ``OSError``) is not kept: it is tried again once that is
fixed.

The file: ``$RECALL_HOME/failed-documents.json`` (0600), {key: [line, when]} (a time-out: [line,
when, times in a row]), the newest ``KEEP``.
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
TIMEOUTS = 2  # time-outs in a row before a file is skipped until it changes
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
    entries = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, list) and len(v) in (2, 3)
               and isinstance(v[0], str)} if isinstance(data, dict) else {}
    _cache[str(path)] = (sig, entries)
    return entries


def remembered(key: str) -> str | None:
    """The line a conversion of these bytes under these limits failed with, if it did."""
    entry = _load().get(key)
    if entry is None or len(entry) == 3 and not (isinstance(entry[2], int) and entry[2] >= TIMEOUTS):
        return None  # a time-out not yet twice in a row: tried again
    return entry[0]


def timed_out(key: str, line: str) -> str:
    """Count a time-out of ``key`` (``line``: what the converter's limit said); the line to say,
    with whether it is tried again at the next index or remembered."""
    before = _load().get(key)
    times = before[2] + 1 if before is not None and len(before) == 3 and isinstance(before[2], int) else 1
    if times >= TIMEOUTS:
        line = (f"{line}; timed out {times} times in a row: not tried again until the file changes (a higher "
                "convert_timeout_s or `recall index --rebuild` tries it again)")
    else:
        line = f"{line}; tried again at the next index (a time-out may be the machine's load, not the file)"
    remember(key, line, times)
    return line


def remember(key: str, line: str, timeouts: int = 0) -> None:
    """Keep ``line`` (masked) for ``key`` (``timeouts``: a time-out's, that many in a row); a home
    that cannot be written keeps nothing."""
    entries = dict(_load())
    entries[key] = [mask_secrets(line.splitlines()[0] if line else line)[:300], time.time()] + (
        [timeouts] if timeouts else [])
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
