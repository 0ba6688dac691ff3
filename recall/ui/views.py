"""What the pages show, read from the files recall already keeps: the store (notes and
chunks), the daemon's injection log, an optional reads log, evaluation reports, the
config and the daemon's status. Nothing here loads a model or writes a file.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall.agents import track
from recall.agents.track import query_events
from recall.api import Recall
from recall.privacy.masking import mask_path

# How a source kind reads on the page, in the order of the tabs.
SOURCE_LABELS = {
    "memory": "project memory",
    "rule": "shared rules",
    "dir": "other folders",
    "conversation": "conversation titles",
    "library": "libraries (on request)",
    "team": "team",
}
NOTES_SHOWN = 500  # rows of the notes table; the count says how many matched
TIMELINE_SHOWN = 200  # injections listed, newest first


def origin_words(origin: str) -> str:
    """Where a config value came from, as the page says it."""
    return "packaged defaults (recall/config/default_config.toml)" if origin == "packaged" else origin


# --- time in words -------------------------------------------------------------------


def ago(ts: float | None, now: float | None = None) -> str:
    if not ts:
        return "never"
    s = max(0.0, (now or time.time()) - ts)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= size:
            n = int(s // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def since(ts: float | None, now: float | None = None) -> str:
    """How long since ``ts``, as in "up for 3 hours"."""
    text = ago(ts, now)
    return "less than a minute" if text == "just now" else text.removesuffix(" ago")


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


# --- notes ---------------------------------------------------------------------------


# What a note is, as the "what" filter offers it: a note's type is one of the note types
# (or none); recall.notes.documents sets document, image or recording.
FILE_TYPES = ("note", "document", "image", "recording")


def file_type(row: Any) -> str:
    return row.type if row.type in FILE_TYPES[1:] else "note"


def notes(app: Recall, kind: str = "", q: str = "", project: str = "", what: str = "") -> dict[str, Any]:
    rows = app.store.notes()
    counts = Counter(r.kind for r in rows)
    types = Counter(file_type(r) for r in rows)
    projects = sorted({r.project for r in rows if r.project})
    words = q.lower().split()
    picked = [r for r in rows if (not kind or r.kind == kind) and (not project or r.project == project)
              and (not what or file_type(r) == what)
              and all(w in f"{r.name} {r.description} {r.path} {r.note_id}".lower() for w in words)]
    injected = injection_counts(app)
    return {"rows": picked[:NOTES_SHOWN], "matched": len(picked), "total": len(rows), "counts": counts,
            "projects": projects, "injected": injected, "kind": kind, "q": q, "project": project,
            "types": types, "what": what}


def note_page(app: Recall, pk: int) -> dict[str, Any] | None:
    row = next((r for r in app.store.notes() if r.pk == pk), None)
    if row is None:
        return None
    detail = app.store.note_detail(pk) or {"chunks": [], "mtime": None, "indexed_at": None}
    chunks = [t for role, t in detail["chunks"] if role == "text"]
    questions = [t for role, t in detail["chunks"] if role == "question"]
    log = read_injection_log(app)
    # a document's page, slide, sheet or section per chunk; a recording's time range (its piece)
    locations = list(row.extra.get("locations") or [])
    return {"row": row, "chunks": chunks, "questions": questions, "what": file_type(row),
            "locations": locations + [""] * (len(chunks) - len(locations)), "format": row.extra.get("format"),
            "negatives": negatives_of(Path(row.root)), "folder": mask_path(row.root),
            "indexed_at": detail["indexed_at"], "mtime": detail["mtime"],
            "injected": log.per_note.get(row.note_id, 0), "opened": read_reads_log(app).get(row.note_id),
            "last": [e for e in log.injections if row.note_id in e["ids"]][:10]}


def negatives_of(root: Path) -> list[str]:
    """A notes folder's known unrelated messages as calibration reads them: its ``negatives.jsonl``
    through ``recall.ranking.negatives.read_negatives_file`` (a ``{"text": ...}`` per line, cut and
    masked as the core keeps them; a line it skips is not shown), each once."""
    from recall.notes.questions import NEGATIVES_FILE
    from recall.ranking.negatives import read_negatives_file

    path = root / NEGATIVES_FILE
    if not path.is_file():  # as recall.ranking.negatives.collect: none there
        return []
    found, _problems = read_negatives_file(path)
    return list(dict.fromkeys(n.text for n in found))


# --- the injection log ---------------------------------------------------------------


@dataclass
class InjectionLog:
    injections: list[dict] = field(default_factory=list)  # newest first
    per_note: Counter = field(default_factory=Counter)
    messages: int = 0  # questions the hook asked
    silent: int = 0
    per_day: dict[str, tuple[int, int]] = field(default_factory=dict)  # day -> (injected, silent)


def read_injection_log(app: Recall) -> InjectionLog:
    """The daemon's ``query`` events (what ``recall log`` shows): decision, notes, scores,
    bytes and project; the log never holds the message. An answer that never reached the agent
    (late, or the hook could not write it: ``recall.agents.track.query_events``) is silence."""
    out = InjectionLog()
    days: dict[str, list[int]] = {}
    for stamp, ev in query_events(app.home):
        out.messages += 1
        day = stamp[:10]
        tally = days.setdefault(day, [0, 0])
        chosen = ev["chosen"]
        if ev.get("decision") in (None, "nothing") or not chosen or not ev["reached"]:  # never reached the agent
            out.silent += 1
            tally[1] += 1
            continue
        tally[0] += 1
        ids = [c["id"] for c in chosen]
        out.per_note.update(ids)
        project = ev.get("project")
        out.injections.append({"time": stamp, "project": project if isinstance(project, str) else "",
                               "ids": ids, "scores": [_number(c.get("score")) for c in chosen],
                               "decision": str(ev.get("decision")), "bytes": _number(ev.get("bytes")),
                               "gap": _number(ev.get("gap")), "top": _number(ev.get("top"))})
    out.injections.reverse()
    out.per_day = {d: (v[0], v[1]) for d, v in sorted(days.items())}
    return out


def _number(value: object) -> float | None:
    """A number the log holds, or None (a damaged or hand-edited line's string, list, ...)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def injection_counts(app: Recall) -> Counter:
    return read_injection_log(app).per_note


def read_reads_log(app: Recall) -> Counter:
    """Per note id, the injections the agent then opened it after (the opt-in PostToolUse
    tracker's ``logs/reads.jsonl``, read as ``recall log --stats`` reads it); empty when off."""
    return Counter(track.opened(app.home))


def reads_log_exists(app: Recall) -> bool:
    return any(path.is_file() for path in track.read_logs(app.home))


# --- status --------------------------------------------------------------------------


def status(app: Recall) -> dict[str, Any]:
    """``Recall.status()`` (model, counts, index runs, the indexes that cannot be loaded, an index
    running) in the page's words, with the daemon's and the watcher's state."""
    from recall.indexing.progress import describe
    from recall.ipc import client

    st = app.status()
    runs = {m: (g, t, c) for m, g, t, c in st.runs}
    built = runs.get(st.model["model_id"])
    daemon = client.daemon_status()
    watch_on = app.config.watch.enabled
    return {
        "indexing": describe(st.indexing) if st.indexing else None,
        "indexing_running": bool(st.indexing and st.indexing["running"]),
        "home": str(st.home), "model": st.model, "counts": st.counts, "problems": st.problems,
        "index_built": built[1] if built else None, "index_chunks": built[2] if built else 0,
        "daemon": daemon, "watch_enabled": watch_on, "watcher_running": watch_on and daemon.get("running", False),
        "device": daemon.get("device") or "",
    }


def questions(app: Recall) -> dict[str, Any]:
    """Whether an agent CLI may write the notes' questions, and what the indexed folders' new or
    changed notes would cost (recall.authoring.agentcli): shown before the page's "allow" button."""
    from recall.authoring.agentcli import consented, describe, find_agent, indexed_sources, plan
    from recall.privacy.paths import os_error_line

    q = app.config.questions
    agent = find_agent(q.generate, q.model)
    out = {"generate": q.generate, "allowed": consented(q.generate), "agent": agent.name if agent else ""}
    try:
        states, cost = plan(indexed_sources(app), q.batch_notes)
    except OSError as exc:  # a note that cannot be read: said, not the page's end
        return out | {"pending": 0, "line": f"the cost could not be estimated: {os_error_line(exc)}"}
    pending, back = sum(len(s.pending) for s in states), sum(len(s.bought) for s in states)
    return out | {"pending": pending, "line": describe(cost, pending, agent, back) if pending or back else ""}
