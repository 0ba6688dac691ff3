"""What a model answers to recall's own authoring prompts (recall/authoring/prompts/): the
part every fake model API shares in the recommended-flow tests (test_agent_questions.py), whatever
its wire format (Anthropic Messages, OpenAI Responses, Gemini). Each fake hands it the text of
the request's last user turn; ``answer`` returns the text a model would write.

The first answer to one of recall's prompts waits for ``release`` (an event the test holds):
what happens meanwhile is what a user sees while the agent writes."""

from __future__ import annotations

import json
import re
import threading

WAIT_S = 240


def which_prompt(prompt: str) -> str | None:
    """Which of recall's three prompts ``prompt`` is, or None (the agent's own side requests)."""
    if "for which NONE of the notes is relevant" in prompt:
        return "negatives"
    if "restate its header" in prompt:
        return "restatements"
    if "short messages that a developer might type" in prompt:
        return "questions"
    return None


def asked_stems(prompt: str) -> list[str]:
    """The notes a prompt shows (``### stem.md`` headings), in order."""
    return re.findall(r"^### (.+)\.md$", prompt, flags=re.M)


def question(stem: str) -> str:
    return f"zq {stem} what should I watch out for?"


def restatement(stem: str) -> str:
    return f"{stem} の言い換え"


N_NEGATIVES = 5


def answer(prompt: str, release: threading.Event) -> str:
    """A model's answer to each of recall's prompts (one line per note shown), in a fence
    as models often add one; anything else gets "ok"."""
    kind = which_prompt(prompt)
    if kind is None:
        return "ok"
    release.wait(WAIT_S)
    stems = asked_stems(prompt)
    if kind == "questions":
        lines = [json.dumps({"note": s, "questions": [question(s), f"{s} のときはどうする?"]}, ensure_ascii=False)
                 for s in stems]
    elif kind == "restatements":
        lines = [json.dumps({"note": s, "restatements": [restatement(s)]}, ensure_ascii=False) for s in stems]
    else:
        lines = [json.dumps({"text": f"how do I rename a git branch, take {i}?", "lang": "en", "kind": "general"})
                 for i in range(N_NEGATIVES)]
    return "```jsonl\n" + "\n".join(lines) + "\n```"
