"""The daemon's ``explain`` request (what ``recall ui``'s "try a message" asks): the
same decision as ``query``, with everything behind it, and nothing logged."""

from __future__ import annotations

import pytest

from helpers.daemon import CHITCHAT, MATCHING
from recall.agents.registry import get
from recall.daemon import log_path
from recall.ipc import client
from recall.ranking.selector import line_bytes

pytestmark = pytest.mark.process


def test_explain_matches_query_and_shows_why(indexed, daemons, tmp_path):
    daemons.start()
    q = client.request({"cmd": "query", "prompt": MATCHING, "cwd": str(tmp_path)}, timeout=10)
    e = client.request({"cmd": "explain", "prompt": MATCHING, "cwd": str(tmp_path)}, timeout=10)
    assert e["ok"] and q["ok"]
    assert e["decision"]["text"] == q["decision"]["text"] != ""  # the exact block the hook hands over
    assert e["decision"]["decision"] == q["decision"]["decision"] != "nothing"
    line = get("claude").output(q["decision"]["text"])
    assert e["decision"]["bytes"] == line_bytes(e["decision"]["text"]) == len(line.encode()) + 1
    ranked = e["ranked"]
    assert ranked[0]["name"] == "Feature flags via Unleash" and ranked[0]["chosen"]
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    assert {r["id"] for r in ranked if r["chosen"]} == {c["id"] for c in e["decision"]["chosen"]}
    s = e["settings"]
    assert (s["gap_floor"], s["top_floor"], s["thresholds_source"], s["selector"]) == (0.15, 0.35, "hash-256", "gap")
    assert e["origins"]["gap_floor"].endswith("config.toml")  # the user's file, not the packaged one


def test_explain_is_not_an_injection_and_logs_nothing(indexed, daemons, tmp_path):
    daemons.start()
    before = log_path().read_text(encoding="utf-8")
    canary = "canary-41c2 " + MATCHING
    for prompt in (canary, CHITCHAT):
        reply = client.request({"cmd": "explain", "prompt": prompt, "cwd": str(tmp_path)}, timeout=10)
        assert reply["ok"]
    assert reply["decision"]["decision"] == "nothing" and reply["decision"]["text"] == ""
    assert reply["decision"]["reason"]
    assert log_path().read_text(encoding="utf-8") == before
    assert client.request({"cmd": "explain"}, timeout=10) == {"ok": False, "error": "no prompt"}
