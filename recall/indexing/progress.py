"""An index's progress, seen from other processes: ``$RECALL_HOME/indexing.PID.json``.

Each run has a file of its own: with one file for all, a second ``recall index`` (another
terminal, a second session's refresh) overwrote the mark an interrupted one had left, and
deleted it when it ended, so the interrupted folder's notes stayed out for good (stop 47, an
outside tester). A run that ends removes its own file, and the files of interrupted runs
when it resumed them (it read every known folder). ``indexing.json``, what releases before
wrote, is read as one of them.

``Recall.index`` writes it while it embeds (``IndexProgress``: the phase, passages embedded
of those to embed, notes searchable of the notes stored) and removes it when it ends, so
``recall status``, the MCP server's ``recall_status`` and the web page's status show how
far a first index is (``read_progress``). A file left by a process that is gone is an
interrupted index: the next ``recall index`` resumes it (its notes and vectors are in the
store; only what is missing is embedded).

Phases, in order: ``notes`` (every note's text: what makes a note searchable), then
``questions`` (questions, restatements: what makes it easier to find), then ``calibrating``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from recall.privacy.paths import private_open, read_text

if TYPE_CHECKING:
    from recall.store.sqlite import Store

FILE = "indexing.json"  # the one file of releases before per-run files: still read
PATTERN = "indexing*.json"  # indexing.json and indexing.PID.json (a run's temporary file ends in .tmp)
WRITE_EVERY_S = 1.0  # the file is rewritten at most this often while a phase runs


@dataclass
class IndexProgress:
    """The state one ``Recall.index`` reports; ``listener(n, phase)`` is told of each batch
    (the CLI's progress bar), ``planner(phase, total)`` of each phase's size."""

    home: Path | None = None
    listener: Callable[[int, str], None] | None = field(default=None, repr=False)
    planner: Callable[[str, int], None] | None = field(default=None, repr=False)
    phase: str = "reading"
    embedded: int = 0  # passages embedded in this phase
    to_embed: int = 0  # passages this phase embeds
    notes: int = 0  # notes stored
    searchable: int = 0  # notes with their text in the live index
    started_at: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    pid_started: int | None = field(default_factory=lambda: process_start(os.getpid()))  # tells a reused pid
    ended: bool = False  # stopped early, by an error (its process may live on: the daemon, the page)
    resuming: bool = False  # it resumes an index that was interrupted
    _written: float = field(default=0.0, repr=False)

    @classmethod
    def opened(cls, home: Path, listener: Callable[[int, str], None] | None,
               planner: Callable[[str, int], None] | None, store: Store, model_id: str,
               resuming: bool) -> IndexProgress:
        """A run's progress, written at once, starting from the notes the index has searchable
        and stored now: a resumed index said none of the 124 searchable were, and that the index
        it was resuming would resume after it (an outside tester's AE02). The caller names the
        model first: a run refused for an unknown model name left a progress file that read as
        an interrupted index (AE04)."""
        report = cls(home, listener, planner, resuming=resuming)
        report.searchable, report.notes = store.notes_searchable(model_id), store.counts()["notes"]
        report.write(force=True)
        return report

    def begin(self, phase: str, total: int) -> None:
        self.phase, self.embedded, self.to_embed = phase, 0, total
        if self.planner:
            self.planner(phase, total)
        self.write(force=True)

    def advance(self, n: int) -> None:
        self.embedded += n
        if self.listener:
            self.listener(n, self.phase)
        self.write()

    def published(self, searchable: int, notes: int) -> None:
        self.searchable, self.notes = searchable, notes
        if self.listener:
            self.listener(0, "searchable")
        self.write(force=True)

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in ("home", "listener", "planner", "_written")}

    def write(self, force: bool = False) -> None:
        if self.home is None or (not force and time.monotonic() - self._written < WRITE_EVERY_S):
            return
        self._written = time.monotonic()
        path = self.home / f"indexing.{self.pid}.json"
        tmp = path.with_name(f"{path.name}.tmp")
        try:
            with private_open(tmp, "w") as fh:
                json.dump({**self.as_dict(), "updated_at": time.time()}, fh)
            os.replace(tmp, path)
        except OSError:  # progress is a courtesy: a full disk must not stop the index
            tmp.unlink(missing_ok=True)

    def stop(self) -> None:
        """The index ended before its end (an error, an interrupt): the file says so."""
        self.ended = True
        self.write(force=True)

    def finish(self, resumed: bool = False) -> None:
        """This run's file removed; with ``resumed`` (it read every known folder and embedded
        whatever was missing), the files of interrupted runs too: their work is done."""
        if self.home is None:
            return
        (self.home / f"indexing.{self.pid}.json").unlink(missing_ok=True)
        for left in _read_all(self.home) if resumed else ():
            if not left["running"]:
                left["_path"].unlink(missing_ok=True)


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux ``/proc/PID/stat``), None
    where that cannot be read: with the pid, it names one process, not any that reuses its pid."""
    from recall.privacy.children import stat_fields

    fields = stat_fields(pid)
    try:
        return int(fields[19]) if fields else None  # field 22 of the line
    except (IndexError, ValueError):
        return None


def _alive(pid: int, started: object = None) -> bool:
    """Whether the process that wrote the progress lives: its pid is there and, where its start
    time was kept, is the same process (an outside tester's killed index, whose pid an unrelated
    process then held, was shown as running for good and never resumed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = process_start(pid) if isinstance(started, int) else None
    return now is None or now == started


def _read_all(home: Path) -> list[dict]:
    """Every run's progress (``_path``: its file), ``running`` saying whether its process lives."""
    found = []
    for path in sorted(home.glob(PATTERN)):
        try:
            data = json.loads(read_text(path))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("pid"), int):
            data["running"] = not data.get("ended") and _alive(data["pid"], data.get("pid_started"))
            found.append({**data, "_path": path})
    return found


def read_progress(home: Path) -> dict | None:
    """The progress to show: a running index's (the latest started), else an interrupted one's,
    None when none; ``running`` says whether its process is still there."""
    runs = sorted(_read_all(home), key=lambda d: (d["running"], d.get("started_at") or 0))
    if not runs:
        return None
    shown = runs[-1]
    return {k: v for k, v in shown.items() if k != "_path"} | {"interrupted": any(not d["running"] for d in runs)}


def interrupted(home: Path) -> bool:
    """Whether an index stopped or was killed half-way, whatever runs now: the next index reads
    every known folder again, and embeds what is missing."""
    return any(not d["running"] for d in _read_all(home))


def describe(progress: dict) -> str:
    """One line for ``recall status`` and the page."""
    phase, done, total = progress.get("phase"), progress.get("embedded", 0), progress.get("to_embed", 0)
    line = (f"{phase}: {done:,} of {total:,} passages embedded; "
            f"{progress.get('searchable', 0):,} of {progress.get('notes', 0):,} notes searchable")
    if progress.get("running"):
        also = "" if not progress.get("interrupted") else "; it resumes the index that was interrupted" \
            if progress.get("resuming") else "; an earlier one was interrupted: it resumes after this one"
        return (f"indexing ({line}; pid {progress.get('pid')}, {time.time() - progress.get('started_at', 0):.0f} s"
                f"{also})")
    # Not the stopped run's counts: its last write came before what it did last (a full disk kept
    # "0 of 900 passages embedded" with all 900 written; AE02). What is searchable is in the index.
    return f"interrupted in its {phase} phase: run `recall index` to resume (it embeds only what is missing)"
