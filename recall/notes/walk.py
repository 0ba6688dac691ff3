"""Which folders a walk of a note folder goes into: not hidden ones, not ``SKIPPED_DIRS``, and
not Claude Code's projects folder below it (``agents_projects``): each project's memory there is
that project's own.
"""

from __future__ import annotations

import os
from pathlib import Path

# Folders of installed packages, not of notes (a package's README.md is no note of the user's):
# skipped by notes and documents alike (``recall.notes.documents``), as hidden folders are.
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})


def agents_projects(root: Path) -> str | None:
    """Claude Code's projects folder (each project's memory and transcripts), real path, when
    ``root`` is a folder above it: a walk of ``root`` leaves it out. Each memory folder there is
    its own project's, private to it: a rules folder of ``~/.claude`` (where the global
    ``CLAUDE.md`` and ``rules/`` are) made every project's memory a rule, handed over in every
    project and pushed to the team (stop 49, an outside tester's AA02, AA03)."""
    from recall.privacy.paths import projects_dir

    projects = os.path.realpath(projects_dir())
    real = os.path.realpath(root)
    return projects if Path(projects).is_relative_to(real) and projects != real else None


def subfolders(dirpath: str, dirnames: list[str], leave_out: str | None) -> list[str]:
    """The subfolders of ``dirpath`` a walk goes into, sorted: not hidden, not ``SKIPPED_DIRS``,
    not ``leave_out`` (``agents_projects``)."""
    return sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS
                  and (leave_out is None or os.path.realpath(os.path.join(dirpath, d)) != leave_out))


def walked_into(root: Path, path: Path) -> bool:
    """Whether a walk of ``root`` reaches ``path`` (the watcher's filter): no hidden or skipped
    folder on the way, nor Claude Code's projects folder below ``root``."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if any(p.startswith(".") or p in SKIPPED_DIRS for p in rel.parts[:-1]) or rel.name.startswith("."):
        return False
    leave_out = agents_projects(root)
    return leave_out is None or not Path(os.path.realpath(path)).is_relative_to(leave_out)
