"""Notes an agent CLI was asked for and answered nothing for (a refusal, prose, an answer that
left them out): each is asked again on the next run, at most ``MAX_TRIES`` times in all, until
the note is edited. An outside tester's refusing CLI was sent every pending note in full at
every save and every index. The record is ``$RECALL_HOME/questions-asked.json`` (0600),
``{"<hash of the note's path>": [note hash, tries]}`` (no path in it: a folder's name may hold
a secret); one it cannot read or write costs a retry, not a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from recall.authoring import notegen
from recall.privacy.paths import make_missing_dirs, read_text, recall_home, replace_private

MAX_TRIES = 2
ASKED_FILE = "questions-asked.json"


def _key(path: Path) -> str:
    return hashlib.sha256(str(path).encode("utf-8", errors="surrogateescape")).hexdigest()[:24]


def asked() -> dict[str, list]:
    """The record: notes asked for and not answered."""
    try:
        data = json.loads(read_text(recall_home() / ASKED_FILE))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def given_up(path: Path, record: dict[str, list] | None = None) -> bool:
    """Whether ``path`` (as it is now) went unanswered ``MAX_TRIES`` times (``record``: ``asked()``)."""
    tried = (asked() if record is None else record).get(_key(path))
    try:
        return isinstance(tried, list) and len(tried) == 2 and tried[1] >= MAX_TRIES and \
            tried[0] == notegen.note_hash(path)
    except OSError:
        return False


def note_unanswered(paths: Sequence[Path], hashes: dict[str, str]) -> None:
    """Count one more unanswered request for each of ``paths`` (at the hash it was asked at)."""
    record = asked()
    for path in paths:
        h = hashes.get(path.stem)
        if h is None:
            continue
        before = record.get(_key(path))
        tries = before[1] + 1 if isinstance(before, list) and len(before) == 2 and before[0] == h else 1
        record[_key(path)] = [h, tries]
    with contextlib.suppress(OSError):  # a record it cannot keep costs a retry, not the run
        replace_private(make_missing_dirs(recall_home()) / ASKED_FILE, json.dumps(record))
