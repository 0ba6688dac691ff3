"""The gap rule at its boundaries, and the byte caps over the hook's whole line."""

import json
from math import inf

import pytest

from recall.agents.registry import AGENTS, get
from recall.config.load import packaged_settings
from recall.ranking.selector import HEADER, Hit, Ranking, decide, gap_of, line_bytes

# The packaged [thresholds.default] table, for a model without its own: the original
# design's numbers (0.025 / 0.5 / 0.11 / 0.05), and the packaged [selector] section.
S = packaged_settings().rule("a model without its own table")


def hits(scores, kind="dir", project=None, desc="d"):
    return [
        Hit({"id": f"n{i}", "name": f"Note {i}", "description": desc, "path": f"/notes/n{i}.md",
             "kind": kind, "project": project}, s)
        for i, s in enumerate(scores)
    ]


def ranked_with_gap(top, gap, n=11):
    """Top score, then ten equal scores so that gap = top - rest exactly."""
    return hits([top] + [top - gap] * (n - 1))


def test_gap_is_top_minus_mean_of_ranks_2_to_11():
    scores = [0.9] + [0.5 + 0.01 * i for i in range(10, 0, -1)] + [0.0, 0.0]
    assert gap_of(scores) == pytest.approx(0.9 - sum(scores[1:11]) / 10)
    assert gap_of([0.9]) is None


def test_short_messages_are_not_searched():
    d = decide("ok go", ranked_with_gap(0.9, 0.3), S)
    assert d.kind == "nothing" and "shorter than 6" in d.reason
    assert decide("tz bug", ranked_with_gap(0.9, 0.3), S).kind != "nothing"


@pytest.mark.parametrize(
    "top,gap,expected",
    [
        (0.9, 0.0249, "nothing"),  # just under the gap floor
        (0.9, 0.0251, "short"),  # just over it
        (0.4999, 0.3, "nothing"),  # under the top floor
        (0.5001, 0.3, "full"),
        (0.9, 0.1099, "short"),  # just under the full gap
        (0.9, 0.1101, "full"),
    ],
)
def test_thresholds_at_their_edges(top, gap, expected):
    assert decide("a message long enough", ranked_with_gap(top, gap), S).kind == expected


def test_short_list_is_top_3_and_full_list_within_margin():
    whole = S.replace(headline_margin=inf)  # the tiers alone, no test per headline
    ranked = hits([0.90, 0.895, 0.89, 0.87] + [0.82] * 7)
    d = decide("a message long enough", ranked, whole)
    assert d.kind == "short"
    assert [h.note["id"] for h in d.chosen] == ["n0", "n1", "n2"]

    ranked = hits([0.95, 0.94, 0.85, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6])
    d = decide("a message long enough", ranked, whole)
    assert d.kind == "full"
    assert [h.note["id"] for h in d.chosen] == ["n0", "n1"]  # 0.85 is not within 0.05 of 0.95


def test_each_headline_after_the_first_earns_its_place():
    assert S.selector.headline_margin == 0.0  # the packaged value: the top note alone, exact ties aside
    assert [h.note["id"] for h in decide("a message long enough", hits([0.90, 0.895] + [0.82] * 9), S).chosen] == ["n0"]
    tie = decide("a message long enough", hits([0.90, 0.90] + [0.82] * 9), S)
    assert [h.note["id"] for h in tie.chosen] == ["n0", "n1"]
    near = S.replace(headline_margin=0.01)
    # Short tier: the second is a near tie (0.01 below), the third 0.03 below: dropped.
    d = decide("a message long enough", hits([0.90, 0.89, 0.87, 0.86] + [0.82] * 7), near)
    assert d.kind == "short" and [h.note["id"] for h in d.chosen] == ["n0", "n1"]
    assert "1 more below the headline test" in d.reason
    # Full tier: within full_margin (0.05) but not within headline_margin.
    d = decide("a message long enough", hits([0.95, 0.92] + [0.6] * 9), near)
    assert d.kind == "full" and [h.note["id"] for h in d.chosen] == ["n0"]
    # inf: the list whole, as the original rule had it.
    whole = decide("a message long enough", hits([0.90, 0.85, 0.80] + [0.79] * 8), S.replace(headline_margin=inf))
    assert [h.note["id"] for h in whole.chosen] == ["n0", "n1", "n2"]


def test_each_headline_passes_its_own_evidence_against_the_nearest_negative():
    rule = S.replace(top_floor=1.0, neg_weight=4.0, gap_floor=-2.0, headline_margin=0.01)
    ranked = Ranking(hits([0.90, 0.89, 0.60, 0.6] + [0.5] * 7), negative=0.87)
    # top: 0.90 + 4 x 0.03 = 1.02 >= 1.0 speaks; second: 0.89 + 4 x 0.02 = 0.97 < 1.0, dropped
    # although it is within headline_margin of the top.
    d = decide("a message long enough", ranked, rule)
    assert d.kind != "nothing" and [h.note["id"] for h in d.chosen] == ["n0"]
    ranked.negative = 0.85  # second: 0.89 + 4 x 0.04 = 1.05: kept
    assert [h.note["id"] for h in decide("a message long enough", ranked, rule).chosen] == ["n0", "n1"]


def test_output_text_format():
    d = decide("a message long enough", ranked_with_gap(0.9, 0.2), S)
    lines = d.text.split("\n")
    assert lines[0] == HEADER
    assert lines[1] == "“Note 0” — “d” (/notes/n0.md)"


@pytest.mark.parametrize("kind,cap", [("short", 1024), ("full", 2048)])
def test_byte_caps_count_the_whole_json_line(kind, cap):
    gap = 0.05 if kind == "short" else 0.2
    base = ranked_with_gap(0.9, gap)
    # Japanese descriptions: 3 UTF-8 bytes a character, so bytes != characters.
    long = [Hit({**h.note, "description": "長い説明" * 60}, h.score) for h in base]
    long[1] = Hit(long[1].note, 0.9)  # two notes in the full list too
    d = decide("a message long enough", long, S)
    assert d.kind == kind
    printed = get("claude").output(d.text) + "\n"
    assert len(printed.encode("utf-8")) == d.line_bytes <= cap
    assert json.loads(printed)["hookSpecificOutput"]["additionalContext"] == d.text
    for name in AGENTS:  # the block fits every agent's line: the widest envelope is counted
        assert len((get(name).output(d.text) + "\n").encode("utf-8")) <= d.line_bytes
    assert d.chosen  # something still fits: the first description is shortened if needed


def test_one_enormous_note_is_shortened_not_dropped():
    ranked = hits([0.9] + [0.5] * 10, desc="x" * 5000)
    d = decide("a message long enough", ranked, S)
    assert d.kind == "full" and len(d.chosen) == 1
    assert line_bytes(d.text) <= 2048 and d.text.endswith("(/notes/n0.md)")


def test_a_note_whose_headline_cannot_fit_gives_way_to_the_next():
    """A note under a folder path of 2 KB ranked first: nothing was handed over, the user's own
    note second included, so a copy planted deep in a cloned repo silenced it (stop 57)."""
    ranked = hits([0.9, 0.89] + [0.5] * 9)
    ranked[0] = Hit({**ranked[0].note, "path": "/notes/" + "deep/" * 600 + "n0.md"}, 0.9)
    d = decide("a message long enough", ranked, S)
    assert d.kind != "nothing" and [h.note["id"] for h in d.chosen] == ["n1"], d.reason
    assert line_bytes(d.text) <= 2048 and "deep/" not in d.text


def test_current_project_note_goes_first():
    ranked = hits([0.90, 0.89, 0.88] + [0.6] * 8, kind="rule")
    mine = Hit({"id": "mine", "name": "Mine", "description": "d", "path": "/m.md", "kind": "memory",
                "project": "P"}, 0.86)
    ranked.insert(3, mine)
    d = decide("a message long enough", ranked, S, project="P")
    assert d.chosen[0].note["id"] == "mine"
    # Too far below the top (> project_first_margin): no promotion.
    mine.score = 0.80
    ranked.sort(key=lambda h: -h.score)
    d = decide("a message long enough", ranked, S, project="P")
    assert "mine" not in [h.note["id"] for h in d.chosen]


def test_conversation_titles_rank_but_do_not_enter_the_gap():
    notes = ranked_with_gap(0.9, 0.2)
    titles = [Hit({"id": f"t{i}", "name": f"title {i}", "kind": "conversation", "path": f"/t{i}.jsonl",
                   "extra": {"date": "2026-10-01"}}, 0.89) for i in range(10)]
    d = decide("a message long enough", sorted(notes + titles, key=lambda h: -h.score), S)
    assert d.gap == pytest.approx(0.2)  # titles would have shrunk it to ~0.02
    assert d.kind == "full"
