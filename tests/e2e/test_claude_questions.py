"""The recommended flow without a manual step, end to end: the real Claude Code CLI (pinned in
agents.py), started by recall in the background after `recall index`, offline against the fake
Messages API that answers recall's own prompts (recall/authoring/prompts/) as a model would. Nothing is
sent before consent; then the new notes' questions, restatements and negatives land in the
memory folder and are indexed; a changed note alone is asked for again."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest
from agents import claude_env

from helpers.daemon import MATCHING
from helpers.fake_messages import start, text
from helpers.paths import SAMPLE_NOTES

pytestmark = pytest.mark.e2e

STEMS = ["alembic-migrations-reversible", "api-docs-urls", "feature-flags-unleash"]
WAIT_S = 240
# The model's first answer is held until the test releases it: what happens meanwhile is
# what a user sees while the agent writes (nothing waits for it).
RELEASE = threading.Event()


def user_text(body: dict) -> str:
    parts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\n".join(parts)


def which_prompt(body: dict) -> str | None:
    prompt = user_text(body)
    if "for which NONE of the notes is relevant" in prompt:
        return "negatives"
    if "restate its header" in prompt:
        return "restatements"
    if "short messages that a developer might type" in prompt:
        return "questions"
    return None


def answer(body: dict) -> list[dict]:
    """A model's answer to each of recall's three prompts (one line per note shown)."""
    prompt = user_text(body)
    stems = re.findall(r"^### (.+)\.md$", prompt, flags=re.M)
    kind = which_prompt(body)
    if kind is not None:
        RELEASE.wait(WAIT_S)
    if kind == "questions":
        lines = [json.dumps({"note": s, "questions": [f"zq {s} what should I watch out for?",
                                                      f"{s} のときはどうする?"]}, ensure_ascii=False) for s in stems]
    elif kind == "restatements":
        lines = [json.dumps({"note": s, "restatements": [f"{s} の言い換え"]}, ensure_ascii=False) for s in stems]
    elif kind == "negatives":
        lines = [json.dumps({"text": f"how do I rename a git branch, take {i}?", "lang": "en", "kind": "general"})
                 for i in range(5)]
    else:
        return [text("ok")]
    return [text("```jsonl\n" + "\n".join(lines) + "\n```")]


def hook_event(scratch) -> bytes:
    return json.dumps({"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": str(scratch.project),
                       "hook_event_name": "UserPromptSubmit", "prompt": MATCHING}).encode()


def wait_for_run(scratch, since: int) -> str:
    """The background run's log once it has indexed (its last line), or fail with the log."""
    log = scratch.recall_home / "questions.log"
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        got = log.read_text(encoding="utf-8")[since:] if log.exists() else ""
        if "indexed:" in got or "Error" in got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"no finished run in {WAIT_S} s; log: {log.read_text() if log.exists() else '(none)'}")


def test_claude_writes_new_and_changed_notes_questions_in_the_background(claude_exe, scratch, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for stem in STEMS:
        shutil.copy2(SAMPLE_NOTES / f"{stem}.md", notes / f"{stem}.md")
    scratch.bin_dirs.append(claude_exe.parent)
    with start(answer=answer) as api:
        scratch.extra_env.update({k: v for k, v in claude_env(scratch, api.url).items()
                                  if k.startswith(("ANTHROPIC", "CLAUDE_CODE", "DISABLE"))})
        scratch.set_up_recall(notes)
        memory = scratch.memory_dir()

        # Before consent: the cost in tokens is shown, nothing is sent.
        out = scratch.recall("index", "--no-conversations")
        assert "`recall questions on` allows it" in out.stderr and "tokens" in out.stderr, out.stderr
        shown = scratch.recall("questions")
        assert "generate = ask" in shown.stdout and "claude" in shown.stdout and "3 new or changed" in shown.stdout
        time.sleep(1)
        assert api.bodies() == [] and not (memory / "questions.jsonl").exists()

        scratch.recall("questions", "on", "--agent", "claude")
        scratch.start_daemon()
        RELEASE.clear()
        out = scratch.recall("index", "--no-conversations")
        assert "writing them in the background" in out.stderr, out.stderr
        # `recall index` is back and the hook answers from the daemon while the model has not answered yet.
        deadline = time.monotonic() + WAIT_S
        while not any(which_prompt(b) for b in api.bodies()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(which_prompt(b) for b in api.bodies()), "the agent never asked the model"
        hook = subprocess.run([sys.executable, "-m", "recall.agents.hook"], input=hook_event(scratch),
                              capture_output=True, env={**scratch.env, "CLAUDE_CODE_ENTRYPOINT": "cli"},
                              timeout=30, check=False)
        assert hook.returncode == 0 and "feature-flags-unleash.md" in hook.stdout.decode(), hook
        assert not (memory / "questions.jsonl").exists()
        RELEASE.set()
        log = wait_for_run(scratch, 0)
        assert "indexed:" in log, log

        lines = {o["note"]: o for o in map(json.loads, (memory / "questions.jsonl").read_text().splitlines())}
        assert set(lines) == set(STEMS)
        for stem, line in lines.items():
            assert line["by"] == "claude" and len(line["note_hash"]) == 16
            assert line["questions"][0] == f"zq {stem} what should I watch out for?"
            assert line["restatements"] == [f"{stem} の言い換え"]
        negatives = (memory / "negatives.jsonl").read_text().splitlines()
        assert len(negatives) == 5 and all(json.loads(n)["by"] == "claude" for n in negatives)
        assert (memory / "questions.jsonl").stat().st_mode & 0o077 == 0

        # What reached the model: recall's prompts with the notes, asked from an empty folder.
        bodies = [b for b in api.bodies() if which_prompt(b)]
        assert sorted(which_prompt(b) for b in bodies) == ["negatives", "questions", "restatements"]
        sent = json.dumps(api.bodies(), ensure_ascii=False)
        assert str(scratch.project) not in sent and MATCHING not in sent  # never the user's message
        assert all(not b.get("tools") for b in bodies)  # no tools: the prompt and nothing else
        assert all(len(json.dumps(b.get("system", ""))) < 2000 for b in bodies)  # not Claude Code's own prompt
        note_words = (notes / f"{STEMS[0]}.md").read_text(encoding="utf-8").split("\n---\n", 1)[-1].strip()[:60]
        assert note_words in user_text(bodies[0]) or note_words in user_text(bodies[1])

        # Indexed: a generated question finds its note.
        hit = scratch.recall("query", "--json", f"zq {STEMS[1]} what should I watch out for?")
        assert json.loads(hit.stdout)["ranked"][0]["path"].endswith(f"{STEMS[1]}.md"), hit.stdout

        # A changed note alone is asked for again; the others' lines stay as they were.
        n_before, size = len(api.bodies()), (scratch.recall_home / "questions.log").stat().st_size
        with open(memory / f"{STEMS[2]}.md", "a", encoding="utf-8") as fh:
            fh.write("\nAlso: name sync wrappers without the _async suffix.\n")
        scratch.recall("index", "--no-conversations")
        assert "indexed:" in wait_for_run(scratch, size)
        asked = [b for b in api.bodies()[n_before:] if which_prompt(b) in ("questions", "restatements")]
        assert asked and all(re.findall(r"^### (.+)\.md$", user_text(b), flags=re.M) == [STEMS[2]] for b in asked)
        after = {o["note"]: o for o in map(json.loads, (memory / "questions.jsonl").read_text().splitlines())}
        assert after[STEMS[0]] == lines[STEMS[0]] and after[STEMS[2]]["note_hash"] != lines[STEMS[2]]["note_hash"]
