"""A message of several sentences also searches each sentence on its own, for the order only
(``[search] sentence_weight``): a note one sentence is about moves up, while the scores the
gate sees, and so whether recall speaks, stay the whole message's."""

import dataclasses

import pytest

from helpers.notes import write_note
from recall.api import Recall
from recall.config.load import load_config
from recall.embedding.models import get_embedder
from recall.indexing.indexer import SourceSpec
from recall.ranking import sentences


def test_a_message_is_cut_at_ends_of_sentences_and_line_breaks_but_not_inside_names():
    text = "Moved the billing job to node 18.2 today. It reads config.toml! どう直せばいいですか。テストは？\nsee v1.2"
    assert sentences.split(text, 6, 10) == ["Moved the billing job to node 18.2 today.", "It reads config.toml!",
                                            "どう直せばいいですか。", "see v1.2"]
    assert sentences.split(text, 5, 2) == ["Moved the billing job to node 18.2 today.", "It reads config.toml!"]


def test_one_sentence_or_pieces_too_short_to_search_give_nothing_to_add():
    assert sentences.split("where do the export jobs log to", 5, 6) == []
    assert sentences.split("ok. thanks! where do the export jobs log to?", 12, 6) == []
    assert sentences.split("", 1, 6) == []


def test_reciprocal_rank_lifts_a_note_both_lists_rank_high_and_keeps_the_first_order_on_ties():
    first, second = [10, 11, 12, 13], [13, 10, 11, 12]
    assert sentences.by_rank(first, second, k=60, weight=1.0, n=4) == [10, 13, 11, 12]
    assert sentences.by_rank(first, [11, 10, 12, 13], k=60, weight=1.0, n=4) == first  # 10 and 11 tie
    assert sentences.by_rank(first, second, k=60, weight=0.0, n=4) == first
    assert sentences.by_rank(first, [99], k=60, weight=1.0, n=2) == [10, 99]  # a note only one sentence found


def _by_rank_loop(first, second, *, k, weight, n):
    """What ``by_rank`` computed by a loop over a dict before it was numpy's."""
    score: dict[int, float] = {}
    for rank, note in enumerate(first, 1):
        score[note] = score.get(note, 0.0) + 1.0 / (k + rank)
    for rank, note in enumerate(second, 1):
        score[note] = score.get(note, 0.0) + weight / (k + rank)
    return sorted(score, key=lambda note: -score[note])[:n]


def test_reciprocal_rank_is_the_loop_s_order_over_hundreds_of_notes_with_ties():
    import numpy as np

    rng = np.random.default_rng(24)
    for trial in range(400):
        pool = int(rng.integers(1, 600))
        first = rng.permutation(pool)[: int(rng.integers(0, min(pool, 30) + 1))].tolist()
        second = rng.permutation(pool)[: int(rng.integers(0, pool + 1))].tolist()
        if trial % 5 == 0:
            second = first[::-1]  # ties: a note at rank r in one list and n + 1 - r in the other
        k, weight = int(rng.integers(1, 100)), float(rng.choice([0.0, 0.5, 1.0, 2.0, float(rng.random())]))
        n = int(rng.integers(0, len(first) + 2))
        got = sentences.by_rank(first, second, k=k, weight=weight, n=n)
        assert got == _by_rank_loop(first, second, k=k, weight=weight, n=n)
        assert all(type(note) is int for note in got)


def test_below_top_keeps_the_message_s_first_note_and_fuses_the_rest():
    assert sentences.below_top([10, 11, 12, 13], [13, 10, 11, 12], k=60, weight=1.0) == [10, 11, 13, 12]
    assert sentences.below_top([10], [11], k=60, weight=1.0) == [10]
    assert sentences.below_top([], [11], k=60, weight=1.0) == []


def _app(home, weight: float) -> Recall:
    config = load_config()
    # BM25 barely counts here: the zebra sentence's rare words would otherwise lift its note
    # for the whole message already.
    search = dataclasses.replace(config.search.with_lexical_weight(0.05), sentence_weight=weight)
    return Recall(home=home, config=dataclasses.replace(config, search=search), embedder=get_embedder("hash"))


@pytest.fixture()
def notes(tmp_path):
    folder = tmp_path / "notes"
    write_note(folder, "ledger", "Ledger rounding", "Decimal money in the ledger",
               "Round ledger totals with decimal money, never floats; the ledger team reviews rounding. " * 3)
    write_note(folder, "reports", "Monthly reports", "How the monthly ledger report is built",
               "The monthly report sums the ledger totals per team and sends the report on Mondays. " * 3)
    write_note(folder, "audit", "Quarterly audit", "Who checks the ledger each quarter",
               "Each quarter the auditors check the ledger totals and the decimal rounding of the money. " * 3)
    for i, what in enumerate(("invoices", "refunds", "payouts")):
        write_note(folder, what, f"Ledger {what}", f"How {what} reach the ledger",
                   f"The ledger totals for {what} use decimal money and the ledger team checks the rounding. " * 3)
    write_note(folder, "zebra", "Zebra feeding", "When the zoo's zebras are fed",
               "Zebras get hay at seven and pellets at noon; the keeper checks their teeth. " * 3)
    write_note(folder, "tabs", "Editor settings", "Tabs, spaces and line endings", "Use four spaces. " * 5)
    return folder


MESSAGE = ("The ledger totals and the monthly ledger report with decimal money rounding are mine this week, "
           "the auditors check the ledger totals and the ledger report rounding each quarter. "
           "Zebras get hay at seven and pellets at noon, and the keeper checks their teeth?")


def _ask(home, notes, weight: float, text: str = MESSAGE):
    app = _app(home, weight)
    app.index([SourceSpec("dir", notes)])
    got = app.query(text)
    app.store.close()
    return got


def _by_sentence(home, notes, text: str) -> list[str]:
    """The notes by their best chunk's score over the message's sentences, each searched alone."""
    app = _app(home, 0.0)
    app.index([SourceSpec("dir", notes)])
    s = app.config.search
    best: dict[str, float] = {}
    for piece in sentences.split(text, s.sentence_min_chars, s.sentences_max):
        for hit in app.searcher.search_vector(app.embedder.embed_queries([piece]), None, 50):
            best[hit.note["id"]] = max(best.get(hit.note["id"], -9.0), hit.score)
    app.store.close()
    return sorted(best, key=lambda n: -best[n])


def test_a_note_one_sentence_is_about_moves_up_and_the_gate_sees_the_same_scores(tmp_path, notes):
    off = _ask(tmp_path / "off", notes, 0.0)
    on = _ask(tmp_path / "on", notes, 1.0)
    ids_off = [h.note["id"] for h in off.hits]
    ids_on = [h.note["id"] for h in on.hits]
    ranked = _by_sentence(tmp_path / "each", notes, MESSAGE)
    assert ranked[0] == "zebra"  # the last sentence is about zebras alone
    # The whole message is mostly about the ledger; the order below its first note is fused
    # with the sentences' by reciprocal rank, so the zebra note climbs.
    pos = {n: i for i, n in enumerate(ids_off + ranked)}
    want = sentences.below_top([pos[n] for n in ids_off], [pos[n] for n in ranked], k=60, weight=1.0)
    assert ids_on == [(ids_off + ranked)[i] for i in want]
    assert ids_on.index("zebra") < ids_off.index("zebra"), (ids_off, ids_on)
    assert ids_on[0] == ids_off[0]
    assert [h.score for h in on.hits] == [h.score for h in off.hits]
    decided = [(r.decision.kind, r.decision.top, r.decision.gap) for r in (on, off)]
    assert decided[0] == decided[1]
    assert "sentences_ms" in on.timings and "sentences_ms" not in off.timings


def test_a_message_of_one_sentence_is_ranked_as_before(tmp_path, notes):
    text = "the ledger totals and the monthly ledger report with decimal money rounding"
    off, on = _ask(tmp_path / "off", notes, 0.0, text), _ask(tmp_path / "on", notes, 1.0, text)
    assert [h.note["id"] for h in on.hits] == [h.note["id"] for h in off.hits]
    assert "sentences_ms" not in on.timings


def _random_message(rng) -> str:
    alphabet = ("ledger zebra money report rounding hay tabs 帳簿 丸め 。！？.!? \n\t\u200b\ufeff é ß 🙂 "
                "v1.2 config.toml http://x.y/z?a=1 ... -- ** ## `code`")
    parts = [rng.choice(alphabet.split(" ")) or " " for _ in range(rng.randrange(1, 120))]
    return " ".join(parts) if rng.random() < 0.7 else "".join(parts)


def test_for_any_message_only_the_order_below_the_first_note_changes(tmp_path, notes):
    """Seeded random messages (sentence ends, line breaks, CJK, emoji, invisible characters,
    names with dots): the same first note, the same gate scores and decision, the same notes."""
    import random

    on, off = _app(tmp_path / "on", 1.0), _app(tmp_path / "off", 0.0)
    for app in (on, off):
        app.index([SourceSpec("dir", notes)])
    rng = random.Random(34)
    moved = 0
    for _ in range(150):
        text = _random_message(rng)
        a, b = on.query(text, search_short=True), off.query(text, search_short=True)
        ids_a, ids_b = [h.note["id"] for h in a.hits], [h.note["id"] for h in b.hits]
        assert ids_a[:1] == ids_b[:1] and sorted(ids_a) == sorted(ids_b), text
        assert [h.score for h in a.hits] == [h.score for h in b.hits], text
        assert (a.decision.kind, [h.note["id"] for h in a.decision.chosen][:1]) == \
            (b.decision.kind, [h.note["id"] for h in b.decision.chosen][:1]), text
        moved += ids_a != ids_b
    assert moved > 0  # the random messages did exercise the sentence search
    for app in (on, off):
        app.store.close()
