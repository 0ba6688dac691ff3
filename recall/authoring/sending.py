"""A note's text read for a prompt as the run sends it, checked as the indexer checks it then,
not at plan time: a run takes minutes, and meanwhile a note can be deleted, become a folder, or
become a link to a file outside the folder (a `git checkout` of a branch where it is one). Such a
note is left out of that request and of what the run writes, and said once
(``Sending.left_out_line``); the other notes' answers are kept (an outside tester's, stop 58)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from recall.errors import RecallError
from recall.notes.frontmatter import masked_file_text
from recall.privacy.masking import mask_path
from recall.privacy.paths import MAX_OWN_FILE
from recall.privacy.regular import NotAFile, open_regular


class LeadsOutside(RecallError, OSError):
    """A note that is now a link to something outside its folder."""


def checked_open(folder: Path, path: Path) -> int:
    """A descriptor of the note ``path`` opened only where it lies within ``folder`` now: the path
    resolved, checked, then opened without following a link at its end (``OSError`` else)."""
    real = os.path.realpath(path)
    if not Path(real).is_relative_to(os.path.realpath(folder)):
        raise LeadsOutside(f"{path} leads outside the folder")
    return open_regular(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))


def checked_text(folder: Path, path: Path) -> str:
    """``notegen.note_text`` of ``path``, read through ``checked_open``; its masking kept for the same
    text, as ``note_text`` keeps it (a run shows a note up to four times, and masking is most of it)."""
    with os.fdopen(checked_open(folder, path), "rb") as fh:
        return _masked_text(fh.read(MAX_OWN_FILE).decode("utf-8", "replace").strip())


_masked_text = functools.lru_cache(maxsize=4096)(masked_file_text)


def _why(exc: OSError) -> str:
    if isinstance(exc, LeadsOutside):
        return "now a link that leads outside the folder"
    if isinstance(exc, NotAFile):
        return f"now {exc}"
    if isinstance(exc, FileNotFoundError):
        return "deleted during the run"
    return f"unreadable now ({exc.strerror or exc})"


def _within(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix() if path.is_relative_to(folder) else str(path)


@dataclass
class Sending:
    """What a run over ``folder`` may still send: each request's notes read when it is built."""

    folder: Path
    left_out: dict[Path, str] = field(default_factory=dict)  # a note no longer sent, and why

    def read(self, paths: Sequence[Path]) -> dict[Path, str]:
        """The text of each note of ``paths`` that can be sent now; the others are left out."""
        texts: dict[Path, str] = {}
        for path in paths:
            if path in self.left_out:
                continue
            try:
                texts[path] = checked_text(self.folder, path)
            except OSError as exc:
                self.left_out[path] = _why(exc)
        return texts

    def still(self, paths: Sequence[Path]) -> list[Path]:
        """``paths`` less the notes left out, or that can no longer be sent (checked now)."""
        out = []
        for path in paths:
            if path not in self.left_out:
                try:
                    os.close(checked_open(self.folder, path))
                    out.append(path)
                except OSError as exc:
                    self.left_out[path] = _why(exc)
        return out

    def left_out_line(self) -> str | None:
        if not self.left_out:
            return None
        return (f"{len(self.left_out)} note(s) left out of this run: "
                + "; ".join(f"{mask_path(_within(p, self.folder))} ({why})" for p, why in self.left_out.items())
                + "; their answers, if any, were not kept")
