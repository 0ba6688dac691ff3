"""What an agent CLI wrote for a note's exact text, kept so that it is never bought twice.

A run drops the generated line of a note no longer in its folder (``notegen.write_questions``):
a `git checkout` of a branch without some notes and back, an edit reverted, a note moved to
another folder or project, and the agent was paid again for text it had answered already. Every
generated line a run writes, and every one that leaves a folder's file, is kept here by the
note's hash (its bytes, ``notegen.note_hash``) and the prompts' hash (a changed prompt asks
again): a pending note whose text is known gets its line back with no request
(``notegen.FolderState.bought``), and the cost shown counts it free. The agent is not part of
the key, as it is no part of what makes a folder's line stale: a note answered by one agent is
not asked of the next (the line keeps its ``by``).

The file: ``$RECALL_HOME/questions-bought.json`` (0600), ``{"<note hash>:<prompts hash>":
{"questions": [...], "restatements": [...], "by": agent, "at": when last used}}``, masked as the
folder's file is (``mask_secrets``); no path, no note's text. Bounded two ways: an entry unused
(written, left a folder or given back) for ``KEEP_DAYS`` days goes (a branch left longer than a
quarter is as likely rewritten as come back), and at most ``KEEP`` entries are kept, the least
recently used going first (about 1.5 KB each: the file stays under ~8 MB, read once per run).
A file it cannot read (damaged) costs a request, said once (``damage_line``), never a run; one it
cannot write keeps nothing.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from recall.privacy.masking import mask_secrets
from recall.privacy.paths import make_missing_dirs, read_text, recall_home, replace_private

BOUGHT_FILE = "questions-bought.json"
KEEP = 5_000
KEEP_DAYS = 90

_cache: dict[str, tuple[tuple[int, int], dict[str, dict]]] = {}  # file -> ((mtime_ns, size), entries)
_damaged: list[str] = []  # the line saying the file could not be read, until said


def _path() -> Path:
    return recall_home() / BOUGHT_FILE


def _entry(value: object) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("questions"), list) and value["questions"]
            and all(isinstance(q, str) for q in value["questions"])
            and all(isinstance(r, str) for r in value.get("restatements", []) or [])
            and isinstance(value.get("by", ""), str) and isinstance(value.get("at", 0), int | float))


def _load() -> dict[str, dict]:
    path = _path()
    try:
        st = path.stat()
    except OSError:
        return {}  # none yet
    sig = (st.st_mtime_ns, st.st_size)
    if (cached := _cache.get(str(path))) is not None and cached[0] == sig:
        return cached[1]
    try:
        data = json.loads(read_text(path, errors="replace"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as exc:
        _damaged[:] = [f"{path} could not be read ({exc.__class__.__name__}): the notes it held are asked for "
                       "again, and it is written anew"]
        _cache[str(path)] = (sig, {})  # said once for these bytes
        return {}
    entries = {k: v for k, v in data.items() if isinstance(k, str) and _entry(v)}
    _cache[str(path)] = (sig, entries)
    return entries


def damage_line() -> str | None:
    """The one line saying the file was damaged, the first time it is asked for after that."""
    return _damaged.pop() if _damaged else None


def _key(digest: str, prompts: str) -> str:
    return f"{digest}:{prompts}"


def known(digests: Iterable[str], prompts: str) -> dict[str, dict]:
    """``{note hash: {"questions", "restatements", "by"}}`` for each of ``digests`` answered before
    under these prompts."""
    entries = _load()
    return {d: entries[_key(d, prompts)] for d in digests if _key(d, prompts) in entries}


def keep(answers: Mapping[str, tuple[list[str], list[str], str]], prompts: str) -> None:
    """Keep each note hash's (questions, restatements, by), masked, and mark them used now;
    entries past ``KEEP_DAYS`` unused, or past ``KEEP``, go."""
    if not answers:
        return
    now = time.time()
    entries = {k: v for k, v in _load().items() if now - v.get("at", 0) < KEEP_DAYS * 86_400}
    for digest, (questions, restated, by) in answers.items():
        if questions:
            entries[_key(digest, prompts)] = {"questions": [mask_secrets(q) for q in questions],
                                              "restatements": [mask_secrets(r) for r in restated], "by": by, "at": now}
    if len(entries) > KEEP:
        entries = dict(sorted(entries.items(), key=lambda kv: kv[1].get("at", 0))[-KEEP:])
    with contextlib.suppress(OSError):  # not kept: a note that comes back is asked for again, as before
        replace_private(make_missing_dirs(recall_home()) / BOUGHT_FILE, json.dumps(entries, ensure_ascii=False))
    _cache.pop(str(_path()), None)


def used(digests: Iterable[str], prompts: str) -> None:
    """Mark these notes' answers used now (given back to a folder): ``keep`` them again."""
    got = known(digests, prompts)
    keep({d: (e["questions"], e.get("restatements") or [], e.get("by", "")) for d, e in got.items()}, prompts)


def keep_lines(lines: Iterable[Mapping], prompts: str) -> None:
    """``keep`` a folder's generated lines (``{"note_hash", "questions", "restatements", "by"}``)
    written or dropped; a line with no questions, or that no longer reads as one, is passed over."""
    answers: dict[str, tuple[list[str], list[str], str]] = {}
    for line in lines:
        digest, questions, restated = line.get("note_hash"), line.get("questions"), line.get("restatements") or []
        if isinstance(digest, str) and isinstance(questions, list) and isinstance(restated, list) and _entry(
                {"questions": questions, "restatements": restated}):
            answers[digest] = (questions, restated, str(line.get("by", "")))
    keep(answers, prompts)
