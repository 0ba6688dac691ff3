"""Which notes a question may see.

The hook's scope is the current project's memory (and its conversation titles; a memory folder
the user's settings give every project, ``EVERY_PROJECT``, too) plus shared rules and indexed
folders; ``--repo`` names one other project; ``--all`` sees everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from recall.privacy.paths import EVERY_PROJECT, claude_key, project_key

SHARED_KINDS = ("rule", "dir")
LIBRARY_KIND = "library"  # recall.notes.documents.LIBRARY (not imported: the daemon's search stays light)


@dataclass(frozen=True)
class Scope:
    project: str | None = None  # current project's key: its memory + conversation titles
    repo: str | None = None  # --repo NAME: one other project (matched on its key's tail)
    everything: bool = False  # --all
    shared: bool = True  # rules and indexed folders
    library: bool = False  # mirrored repositories' docs (kind "library"): searched on request
    # --repo NAME where folder names are known (``with_names``): the keys named NAME, and every named key
    repo_exact: frozenset[str] = frozenset()
    repo_named: frozenset[str] = frozenset()

    def admits(self, note: dict[str, Any]) -> bool:
        if self.everything:
            return True
        kind, proj = note.get("kind"), note.get("project") or ""
        if self.repo is not None:
            return kind in ("memory", "conversation") and (
                proj in self.repo_exact or (proj not in self.repo_named and repo_matches(proj, self.repo)))
        if kind in SHARED_KINDS:
            return self.shared
        if kind == LIBRARY_KIND:
            return self.library
        return self.project is not None and (proj == self.project or (kind == "memory" and proj == EVERY_PROJECT))

    @property
    def key(self) -> tuple:
        return (self.project, self.repo, self.everything, self.shared, self.library, self.repo_exact,
                self.repo_named)

    def with_names(self, names: Mapping[str, str], wanted: str | None = None) -> Scope:
        """``--repo NAME`` matched on the folder name each project was indexed from (``names``:
        key -> its folder's name, ``recall.indexing.known.project_names``): `api` no longer finds
        `web-api`, nor `inner` miss `alpha/inner` (a key cannot tell them apart). A project
        whose name is not known yet is matched on its key's tail, as before. ``wanted``: NAME as
        ``names`` spell it (masked), if not as given."""
        if self.repo is None:
            return self
        wanted = self.repo if wanted is None else wanted
        return replace(self, repo_exact=frozenset(k for k, name in names.items() if name == wanted),
                       repo_named=frozenset(names))

    @classmethod
    def from_flags(cls, cwd: Path | str, repo: str | None = None, everything: bool = False,
                   library: bool = False) -> Scope:
        """What ``--all``, ``--repo NAME`` or neither ask for: every note; one other project's
        notes and titles; or the project at ``cwd`` (its memory and titles) with the shared
        rules and folders (and the library folders with ``library``)."""
        if everything:
            return cls(everything=True)
        if repo:
            return cls(repo=repo, shared=False)
        return cls(project=project_key(cwd), library=library)


def repo_key(name: str) -> str:
    """``--repo NAME`` as a project key spells it (Claude Code's: ``café`` is ``caf-``)."""
    return claude_key(name)


def repo_matches(project_key: str, name: str) -> bool:
    """``--repo NAME`` matches a project key (its encoded path) equal to or ending in NAME."""
    wanted = repo_key(name)
    return project_key == wanted or project_key.endswith("-" + wanted)
