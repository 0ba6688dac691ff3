"""A note's second-best row, for the order (``[search] second_weight``).

A note with questions of its own has many rows (its text's chunks, its questions, its
restatements); a message that one of them happens to echo lifts that note as high as a
message that several of them answer. The order's dense side weighs such a note's second-best
row beside its best: ``(1 - w) * best + w * second``. A note without questions keeps its best
(its few chunks say different things: in a folder where half the notes had questions, it
ranked those without them lower; docs/decision.md). Only the order: whether to speak stays
the best rows' call, so the thresholds and their calibration hold for any weight
(``recall.ranking.search``).
"""

from __future__ import annotations

from typing import Any


def with_second(dense: Any, chunk_note: Any, scanned: Any, weight: float, asked: Any) -> Any:
    """``dense`` (note position -> best row's score, -inf where not found) with the
    second-best row of each found note with questions (``asked``, a mask over the notes)
    weighed in by ``weight``. ``scanned``: the scan whose first row gave ``dense`` (scores, ids
    best first, whether it held every row in scope). A note whose second row the scan did not
    reach is given the scan's lowest score, the most that row can be; a note with one row in
    the index keeps its best."""
    import numpy as np

    if scanned is None or weight <= 0:
        return dense
    scores, ids, _complete = scanned
    keep = ids[0] >= 0
    rows, values = ids[0][keep], scores[0][keep]
    if not len(rows):
        return dense
    notes = chunk_note[rows]
    _, first = np.unique(notes, return_index=True)
    rest = np.ones(len(notes), dtype=bool)
    rest[first] = False
    second = np.full(len(dense), float(values[-1]))  # not reached: at most the scan's last score
    later, at = np.unique(notes[rest], return_index=True)
    second[later] = values[rest][at]
    single = (np.bincount(chunk_note, minlength=len(dense)) < 2) | ~np.asarray(asked, dtype=bool)
    found = np.isfinite(dense)
    second = np.where(single, dense, np.minimum(second, dense))
    out = dense.copy()
    out[found] = (1 - weight) * dense[found] + weight * second[found]
    return out
