"""Past conversations as a source: their titles (and dates), never their content.

Each interactive session of the project becomes a "note" of kind ``conversation``:
name = title (secrets masked), no body, the date and the title's source in ``extra``.
Titles rank beside notes but never enter the gap (``selector``). Claude Code deletes
transcripts after 30 days; with ``keep_gone`` the titles stay in the index after their
file is gone.

A title that is the user's own words (a past prompt: ``last-prompt``, ``first-prompt``) is
indexed only with ``prompts`` (config ``sources.prompt_titles``). Without it,
``purge_prompt_titles`` removes every stored title from a prompt, or of unknown source
(indexed by an older recall), of every project, and ``Recall.index`` then scrubs the
files it was in.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from recall.indexing.indexer import Indexer, SyncStats
from recall.notes.files import Note
from recall.notes.problems import Problem
from recall.notes.transcripts import PROMPT_SOURCES, read_project_titles
from recall.privacy.paths import checkout_root, encode_project_path, project_key, projects_dir
from recall.store.records import SourceRef
from recall.store.sqlite import Store


def conversations_dir(cwd: Path | str) -> Path:
    """Where Claude Code keeps the transcripts of sessions in ``cwd``'s checkout (a linked
    worktree's own folder; its titles belong to the repository, ``project_key``)."""
    return projects_dir() / encode_project_path(checkout_root(cwd))


def purge_prompt_titles(store: Store, prompts: bool) -> int:
    """Remove the stored titles that may be a past prompt (all projects, whether or not
    their transcript still exists); how many."""
    purge = [pk for source_id, kind, _root, _project in store.sources() if kind == "conversation"
             for pk, extra in store.note_extras(source_id).values()
             if extra.get("source") is None or (not prompts and extra["source"] in PROMPT_SOURCES)]
    return store.delete_notes(purge) if purge else 0


def sync_conversations(indexer: Indexer, cwd: Path | str, keep_gone: bool = True,
                       prompts: bool = False) -> SyncStats:
    """The titles of the project containing ``cwd``."""
    return sync_conversation_folder(indexer, conversations_dir(cwd), project_key(cwd),
                                    keep_gone, prompts)


def sync_conversation_folder(indexer: Indexer, folder: Path, project: str | None, keep_gone: bool = True,
                             prompts: bool = False) -> SyncStats:
    """The titles of one Claude Code project folder of transcripts."""
    stats = SyncStats()
    if not folder.is_dir():
        return stats
    titles, read = read_project_titles(folder, prompts)
    if read.malformed_lines:
        stats.problems.append(Problem(str(folder), f"{read.malformed_lines} malformed transcript lines skipped"))
    notes = [
        Note(
            id=t.session_id, path=t.path, name=t.title, description="", type="conversation", body="",
            content_hash=hashlib.sha256(f"{t.date}\0{t.source}\0{t.title}".encode()).hexdigest(),
        )
        for t in titles
    ]
    extras = {t.path: {"date": t.date, "source": t.source} for t in titles}
    indexer.sync_notes(SourceRef("conversation", str(folder), project), notes, stats,
                       extra=lambda n: extras[n.path], remove_missing=not keep_gone)
    return stats
