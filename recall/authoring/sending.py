"""A note's text read for a prompt as the run sends it, checked as the indexer checks it then,
not at plan time: a run takes minutes, and meanwhile a note can be deleted, become a folder, or
become a link to a file outside the folder (a `git checkout` of a branch where it is one). Such a
note is left out of that request and of what the run writes, and said once
(``Sending.left_out_line``); the other notes' answers are kept (an outside tester's, stop 58).
Also whether the folder could keep a run's answers at all (``check_writable``)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from recall.authoring.failures import AgentError
from recall.errors import RecallError
from recall.notes.frontmatter import masked_file_text
from recall.notes.questions import QUESTIONS_FILE
from recall.privacy.decoding import Binary, decode
from recall.privacy.masking import mask_path
from recall.privacy.paths import LINK_REPAIR, MAX_OWN_FILE
from recall.privacy.regular import LeftTheFolder, NotAFile, open_inside
from recall.ranking.negatives import NEGATIVES_FILE

MIN_FREE_BYTES = 4 << 20  # below this on the notes' disk, a run's answers could not be written: not asked


class LeadsOutside(RecallError, OSError):
    """A note that is now a link to something outside its folder."""


def checked_open(folder: Path, path: Path) -> int:
    """A descriptor of the note ``path`` opened only where what was opened lies within ``folder``
    (``open_inside``; ``OSError`` else). Resolving the path, then opening the resolved one without
    following a link at its end, still followed a folder on the way swapped for a link meanwhile."""
    try:
        return open_inside(path, os.path.realpath(folder))
    except LeftTheFolder:
        raise LeadsOutside(f"{path} leads outside the folder") from None


def checked_text(folder: Path, path: Path) -> str:
    """``notegen.note_text`` of ``path``, read through ``checked_open``; its masking kept for the same
    text, as ``note_text`` keeps it (a run shows a note up to four times, and masking is most of it)."""
    with os.fdopen(checked_open(folder, path), "rb") as fh:
        raw = fh.read(MAX_OWN_FILE)
    try:  # read as the index reads it (a UTF-16 note, a legacy encoding, NULs), not as UTF-8 alone
        text = decode(raw)[0]
    except Binary:
        text = ""
    return _masked_text(text.strip())


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


def check_writable(folder: Path) -> None:
    """``AgentError`` before any token is spent when the answers could not be kept (a folder
    where ``questions.jsonl`` goes, a read-only folder): each run paid for answers it then lost."""
    for name in (QUESTIONS_FILE, NEGATIVES_FILE):
        target = folder / name
        if target.is_symlink():  # writing would replace the link, with its target's lines in it
            raise AgentError(f"{target} is a link: recall writes only a file of its own there; {LINK_REPAIR}; "
                             "nothing was sent")
        if target.exists() and not target.is_file():
            raise AgentError(f"{target} is not a file recall can write: move it aside; nothing was sent")
    if not os.access(folder, os.W_OK):
        raise AgentError(f"{folder} is not writable: its questions could not be kept; nothing was sent")
    with contextlib.suppress(OSError):
        if shutil.disk_usage(folder).free < MIN_FREE_BYTES:
            raise AgentError(f"no space left on the disk of {folder}: its questions could not be kept; free some "
                             "space on it (nothing was sent)")
