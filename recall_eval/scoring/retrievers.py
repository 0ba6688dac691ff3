"""Every system the harness scores, behind one interface (BEIR's shape).

    search(queries: {qid: text}) -> run: {qid: {note id: score}}

plus what the gate needs: ``answer(qid)``, the ranked hits the selector saw (their
scores are the ones the gap rule reads) and the decision taken on them.

    CoreRetriever     recall itself, only through ``recall.api.Recall``: ``query`` (the
                      hook's own path: ranking, fusion, negatives, the configured rule) or
                      ``rank`` (the same ranking, no decision: for threshold grids, which
                      then call ``recall.ranking.selector.decide`` with replaced rules)
    LexicalRetriever  a lexical baseline (``recall_eval.scoring.baselines``: bm25s, grep)
                      with the baselines' rule: top 3 above the baseline's own floor

The harness keeps no copy of the core's ranking, fusion or BM25: a figure about recall
comes from ``CoreRetriever``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recall.ranking.scope import Scope
from recall.ranking.selector import Decision, Hit
from recall_eval.scoring.baselines import BM25Baseline, GrepBaseline, lexical_decision

if TYPE_CHECKING:
    from recall.api import Recall
    from recall.config.settings import Rule

Run = dict[str, dict[str, float]]  # qid -> {note id: score}, ranx / BEIR / pytrec_eval's run


@dataclass
class Answer:
    """One question as the gate saw it: the ranked hits (best first, the scores the
    selector reads), the decision, and the milliseconds it took (0 when not timed)."""

    hits: list[Hit]
    decision: Decision | None
    total_ms: float = 0.0


def as_run(answers: Mapping[str, Answer]) -> Run:
    return {qid: {h.note["id"]: h.score for h in a.hits} for qid, a in answers.items()}


class _Answers:
    """The answers kept by qid, so a retriever's run and its decisions are read once."""

    name = ""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {}

    def answer(self, qid: str) -> Answer:
        return self.answers[qid]

    def _search(self, queries: Mapping[str, str], one: Callable[[str], Answer],
                wrap: Callable[[Iterable], Iterable]) -> Run:
        for qid in wrap(list(queries)):
            self.answers[qid] = one(queries[qid])
        return as_run({qid: self.answers[qid] for qid in queries})


class CoreRetriever(_Answers):
    """recall over its public API. ``decide=True``: ``Recall.query`` (the hook's answer, its
    decision and timing); ``False``: ``Recall.rank`` (the ranking only, ``decision`` None)."""

    def __init__(self, app: Recall, name: str = "recall", scope: Scope | None = None, *, decide: bool = True,
                 k_notes: int = 20, progress: Callable[[Iterable], Iterable] = lambda it: it) -> None:
        super().__init__()
        self.app, self.name, self.scope = app, name, scope or Scope(everything=True)
        self.decide, self.k_notes, self.progress = decide, k_notes, progress

    def _one(self, text: str) -> Answer:
        if not self.decide:
            return Answer(self.app.rank(text, self.scope, k_notes=self.k_notes), None)
        res = self.app.query(text, self.scope, k_notes=self.k_notes)
        return Answer(res.hits, res.decision, res.timings.get("total_ms", 0.0))

    def search(self, queries: Mapping[str, str]) -> Run:
        return self._search(queries, self._one, self.progress)


class LexicalRetriever(_Answers):
    """A lexical baseline and its rule (``lexical_decision``: top ``max_notes`` above ``floor``)."""

    def __init__(self, base: GrepBaseline | BM25Baseline, rule: Rule, floor: float = 0.0,
                 progress: Callable[[Iterable], Iterable] = lambda it: it) -> None:
        super().__init__()
        self.base, self.name, self.rule, self.floor, self.progress = base, base.name, rule, floor, progress

    def _one(self, text: str) -> Answer:
        hits = self.base.rank(text)
        return Answer(hits, lexical_decision(text, hits, self.rule, self.floor))

    def search(self, queries: Mapping[str, str]) -> Run:
        return self._search(queries, self._one, self.progress)
