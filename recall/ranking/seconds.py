"""A note with questions of its own, ordered by its best rows together (``[search] best_rows``)
and by its prototype, the mean of its questions (``[search] prototype_weight``, ``blended``).

A note with questions has many rows (its text's chunks, its questions, its restatements); a
message that one of them happens to echo lifted that note as high as a message that several of
them answer. The order's dense side takes the mean of such a note's ``best_rows`` best rows.
A note without questions keeps its best (its few chunks say different things: in a folder
where half the notes had questions, the mean ranked those without them lower;
docs/decision.md). A message near all of a note's questions at once, none word for word, is
near its prototype: the order blends the two (a header, for a note without questions, is blended
the same way). Only the order: whether to speak stays the best rows' call, so the thresholds and
their calibration hold for any number and weight (``recall.ranking.search``).
"""

from __future__ import annotations

from typing import Any


def blended(dense: Any, per_note: Any, qv: Any, weight: float, among: Any = None) -> Any:
    """``dense`` with each found note that has a row in ``per_note`` (a vector per note, zeros
    where none: its header, its prototype) and is ``among`` (a mask over the notes; None: all)
    given ``(1 - weight) * dense + weight * cosine`` of that row and the message ``qv``."""
    import numpy as np

    if per_note is None or weight <= 0:
        return dense
    found = np.flatnonzero(np.isfinite(dense))
    rows = per_note[found]
    has = rows.any(axis=1) if among is None else rows.any(axis=1) & among[found]
    out = dense.copy()
    out[found[has]] = (1 - weight) * dense[found[has]] + weight * (rows[has] @ qv[0])
    return out


def with_best_rows(dense: Any, chunk_note: Any, counts: Any, scanned: Any, rows: int, asked: Any) -> Any:
    """``dense`` (note position -> best row's score, -inf where not found) with each found note
    with questions (``asked``, a mask over the notes) given the mean of its ``rows`` best rows.
    ``chunk_note``: each row's note; ``counts``: each note's rows in the index (its bincount).
    ``scanned``: the scan whose first row gave ``dense`` (scores, ids best first, whether it
    held every row in scope). A row the scan did not reach counts as the scan's lowest score,
    the most it can be; a note with fewer rows in the index is the mean of those it has."""
    import numpy as np

    if scanned is None or rows <= 1:
        return dense
    scores, ids, _complete = scanned
    keep = ids[0] >= 0
    found_rows, values = ids[0][keep], scores[0][keep]
    if not len(found_rows):
        return dense
    notes = chunk_note[found_rows]
    order = np.argsort(notes, kind="stable")  # each note's rows, best first (the scan's order)
    starts = np.flatnonzero(np.r_[True, np.diff(notes[order]) != 0])
    place = np.empty(len(notes), dtype=np.int64)
    place[order] = np.arange(len(notes)) - np.repeat(starts, np.diff(np.r_[starts, len(notes)]))
    top = place < rows
    n = len(dense)
    total = np.bincount(notes[top], weights=values[top], minlength=n)
    seen = np.bincount(notes[top], minlength=n)
    want = np.minimum(counts, rows)  # a note with fewer rows: all of them
    mean = (total + (want - seen) * float(values[-1])) / np.maximum(want, 1)
    use = np.isfinite(dense) & np.asarray(asked, dtype=bool) & (want > 1)
    out = dense.copy()
    out[use] = np.minimum(mean[use], dense[use])
    return out
