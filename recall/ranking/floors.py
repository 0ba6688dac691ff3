"""Floors on a score, fitted to keep a silence target on known unrelated messages
(``recall.ranking.calibration``), and which of a collection's own negatives are near misses.
"""

from __future__ import annotations

# The silence target holds on each of this many parts of the negatives, in file order, not
# only on all of them (``strict_floor``).
NEGATIVE_PARTS = 2


def strict_floor(values, target: float, parts: int = NEGATIVE_PARTS) -> float:
    """The lowest floor that keeps ``target`` of each part of ``values`` (in their order) below
    it. A negatives file grows by batches appended by different writers (a model's run, a
    top-up, a teammate), and one writer's near misses can sit much farther from real messages
    than another's: on kinopeee the second helper's half alone set a floor that kept 0.65 of
    real near misses silent for 0.90 estimated, the first's 0.89. A floor that holds on each
    half cannot rest on the easier one (measured silence 0.818 -> 0.867 there for a target of
    0.90; rules-120 unchanged; docs/decision.md, issue #23)."""
    return max((lowest_floor(c, target) for c in _parts(values, parts)), default=float("-inf"))


def strict_silence(values, floor: float, parts: int = NEGATIVE_PARTS) -> float:
    """The silence of the less silent part of ``values`` below ``floor``: the estimate the
    floor was fitted to keep."""
    import numpy as np

    return min((1 - float(np.mean(c >= floor)) for c in _parts(values, parts)), default=1.0)


def _parts(values, parts: int) -> list:
    import numpy as np

    return [c for c in np.array_split(np.asarray(values, dtype=float), parts) if len(c)]


def lowest_floor(values, target: float) -> float:
    """The lowest floor that keeps ``target`` of ``values`` below it: just above the value
    that leaves at most ``(1 - target) * n`` of them at or over the floor. Not higher: a floor
    above it hands over no fewer of the held-out questions, often, for want of enough of
    them in that stretch, while real messages are lost there and silence overshoots what
    was asked (kinopeee: 0.934 estimated and 0.950 measured for a target of 0.90, when
    ties went to the more silent floor; issue #23)."""
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=float))
    allowed = int(np.floor(len(ordered) * (1 - target) + 1e-9))  # may stay at or over the floor
    if allowed >= len(ordered):
        return float("-inf")
    return float(ordered[len(ordered) - allowed - 1]) + 1e-6


def near_misses(own_top, bank_top) -> int:
    """How many of a collection's own negatives (their best notes' scores, ``own_top``) sit at
    least as near the notes as the shipped bank's typical chit-chat (its median, ``bank_top``).
    Negatives no nearer than chit-chat are no near misses: they say nothing about the messages
    a floor must keep silent on, and keeping them silent is free. A background agent answered
    40 well-formed lines about cooking pasta as a folder's negatives: they counted as the 30 a
    fit needs, the floor fell from 0.33 to 0.21 (the bank's own level), and ordinary coding
    questions got a note 11 times in 30 (an outside tester's AD01)."""
    import numpy as np

    if not len(own_top):
        return 0
    level = float(np.median(bank_top)) if len(bank_top) else float("-inf")
    return int(np.sum(np.asarray(own_top, dtype=float) >= level))
