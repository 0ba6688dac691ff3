"""A long message searched one sentence at a time, for the order only.

A message that opens a task ("got the billing export ticket. it writes CSVs nightly and the
numbers come out in yen...") buries the part a note is about among the rest: its one vector
is the average of all of it. Each sentence embedded on its own finds that note; the list of
notes by their best score over the sentences is fused with the whole message's order by
reciprocal rank (``[search] sentence_weight``), which needs no common score scale.

    split(...)       the pieces of a message worth searching on their own
    by_rank(...)     two orders of notes fused by reciprocal rank
    below_top(...)   the message's order with its first note kept and the rest fused

Only the order below the first note changes: whether to speak, and the scores the gate sees,
stay the whole message's (``recall.ranking.search``), so the thresholds and their calibration
hold. The first note stays: fusing it too lifted hit@1 on one dev collection and cost as much
on the other, while keeping it gave the same hit@3 gain on both and lost no injected hit
(docs/decision.md, issue #23).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The end of a sentence, or a line break. Latin punctuation ends one only before a space
# ("v1.2", "config.toml" and URLs stay whole); CJK punctuation ends one wherever it is.
_ENDS = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])\s*|\s*\n\s*")


def split(text: str, min_chars: int, most: int) -> list[str]:
    """The pieces of ``text`` cut at the ends of sentences and at line breaks, each at least
    ``min_chars`` characters once stripped, the first ``most`` of them; [] when fewer than two
    (the whole message is then its own one sentence, already searched)."""
    pieces = [p.strip() for p in _ENDS.split(text)]
    pieces = [p for p in pieces if len(p) >= min_chars][:most]
    return pieces if len(pieces) >= 2 else []


def by_rank(first: Sequence[int], second: Sequence[int], *, k: int, weight: float, n: int) -> list[int]:
    """The ``n`` best of ``first`` and ``second`` (note positions, best first) by reciprocal rank:
    a note at rank r (from 1) of ``first`` scores 1 / (k + r), of ``second`` weight / (k + r),
    summed over the lists it is in. Ties keep ``first``'s order, then ``second``'s."""
    score: dict[int, float] = {}
    for rank, note in enumerate(first, 1):
        score[note] = score.get(note, 0.0) + 1.0 / (k + rank)
    for rank, note in enumerate(second, 1):
        score[note] = score.get(note, 0.0) + weight / (k + rank)
    return sorted(score, key=lambda note: -score[note])[:n]


def below_top(order: Sequence[int], ranked: Sequence[int], *, k: int, weight: float) -> list[int]:
    """``order``'s first note, then the rest of ``order`` fused by rank with ``ranked`` (the notes
    by their best score over the sentences); as long as ``order``."""
    if not order:
        return []
    top = order[0]
    return [top, *by_rank(order[1:], [n for n in ranked if n != top], k=k, weight=weight, n=len(order) - 1)]
