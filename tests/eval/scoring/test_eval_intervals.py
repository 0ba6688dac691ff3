"""Intervals that say what n can tell (an outside tester, stop 58): balanced accuracy and
separation of 4 questions read 1.000 [1.000, 1.000]; headlines per message, a count that can
exceed 1, must not get a proportion's interval capped at 1."""

from __future__ import annotations

from recall_eval.comparison.versus import separation
from recall_eval.scoring.metrics import Record, summarize


def rec(i: int, kind: str, injected: list[str], top: float = 0.5) -> Record:
    return Record(f"q{i}", "s", kind, "en", "text", ["a"] if kind == "paraphrase" else [], "en", ranked=["a"],
                  top=top, decision="short" if injected else "nothing", injected=injected)


def test_balanced_accuracy_of_four_alike_questions_is_not_a_point():
    m = summarize([rec(0, "paraphrase", ["a"]), rec(1, "paraphrase", ["a"]), rec(2, "unrelated", []),
                   rec(3, "unrelated", [])])["balanced_accuracy"]
    assert m.value == 1.0 and m.n == 4 and m.ci95[1] == 1.0 and m.ci95[0] < 0.7


def test_headlines_per_message_interval_is_a_counts_not_capped_at_one():
    both = summarize([rec(i, "paraphrase", ["a", "b"]) for i in range(4)])["headlines_per_message"]
    assert both.value == 2.0 and both.ci95[0] < 2.0 < both.ci95[1]
    one = summarize([rec(i, "paraphrase", ["a"]) for i in range(4)])["headlines_per_message"]
    assert one.value == 1.0 and one.ci95[0] < 1.0 < one.ci95[1]


def test_separation_of_four_separated_questions_is_not_a_point():
    recs = [rec(0, "paraphrase", ["a"], 0.9), rec(1, "paraphrase", ["a"], 0.8), rec(2, "unrelated", [], 0.1),
            rec(3, "unrelated", [], 0.2)]
    v = separation({"x": recs}, {"x": 0.0}, "x")["values"]["x"]
    assert v["value"] == 1.0 and v["ci95"][1] == 1.0 and v["ci95"][0] < 0.7
