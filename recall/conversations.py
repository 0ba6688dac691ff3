"""Past conversations as a source: their titles (and dates), never their content.

Each interactive session of the project becomes a "note" of kind ``conversation``:
name = title (secrets masked), no body, the date in ``extra``. Titles rank beside notes
but never enter the gap (``selector``). Claude Code deletes transcripts after 30 days;
with ``keep_gone`` the titles stay in the index after their file is gone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .indexer import Indexer, SyncStats
from .notes import Note, Problem
from .paths import encode_project_path, project_root, projects_dir
from .transcripts import read_project_titles


def conversations_dir(cwd: Path | str) -> Path:
    return projects_dir() / encode_project_path(project_root(cwd))


def sync_conversations(indexer: Indexer, cwd: Path | str, keep_gone: bool = True) -> SyncStats:
    stats = SyncStats()
    folder = conversations_dir(cwd)
    if not folder.is_dir():
        return stats
    titles, read = read_project_titles(folder)
    if read.malformed_lines:
        stats.problems.append(Problem(str(folder), f"{read.malformed_lines} malformed transcript lines skipped"))
    notes = [
        Note(
            id=t.session_id, path=t.path, name=t.title, description="", type="conversation", body="",
            content_hash=hashlib.sha256(f"{t.date}\0{t.title}".encode()).hexdigest(),
        )
        for t in titles
    ]
    dates = {t.path: t.date for t in titles}
    source_id = indexer.store.source_id("conversation", str(folder), encode_project_path(project_root(cwd)))
    indexer.sync_notes(source_id, notes, stats, extra=lambda n: {"date": dates[n.path]},
                       remove_missing=not keep_gone)
    return stats
