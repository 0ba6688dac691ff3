"""The repository a linked git worktree belongs to: Claude Code keeps one memory folder per
repository, under its main worktree's key, while a worktree's transcripts go under the
worktree's own (``claude --worktree`` makes one in ``.claude/worktrees/NAME``). recall took a
worktree for a project of its own: none of the repository's memory there (stop 49, an outside
tester's AA05).

The link is followed only when git's own records agree both ways: the worktree's ``.git`` file
names a folder in the main repository's ``.git/worktrees/``, and that folder's ``gitdir`` file
names this worktree's ``.git`` back. A checkout cannot write the second, so a cloned repository
whose ``.git`` file claims another repository cannot take that one's memory. Files only (no
``git`` run: the daemon walks this for a message's folder), each read without blocking.
"""

from __future__ import annotations

from pathlib import Path

from recall.privacy.regular import read_regular

MAX_BYTES = 4096  # a .git, gitdir or commondir file is one line


def _line(path: Path) -> str | None:
    """The one line of a git record; None for anything else. Through recall's one open: a
    ``gitdir`` or ``commondir`` that is a named pipe (a folder unpacked from an archive) held a
    daemon thread in ``open()`` for ever, and the stopped daemon with it (an outside tester's AG04)."""
    try:
        data, _size = read_regular(path, MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_BYTES:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def main_worktree(root: Path) -> Path:
    """The main worktree of the repository whose linked worktree is ``root`` (a resolved
    folder holding a ``.git`` file); ``root`` itself for anything else."""
    dot_git = root / ".git"
    if not dot_git.is_file():
        return root
    line = _line(dot_git)
    if line is None or not line.startswith("gitdir:"):
        return root
    try:
        gitdir = (root / line[len("gitdir:"):].strip()).resolve()
        common_line = _line(gitdir / "commondir")
        back = _line(gitdir / "gitdir")
        if common_line is None or back is None:  # a submodule's folder has neither: its own project
            return root
        common = (gitdir / common_line).resolve()
        if gitdir.parent != common / "worktrees" or common.name != ".git":
            return root
        if (gitdir / back).resolve() != dot_git.resolve():  # the main repository does not list it
            return root
        return common.parent
    except (OSError, ValueError, RuntimeError):
        return root
