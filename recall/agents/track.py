"""Did the agent use it? An opt-in ``PostToolUse`` hook on Claude Code's ``Read`` tool.

``recall install --track-reads`` registers, next to the prompt hook:

    {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": "<python>", "args": ["-E", "-P", "-m", "recall.agents.track"], "timeout": 5}]}]}}

For each file the agent reads, this looks the path up among the indexed notes (SQLite,
read-only) and, when recall injected that note within ``INJECTED_WITHIN_S`` before (the
daemon's log says which notes each answer chose), appends one line to
``RECALL_HOME/logs/reads.jsonl`` (0600; past ``READS_MAX_BYTES`` it moves to ``reads.jsonl.1``):

    {"note": "<note id>", "path": "<note path>", "time": <epoch s>, "session": "<session id>",
     "injected_at": <epoch s of the latest injection before the read>}

Never the message, never the file's content. ``recall log --stats`` shows per note how often
it was injected and how often it was then opened.

Like the prompt hook: standard library only, prints nothing, always exits 0.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

if not __package__:  # run as a file: import the package from its parent folder
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:  # a half-written upgrade (a module of another release) fails here, before main()'s guard
    from recall.agents.wire import READ_WAIT_S, read_event_bytes
    from recall.privacy import coredumps
    from recall.privacy.paths import (
        DB_NAME,
        daemon_logs,
        ensure_private_dir,
        home_arg,
        private_open,
        read_text,
        recall_home,
    )
    from recall.privacy.regular import open_regular
except BaseException:  # noqa: BLE001 - run as the hook: nothing printed, exit 0 (imported: raised)
    if __name__ == "__main__":
        os._exit(0)
    raise

# A read counts as "opened after injection" when recall injected that note this long before
# (a session rarely spans more; the daemon's log holds no session ids, only times).
INJECTED_WITHIN_S = 6 * 3600
READ_TOOLS = ("Read",)
# "<date> <time>,<ms> INFO query {json}" (recall.daemon.logs: setup_logging / log_event)
_QUERY_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) INFO query (\{.*\})\s*$")
# the hook's word that it could not hand an answer over (recall.daemon.handlers: cmd_unsent)
_UNSENT_LINE = re.compile(r'^\S+ \S+ INFO unsent \{.*"ref": "([0-9a-zA-Z]{1,32})"')


READS_MAX_BYTES = 1_000_000  # past it the file moves to reads.jsonl.1 (one kept): bounded, like the daemon's log


def reads_path(home=None):
    """``logs/reads.jsonl``, where the README and the page look (it was ``usage/``; stop 48, Y-07)."""
    return (home or recall_home()) / "logs" / "reads.jsonl"


def read_logs(home=None) -> list:
    """Every file of reads, oldest first: ``usage/reads.jsonl`` (and its ``.1``), where releases up to
    stop 48 wrote them (an upgrade left them unread: "opened 0", and "install --track-reads" said to
    a user who had), then ``logs/``'s."""
    now = reads_path(home)
    former = now.parent.parent / "usage" / now.name
    return [p for f in (former, now) for p in (f.with_name(f.name + ".1"), f)]


def query_event(line: str) -> tuple[str, dict] | None:
    """A daemon log line's query event: (its time, "YYYY-MM-DD HH:MM:SS", and its fields), or None
    for any other line and a damaged one. The log is a file anyone with the account can edit, so
    its shape is checked here, once for every reader (this tracker, ``recall log --stats``, the
    page): the fields are a dict, and ``fields["chosen"]`` a list of dicts whose ``id`` is a string."""
    m = _QUERY_LINE.match(line)
    if not m:
        return None
    try:
        fields = json.loads(m.group(3))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    if not isinstance(fields, dict):
        return None
    chosen = fields.get("chosen")
    fields["chosen"] = [c for c in chosen if isinstance(c, dict) and isinstance(c.get("id"), str)] \
        if isinstance(chosen, list) else []
    fields["ms"] = int(m.group(2))
    return m.group(1), fields


def query_events(home=None):
    """Every query event of the daemon's log (``query_event``), oldest first, with
    ``fields["reached"]``: whether its answer reached the agent. It did not when the daemon answered
    after the hook gave up (``late``) or when the hook could not write it (an ``unsent`` line names
    its ``ref``: the agent closed the hook's stdout, or stopped reading). The one reader of what
    was handed over, for ``recall log --stats``, the tracker and the page."""
    events, unsent = [], set()
    for path in daemon_logs(home):
        try:
            fh = open(open_regular(path), encoding="utf-8", errors="replace")
        except OSError:
            continue
        with fh:
            for line in fh:
                if (event := query_event(line)) is not None:
                    events.append(event)
                elif " INFO unsent " in line and (m := _UNSENT_LINE.match(line)):
                    unsent.add(m.group(1))
    for stamp, fields in events:
        ref = fields.get("ref")
        fields["reached"] = not fields.get("late") and not (isinstance(ref, str) and ref in unsent)
        yield stamp, fields


def injections(home=None):
    """(epoch seconds, note id) for every note the daemon handed over and the agent got, oldest first."""
    for stamp, fields in query_events(home):
        if not fields["reached"]:  # answered after the hook gave up, or never written to the agent
            continue
        try:
            when = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + fields["ms"] / 1000
        except (ValueError, OverflowError):
            continue
        for chosen in fields["chosen"]:
            yield when, chosen["id"]


def note_for_path(path: str) -> str | None:
    """The note id of an indexed note at ``path`` (absolute, resolved), else None."""
    import sqlite3

    db = recall_home() / DB_NAME
    if not db.exists():
        return None
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
    try:
        row = con.execute("SELECT note_id FROM notes WHERE path = ? LIMIT 1", (path,)).fetchone()
    finally:
        con.close()
    return row[0] if row else None


def record(event: dict, now: float | None = None) -> dict | None:
    """Append the read to reads.jsonl when it opens a note recall injected; the record or None."""
    if event.get("tool_name") not in READ_TOOLS:
        return None
    tool_input = event.get("tool_input")
    file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(file_path, str) or not file_path:
        return None
    path = os.path.realpath(file_path)
    note = note_for_path(path)
    if note is None:
        return None
    now = time.time() if now is None else now
    latest = max((t for t, n in injections() if n == note and now - INJECTED_WITHIN_S <= t <= now + 1),
                 default=None)
    if latest is None:
        return None
    session = event.get("session_id")
    entry = {"note": note, "path": path, "time": round(now, 3),
             "session": session if isinstance(session, str) else None, "injected_at": round(latest, 3)}
    out = reads_path()
    ensure_private_dir(out.parent)
    try:
        if out.stat().st_size > READS_MAX_BYTES:
            os.replace(out, out.with_name(out.name + ".1"))
    except FileNotFoundError:
        pass
    with private_open(out, "a") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def opened(home=None, injected: list[tuple[float, str]] | None = None) -> dict[str, int]:
    """Per note, how many of its injections (``injections()``, or ``injected``) the agent then
    opened it after: each once, however often it was read (it said "injected 1, opened 4";
    stop 48, Y-02); a read of an injection the rotated daemon log no longer holds is not counted."""
    seen: set[tuple[str, float]] = set()
    for path in read_logs(home):
        try:
            lines = read_text(path, errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict) and isinstance(entry.get("note"), str) \
                    and isinstance(entry.get("injected_at"), int | float):
                seen.add((entry["note"], round(float(entry["injected_at"]), 3)))
    shown = {(n, round(t, 3)) for t, n in (injections(home) if injected is None else injected)}
    out: dict[str, int] = {}
    for note, _ in seen & shown:
        out[note] = out.get(note, 0) + 1
    return out


def stats() -> list[dict]:
    """Per note: times injected (daemon log), injections then opened (reads.jsonl)."""
    rows: dict[str, dict] = {}
    injected = list(injections())
    for when, note in injected:
        row = rows.setdefault(note, {"note": note, "injected": 0, "opened": 0, "last_injected": None})
        row["injected"] += 1
        row["last_injected"] = when
    for note, n in opened(injected=injected).items():
        rows[note]["opened"] = n
    return sorted(rows.values(), key=lambda r: (-r["injected"], -r["opened"], r["note"]))


def main() -> None:
    try:
        coredumps.forbid()  # the event holds what the agent read: a crash must not dump it to disk
        home_arg(sys.argv[1:])  # the home install pinned (--home)
        # A Read of a huge file: drained, not parsed; a stdin never at its end: given up.
        raw = read_event_bytes(sys.stdin.buffer, time.monotonic() + READ_WAIT_S)
        event = None if raw is None else json.loads(raw.decode("utf-8"))
        if isinstance(event, dict):
            record(event)
    except BaseException:  # noqa: BLE001 - fail open: nothing printed, exit 0
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
