"""Notes an agent CLI was asked for and answered nothing for (a refusal, prose, an answer that
left them out): each is asked again on the next run, at most ``MAX_TRIES`` times in all, until
the note is edited. A folder's negatives likewise: asked again while the folder has none, at
most ``MAX_TRIES`` times until a note is added or removed. An outside tester's refusing CLI
was sent every pending note in full at every save and every index. The record is
``$RECALL_HOME/questions-asked.json`` (0600), ``{"<hash of a path>": [hash, tries]}`` (no path
in it: a folder's name may hold a secret); one it cannot read or write costs a retry, not a run.

An agent that did not get to answer (``AgentError.transient``: it exited with an error, as when
rate-limited or logged out, or could not start) costs no note a try: two such runs gave up every
note for good (an outside tester's AD02). Runs in the background wait it out instead
(``unreachable``: 15 minutes, doubled after each failure in a row, at most a day); a run the user
starts (`recall questions run`) asks at once, the notes given up before included (``forget``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from recall.authoring import notegen
from recall.privacy.paths import make_missing_dirs, read_text, recall_home, replace_private

MAX_TRIES = 2
ASKED_FILE = "questions-asked.json"
SPLIT = "split:"  # the record's key before a path's: [its hash, the most notes it is asked with] after a timeout
UNREACHABLE = "unreachable"  # the record's key: [when the agent last failed to answer, failures in a row]
WAIT_S, WAIT_MAX_S = 15 * 60.0, 24 * 3600.0


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
    try:
        return _given_up(_key(path), notegen.note_hash(path), record)
    except OSError:
        return False


def negatives_given_up(state: notegen.FolderState, record: dict[str, list] | None = None) -> bool:
    """Whether the negatives owed to ``state``'s folder (``FolderState.owes_negatives``) were
    asked for ``MAX_TRIES`` times with nothing back since its notes were last added or removed."""
    return _given_up(_key(state.folder / notegen.NEGATIVES_FILE), _notes_digest(state), record)


def note_unanswered(asked_at: dict[Path, str]) -> None:
    """Count one more unanswered request for each note (at the hash it was asked at)."""
    _count({_key(path): digest for path, digest in asked_at.items()})


def negatives_unanswered(state: notegen.FolderState) -> None:
    """Count one more negatives request for ``state``'s folder that brought none."""
    _count({_key(state.folder / notegen.NEGATIVES_FILE): _notes_digest(state)})


def negatives_answered(state: notegen.FolderState) -> None:
    """Forget the failed negatives requests of ``state``'s folder: it has its negatives."""
    record = asked()
    if record.pop(_key(state.folder / notegen.NEGATIVES_FILE), None) is not None:
        _keep(record)


def _notes_digest(state: notegen.FolderState) -> str:
    return hashlib.sha256("\n".join(sorted(p.name for p in state.notes)).encode("utf-8", "surrogateescape")
                          ).hexdigest()[:16]


def _given_up(key: str, digest: str, record: dict[str, list] | None) -> bool:
    tried = (asked() if record is None else record).get(key)
    return isinstance(tried, list) and len(tried) == 2 and tried[1] >= MAX_TRIES and tried[0] == digest


def _count(at: dict[str, str]) -> None:
    record = asked()
    for key, h in at.items():
        before = record.get(key)
        tries = before[1] + 1 if isinstance(before, list) and len(before) == 2 and before[0] == h else 1
        record[key] = [h, tries]
    _keep(record)


def _keep(record: dict[str, list]) -> None:
    with contextlib.suppress(OSError):  # a record it cannot keep costs a retry, not the run
        replace_private(make_missing_dirs(recall_home()) / ASKED_FILE, json.dumps(record))


def split(asked_at: dict[Path, str], most: int) -> None:
    """Ask these notes (at these hashes) in batches of at most ``most`` from now on: a batch with
    them timed out (``agentcli._ask_all``); no try is counted."""
    record = asked()
    record.update({SPLIT + _key(path): [digest, most] for path, digest in asked_at.items()})
    _keep(record)


def batch_limits(asked_at: dict[Path, str]) -> dict[Path, int]:
    """The most notes each of these notes (at these hashes) is asked with (``split``), where limited."""
    record = asked()
    out = {}
    for path, digest in asked_at.items():
        got = record.get(SPLIT + _key(path))
        if isinstance(got, list) and len(got) == 2 and got[0] == digest and isinstance(got[1], int) and got[1] > 0:
            out[path] = got[1]
    return out


def unreachable() -> None:
    """Record a run whose agent did not get to answer (``AgentError.transient``)."""
    import time

    record = asked()
    before = record.get(UNREACHABLE)
    failures = before[1] + 1 if isinstance(before, list) and len(before) == 2 and isinstance(before[1], int) else 1
    record[UNREACHABLE] = [time.time(), failures]
    _keep(record)


def reachable() -> None:
    """The agent answered: background runs no longer wait."""
    record = asked()
    if record.pop(UNREACHABLE, None) is not None:
        _keep(record)


def waiting() -> tuple[float, int]:
    """(seconds a background run still waits, failures in a row) after runs whose agent did not
    get to answer; (0, 0) when it may ask."""
    import time

    got = asked().get(UNREACHABLE)
    if not (isinstance(got, list) and len(got) == 2 and all(isinstance(v, int | float) for v in got)):
        return 0.0, 0
    when, failures = float(got[0]), int(got[1])
    left = when + min(WAIT_S * 2 ** min(max(failures - 1, 0), 16), WAIT_MAX_S) - time.time()
    return (left, failures) if left > 0 else (0.0, failures)


def forget() -> int:
    """A run the user asked for: every note and folder given up is asked again, and nothing is
    waited out; how many records there were."""
    record = asked()
    splits = {k: v for k, v in record.items() if k.startswith(SPLIT)}  # not given up: kept
    if len(record) > len(splits):
        _keep(splits)
    return len([k for k in record if k != UNREACHABLE and k not in splits])
