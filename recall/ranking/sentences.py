"""A long message searched one sentence at a time, for the order only.

A message that opens a task ("got the billing export ticket. it writes CSVs nightly and the
numbers come out in yen...") buries the part a note is about among the rest: its one vector
is the average of all of it. Each sentence embedded on its own finds that note; the list of
notes by their best score over the sentences is fused with the whole message's order by
reciprocal rank (``[search] sentence_weight``), which needs no common score scale.

    split(...)       the pieces of a message worth searching on their own
    by_rank(...)     two orders of notes fused by reciprocal rank
    below_top(...)   the message's order with its first note kept and the rest fused
    ranked_over_rows(...)  the notes by their best score over the sentences' rows of a scan

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
    summed over the lists it is in. Ties keep ``first``'s order, then ``second``'s.

    In numpy (``second`` holds every note a sentence found, hundreds): the same sums, added in
    the same order (``first``'s share, then ``second``'s), and the same stable order a loop
    over a dict of them gives (tests/core/ranking/test_sentences.py)."""
    import numpy as np

    notes = np.concatenate([np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)])
    if not notes.size:
        return []
    shares = np.concatenate([1.0 / (k + np.arange(1, len(first) + 1)),
                             weight / (k + np.arange(1, len(second) + 1))])
    unique, seen_at, where = np.unique(notes, return_index=True, return_inverse=True)
    score = np.zeros(unique.size)
    np.add.at(score, where.reshape(-1), shares)  # in list order: first's share, then second's
    best = np.lexsort((seen_at, -score))[:n]  # by score, ties in the order the notes first came
    return unique[best].tolist()


def below_top(order: Sequence[int], ranked: Sequence[int], *, k: int, weight: float) -> list[int]:
    """``order``'s first note, then the rest of ``order`` fused by rank with ``ranked`` (the notes
    by their best score over the sentences); as long as ``order``."""
    if not order:
        return []
    top = order[0]
    import numpy as np

    rest = np.asarray(ranked, dtype=np.int64)
    return [top, *by_rank(order[1:], rest[rest != top], k=k, weight=weight, n=len(order) - 1)]


def ranked_over_rows(chunk_note, scores, ids, where: dict[int, int]) -> list[int]:
    """The notes by their best chunk's score over every row of a scan (``scores``, ``ids``), best
    first, ties in the order the notes first came (row by row, each row best first); ``where``:
    note -> that chunk (on a tie, the first row's). In numpy: a message's sentences find hundreds
    of notes, and a loop over them cost a sentence message a millisecond of the daemon's CPU
    (tests/core/ranking/test_best_chunks.py holds the loop it replaced)."""
    import numpy as np

    found_notes, found_scores, found_ids = [], [], []
    for row_scores, row_ids in zip(scores, ids, strict=True):
        keep = row_ids >= 0
        row_ids, row_scores = row_ids[keep], row_scores[keep]
        notes = chunk_note[row_ids]
        _, first = np.unique(notes, return_index=True)
        first.sort()  # each note's best chunk in this row, in rank order
        found_notes.append(notes[first])
        found_scores.append(row_scores[first])
        found_ids.append(row_ids[first])
    if not found_notes:
        return []
    notes, values, chunks = (np.concatenate(a) for a in (found_notes, found_scores, found_ids))
    if not notes.size:
        return []
    by_note = np.lexsort((np.arange(notes.size), -values, notes))  # per note: best, then earliest
    pick = by_note[np.r_[True, notes[by_note][1:] != notes[by_note][:-1]]]  # one per note, by note
    _, came = np.unique(notes, return_index=True)  # where each note first came, by note too
    chosen = pick[np.lexsort((came, -values[pick]))]
    ranked = notes[chosen].tolist()
    where.update(zip(ranked, chunks[chosen].tolist(), strict=True))
    return ranked
