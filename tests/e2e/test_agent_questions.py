"""The recommended flow without a manual step, end to end, once per agent CLI recall can
hand its prompts to: the real Claude Code, Codex and Gemini CLIs (pinned in agents.py),
started by recall in the background after `recall index`, offline against a fake of each
one's model API (Anthropic Messages, OpenAI Responses, Gemini) that answers recall's own
prompts (recall/authoring/prompts/) as a model would (notegen_model.py). Nothing is sent
before consent; then the new notes' questions, restatements and negatives land in the
memory folder and are indexed; a changed note alone is asked for again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import fake_gemini
import fake_responses
import pytest
from agents import claude_env, write_codex_config, write_gemini_settings
from notegen_model import N_NEGATIVES, WAIT_S, answer, asked_stems, question, restatement, which_prompt

from helpers import fake_messages
from helpers.daemon import MATCHING
from helpers.paths import SAMPLE_NOTES

pytestmark = pytest.mark.e2e

STEMS = ["alembic-migrations-reversible", "api-docs-urls", "feature-flags-unleash"]


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [c.get("text", "") for c in content or [] if isinstance(c, dict)]


# Codex's tools that run commands (the shell, its PTY-backed successor, and their older names).
SHELL_TOOLS = {"shell", "local_shell", "shell_command", "exec_command", "write_stdin", "unified_exec"}

def claude_prompt(body: dict) -> str:
    """The last user turn of a Messages request."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return "\n".join(_texts(users[-1].get("content"))) if users else ""


def codex_prompt(body: dict) -> str:
    """The last user message of a Responses request (Codex sends its environment first)."""
    users = [i for i in body.get("input", []) if i.get("role") == "user"]
    return "\n".join(_texts(users[-1].get("content"))) if users else ""


def gemini_prompt(body: dict) -> str:
    """The last user turn of a generateContent request (Gemini CLI sends its session context
    first); "" for the CLI's own JSON side requests (its model router, which also sees the prompt)."""
    if (body.get("generationConfig") or {}).get("responseJsonSchema"):
        return ""
    users = [c for c in body.get("contents", []) if c.get("role") == "user"]
    return "\n".join(p.get("text", "") for p in users[-1].get("parts", [])) if users else ""


def claude_fake(scratch, reply: Callable[[str], str]) -> AbstractContextManager:
    return fake_messages.start(answer=lambda body: [fake_messages.text(reply(claude_prompt(body)))])


def claude_setup(scratch, url: str) -> None:
    scratch.extra_env.update({k: v for k, v in claude_env(scratch, url).items()
                              if k.startswith(("ANTHROPIC", "CLAUDE_CODE", "DISABLE"))})


def codex_setup(scratch, url: str) -> None:
    write_codex_config(scratch, url)
    scratch.extra_env.update(CODEX_HOME=str(scratch.home / ".codex"), FAKE_OPENAI_KEY="sk-test-not-a-real-key")


def gemini_setup(scratch, url: str) -> None:
    write_gemini_settings(scratch, command=None)
    scratch.extra_env.update(GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY="test-not-a-real-key")


@dataclass(frozen=True)
class Route:
    """One agent CLI: its fake model API, how to read the prompt out of a request, and the
    user's setup that points the CLI at the fake (as the user's own setup would at the real API)."""

    name: str
    fake: Callable[[object, Callable[[str], str]], AbstractContextManager]
    prompt_of: Callable[[dict], str]
    setup: Callable[[object, str], None]


ROUTES = [
    Route("claude", claude_fake, claude_prompt, claude_setup),
    Route("codex", lambda scratch, reply: fake_responses.start(lambda body: reply(codex_prompt(body))),
          codex_prompt, codex_setup),
    Route("gemini", lambda scratch, reply: fake_gemini.start(lambda body: reply(gemini_prompt(body))),
          gemini_prompt, gemini_setup),
]


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


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_agent_writes_new_and_changed_notes_questions_in_the_background(route, request, scratch, tmp_path):
    exe = request.getfixturevalue(f"{route.name}_exe")
    notes = tmp_path / "notes"
    notes.mkdir()
    for stem in STEMS:
        shutil.copy2(SAMPLE_NOTES / f"{stem}.md", notes / f"{stem}.md")
    scratch.bin_dirs.append(exe.parent)
    release = threading.Event()
    with route.fake(scratch, lambda prompt: answer(prompt, release)) as api:
        route.setup(scratch, api.url)

        def kind(body: dict) -> str | None:
            return which_prompt(route.prompt_of(body))

        scratch.set_up_recall(notes)
        memory = scratch.memory_dir()

        # Before consent: the cost in tokens is shown, nothing is sent.
        out = scratch.recall("index", "--no-conversations")
        assert "`recall questions on` allows it" in out.stderr and "tokens" in out.stderr, out.stderr
        shown = scratch.recall("questions")
        assert "generate = ask" in shown.stdout and "3 new or changed" in shown.stdout, shown.stdout
        time.sleep(1)
        assert api.bodies() == [] and not (memory / "questions.jsonl").exists()

        scratch.recall("questions", "on", "--agent", route.name)
        scratch.start_daemon()
        out = scratch.recall("index", "--no-conversations")
        assert "writing them in the background" in out.stderr, out.stderr
        # `recall index` is back and the hook answers from the daemon while the model has not answered yet.
        log = scratch.recall_home / "questions.log"
        deadline = time.monotonic() + WAIT_S
        while not any(kind(b) for b in api.bodies()) and time.monotonic() < deadline:
            if log.exists() and "Error" in log.read_text(encoding="utf-8"):
                break
            time.sleep(0.2)
        assert any(kind(b) for b in api.bodies()), (
            f"{route.name} never asked the model; log: {log.read_text() if log.exists() else '(none)'}")
        hook = subprocess.run([sys.executable, "-m", "recall.agents.hook"], input=hook_event(scratch),
                              capture_output=True, env={**scratch.env, "CLAUDE_CODE_ENTRYPOINT": "cli"},
                              timeout=30, check=False)
        assert hook.returncode == 0 and "feature-flags-unleash.md" in hook.stdout.decode(), hook
        assert not (memory / "questions.jsonl").exists()
        release.set()
        got = wait_for_run(scratch, 0)
        assert "indexed:" in got, got

        lines = {o["note"]: o for o in map(json.loads, (memory / "questions.jsonl").read_text().splitlines())}
        assert set(lines) == set(STEMS), got
        for stem, line in lines.items():
            assert line["by"] == route.name and len(line["note_hash"]) == 16
            assert line["questions"][0] == question(stem)
            assert line["restatements"] == [restatement(stem)]
        negatives = (memory / "negatives.jsonl").read_text().splitlines()
        assert len(negatives) == N_NEGATIVES and all(json.loads(n)["by"] == route.name for n in negatives)
        assert (memory / "questions.jsonl").stat().st_mode & 0o077 == 0

        # What reached the model: recall's prompts with the notes, asked from an empty folder.
        bodies = [b for b in api.bodies() if kind(b)]
        assert sorted(kind(b) for b in bodies) == ["negatives", "questions", "restatements"]
        sent = json.dumps(api.bodies(), ensure_ascii=False)
        assert str(scratch.project) not in sent and MATCHING not in sent  # never the user's message
        if route.name == "claude":  # recall's flags for claude: no tools, a one-line system prompt
            assert all(not b.get("tools") for b in bodies)
            assert all(len(json.dumps(b.get("system", ""))) < 2000 for b in bodies)
        else:  # Codex and Gemini CLI tell the model their folder: recall's empty one, in RECALL_HOME's run folder
            assert all("/run/gen-" in json.dumps(b) for b in bodies)
        if route.name == "codex":  # no shell: a note's text cannot make Codex run anything
            names = {str(tool.get("name") or tool.get("type")) for b in bodies for tool in b.get("tools", [])}
            assert not names & SHELL_TOOLS, names
        if route.name == "gemini":  # headless Gemini CLI offers no shell and no write (its reads stay in the folder)
            names = {str(f.get("name")) for b in bodies for tool in b.get("tools", [])
                     for f in tool.get("functionDeclarations", [])}
            assert names and not names & {"run_shell_command", "write_file", "replace"}, names
        note_words = (notes / f"{STEMS[0]}.md").read_text(encoding="utf-8").split("\n---\n", 1)[-1].strip()[:60]
        assert any(note_words in route.prompt_of(b) for b in bodies)

        # Indexed: a generated question finds its note.
        hit = scratch.recall("query", "--json", question(STEMS[1]))
        assert json.loads(hit.stdout)["ranked"][0]["path"].endswith(f"{STEMS[1]}.md"), hit.stdout

        # A changed note alone is asked for again; the others' lines stay as they were.
        n_before, size = len(api.bodies()), log.stat().st_size
        with open(memory / f"{STEMS[2]}.md", "a", encoding="utf-8") as fh:
            fh.write("\nAlso: name sync wrappers without the _async suffix.\n")
        scratch.recall("index", "--no-conversations")
        assert "indexed:" in wait_for_run(scratch, size)
        asked = [b for b in api.bodies()[n_before:] if kind(b) in ("questions", "restatements")]
        assert asked and all(asked_stems(route.prompt_of(b)) == [STEMS[2]] for b in asked)
        after = {o["note"]: o for o in map(json.loads, (memory / "questions.jsonl").read_text().splitlines())}
        assert after[STEMS[0]] == lines[STEMS[0]] and after[STEMS[2]]["note_hash"] != lines[STEMS[2]]["note_hash"]
