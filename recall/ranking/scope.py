"""Which notes a question may see.

The hook's scope is the current project's memory (and its conversation titles) plus shared
rules and indexed folders; ``--repo`` names one other project; ``--all`` sees everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall.privacy.paths import project_key

SHARED_KINDS = ("rule", "dir")
LIBRARY_KIND = "library"  # recall.notes.documents.LIBRARY (not imported: the daemon's search stays light)


@dataclass(frozen=True)
class Scope:
    project: str | None = None  # current project's key: its memory + conversation titles
    repo: str | None = None  # --repo NAME: one other project (matched on its key's tail)
    everything: bool = False  # --all
    shared: bool = True  # rules and indexed folders
    library: bool = False  # mirrored repositories' docs (kind "library"): searched on request

    def admits(self, note: dict[str, Any]) -> bool:
        if self.everything:
            return True
        kind, proj = note.get("kind"), note.get("project") or ""
        if self.repo is not None:
            return kind in ("memory", "conversation") and repo_matches(proj, self.repo)
        if kind in SHARED_KINDS:
            return self.shared
        if kind == LIBRARY_KIND:
            return self.library
        return self.project is not None and proj == self.project

    @property
    def key(self) -> tuple:
        return (self.project, self.repo, self.everything, self.shared, self.library)

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
    """``--repo NAME`` as a project key spells it (recall.privacy.paths.encode_project_path)."""
    return "".join(c if c.isalnum() else "-" for c in name)


def repo_matches(project_key: str, name: str) -> bool:
    """``--repo NAME`` matches a project key (its encoded path) equal to or ending in NAME."""
    wanted = repo_key(name)
    return project_key == wanted or project_key.endswith("-" + wanted)
