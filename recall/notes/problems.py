"""Problems with a user's files: one line each, masked as they are made, and capped so that a
folder of thousands of bad files or a file of thousands of bad lines is a few lines of output."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall.privacy.masking import mask_path, mask_secrets
from recall.privacy.safetext import one_line, shortened


@dataclass(frozen=True)
class Problem:
    path: str
    # both masked as they are made (a problem is printed and logged, never indexed); the message cut
    # in its middle past a screen's worth (a 2 MB note name in a questions file is one line)
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", mask_path(str(self.path)))
        object.__setattr__(self, "message", shortened(mask_secrets(str(self.message))))

    def __str__(self) -> str:  # one terminal-safe line, whatever the file is called, however long its path
        return shortened(one_line(f"{self.path}: {self.message}"))


MAX_LINE_PROBLEMS = 3  # per file: beyond, one line counts the rest


def capped(problems: list[Problem], path: Path | str, keep: int = MAX_LINE_PROBLEMS) -> list[Problem]:
    """``problems`` with at most ``keep`` about single lines of ``path`` (named ``path:N``); the
    rest counted in one: a file of 100,000 lines in the wrong shape is four lines, not 100,000."""
    prefix = f"{mask_path(str(path))}:"
    per_line = [p for p in problems if p.path.startswith(prefix)]
    if len(per_line) <= keep:
        return problems
    dropped = set(map(id, per_line[keep:]))
    rest = [p for p in problems if id(p) not in dropped]
    first, last = per_line[keep].path[len(prefix):], per_line[-1].path[len(prefix):]
    return rest + [Problem(str(path), f"{len(per_line) - keep:,} more lines skipped like those "
                                      f"(lines {first} to {last}); fix them there")]


MAX_ALIKE_PROBLEMS = 3  # files with the same problem shown by name: beyond, one line counts them


def grouped(problems: list[Problem], keep: int = MAX_ALIKE_PROBLEMS) -> list[Problem]:
    """``problems`` with at most ``keep`` of each message; the rest of a message counted in one
    line: 2,000 links out of a folder are four warnings, not 2,000."""
    by: dict[str, list[Problem]] = {}
    for p in problems:
        by.setdefault(p.message, []).append(p)
    out = []
    for p in problems:
        alike = by[p.message]
        if p is alike[0]:
            out.extend(alike[:keep])
            if len(alike) > keep:
                out.append(Problem(f"{len(alike) - keep:,} more files (the last {alike[-1].path})", p.message))
    return out
