"""Session titles from Claude Code transcripts (real-shaped JSONL written into tmp_path)."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from helpers.corpora import CWD, Transcript, conversation
from recall.notes.transcripts import (
    MAX_TITLE_CHARS,
    ReadStats,
    SessionTitle,
    read_project_titles,
    read_title,
)


def title_of(t: Transcript, tmp_path: Path, prompts: bool = True) -> SessionTitle | None:
    """The title, past prompts allowed (what these parsing tests check); see the tests of
    ``prompts=False``, the default, at the end."""
    return read_title(t.write(tmp_path), prompts)[0]


# --- precedence ------------------------------------------------------------------

def test_first_prompt_when_no_title_line(tmp_path):
    got = title_of(conversation(), tmp_path)
    assert got.title == "Add a retry to the payment webhook handler"
    assert got.source == "first-prompt"
    assert got.date == "2026-10-01" and got.cwd == CWD


@pytest.mark.parametrize("kinds, expected", [
    (["summary"], "summary"),
    (["summary", "last-prompt"], "last-prompt"),
    (["last-prompt", "summary", "ai-title"], "ai-title"),
    (["custom-title", "ai-title", "last-prompt", "summary"], "custom-title"),
    (["ai-title", "custom-title", "ai-title"], "custom-title"),
])
def test_precedence(tmp_path, kinds, expected):
    t = conversation()
    for kind in kinds:
        if kind == "summary":
            t.summary(f"{kind} text")
        else:
            t.title(kind, f"{kind} text")
    got = title_of(t, tmp_path)
    assert (got.source, got.title) == (expected, f"{expected} text")


@pytest.mark.parametrize("kind", ["custom-title", "ai-title", "last-prompt", "summary"])
def test_last_occurrence_wins(tmp_path, kind):
    t = conversation()
    for n in (1, 2, 3):
        t.summary(f"take {n}") if kind == "summary" else t.title(kind, f"take {n}")
        t.user(f"follow-up {n}").assistant("ok")
    got = title_of(t, tmp_path)
    assert (got.source, got.title) == (kind, "take 3")


def test_blank_title_line_falls_through(tmp_path):
    t = conversation().title("ai-title", "AI named it").title("custom-title", "   ")
    assert title_of(t, tmp_path).source == "ai-title"


def test_title_is_cleaned_and_truncated(tmp_path):
    long = "Refactor   the\n\n  checkout\tflow " + "x" * 500
    got = title_of(conversation().title("custom-title", long), tmp_path)
    assert got.title.startswith("Refactor the checkout flow x")
    assert len(got.title) == MAX_TITLE_CHARS and "\n" not in got.title


# --- automated sessions and subagents ---------------------------------------------

@pytest.mark.parametrize("entrypoint", ["sdk-cli", "sdk-py", "sdk-ts"])
def test_automated_sessions_are_skipped(tmp_path, entrypoint):
    t = conversation(entrypoint=entrypoint).title("ai-title", "batch job")
    assert read_title(t.write(tmp_path), True) == (None, 0, "automated")


@pytest.mark.parametrize("entrypoint", ["cli", "claude-vscode", "claude-desktop", None])
def test_interactive_entrypoints_are_kept(tmp_path, entrypoint):
    got = title_of(conversation(entrypoint=entrypoint), tmp_path)
    assert got is not None and got.source == "first-prompt"


def test_sidechain_lines_never_give_the_title(tmp_path):
    t = Transcript()
    t.user("Explore the repo and list the API routes", isSidechain=True, agentId="a1b2c3")
    t.assistant("Routes: ...", isSidechain=True, agentId="a1b2c3")
    t.user("Why does checkout time out?")
    got = title_of(t, tmp_path)
    assert got.title == "Why does checkout time out?"


def test_subagent_only_file_has_no_title(tmp_path):
    t = Transcript(session_id="agent-a1b2c3")
    t.user("Search for TODOs", isSidechain=True).assistant("Found 3", isSidechain=True)
    assert read_title(t.write(tmp_path), True)[2] == "no title"


# --- what is not a typed prompt ----------------------------------------------------

NOT_PROMPTS = [
    "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>",
    "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
    "<local-command-stdout>Set model to opus</local-command-stdout>",
    "<local-command-stderr>error: unknown option</local-command-stderr>",
    "<user-prompt-submit-hook>Recalled notes: ...</user-prompt-submit-hook>",
    "<system-reminder>SessionStart:startup hook success: loaded 3 notes</system-reminder>",
    "SessionStart:resume hook success: context restored",
    "[Request interrupted by user]",
    "[Request interrupted by user for tool use]",
    "<ide_opened_file>The user opened the file /src/app.py in the IDE.</ide_opened_file>",
    "<ide_selection>The user selected lines 3 to 9 of /src/app.py</ide_selection>",
    "<ide_diagnostics>2 errors in app.py</ide_diagnostics>",
    "<bash-input>git status</bash-input>",
    "   \n\t ",
]


def test_non_prompts_are_skipped_for_first_prompt(tmp_path):
    t = Transcript()
    for text in NOT_PROMPTS:
        t.user(text).assistant("ok")
    t.user("Caveat: The messages below were generated by the user while running local commands.",
           isMeta=True)
    t.user("This session is being continued from a previous conversation that ran out of context.",
           isCompactSummary=True)
    t.user("Base directory for this skill: /x", isMeta=True)
    t.tool_use_and_result("total 0")
    t.user([{"type": "text", "text": "<ide_opened_file>The user opened /src/pay.py</ide_opened_file>"},
            {"type": "text", "text": "Fix the rounding bug in pay.py"}])
    t.user("a later prompt")
    got = title_of(t, tmp_path)
    assert (got.source, got.title) == ("first-prompt", "Fix the rounding bug in pay.py")


def test_injected_tags_are_removed_from_a_string_prompt(tmp_path):
    t = Transcript().user(
        "<ide_selection>def pay(): ...</ide_selection>\nWhy is pay() slow?\n"
        "<system-reminder>hook context</system-reminder>")
    assert title_of(t, tmp_path).title == "Why is pay() slow?"


def test_content_as_string_and_as_block_list(tmp_path):
    as_string = title_of(Transcript().user("Plain string prompt"), tmp_path / "a")
    as_blocks = title_of(Transcript().user([
        {"type": "text", "text": "Block prompt,"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "text", "text": "second part"},
    ]), tmp_path / "b")
    assert as_string.title == "Plain string prompt"
    assert as_blocks.title == "Block prompt, second part"


def test_session_with_no_usable_title(tmp_path):
    t = Transcript()
    t.user("<command-name>/model</command-name>").user("<local-command-stdout>ok</local-command-stdout>")
    t.tool_use_and_result("nothing")
    assert read_title(t.write(tmp_path), True) == (None, 0, "no title")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert read_title(empty) == (None, 0, "no title")
    assert read_title(tmp_path / "missing.jsonl") == (None, 0, "unreadable")


# --- robustness --------------------------------------------------------------------

def test_malformed_lines_are_counted_not_fatal(tmp_path):
    t = Transcript().raw("not json at all").raw("[1, 2, 3]").raw('"a string"').raw("{truncated")
    t.user("Real prompt after the garbage").assistant("ok")
    t.raw('{"type":"assistant","message":')  # a torn last write, after the prompt is known
    got, malformed, reason = read_title(t.write(tmp_path), True)
    assert got.title == "Real prompt after the garbage" and reason is None
    assert malformed == 5


def test_invalid_utf8_does_not_crash(tmp_path):
    path = Transcript().user("Prompt with caf\u00e9").write(tmp_path)
    with path.open("ab") as fh:
        fh.write(b'{"type":"ai-title","aiTitle":"bad \xff\xfe bytes"}\n')
        fh.write(b"\xc3\x28 garbage\n")
    got, malformed, _ = read_title(path, True)
    assert got.source == "ai-title" and got.title.startswith("bad ") and malformed == 1


def test_older_line_shape_without_entrypoint(tmp_path):
    # Claude Code 1.0.x: no entrypoint; summary lines with leafUuid at the top of the file.
    t = Transcript(entrypoint=None, version="1.0.44")
    t.summary("Payment Webhook Retry Logic Implementation")
    t.user("add retries").assistant("done")
    got = title_of(t, tmp_path)
    assert (got.source, got.title) == ("summary", "Payment Webhook Retry Logic Implementation")


def test_date_is_first_timestamp_in_utc(tmp_path):
    t = Transcript(start="2026-10-01T23:30:00+02:00")  # a non-UTC offset: converted
    t.user("late night prompt")
    assert title_of(t, tmp_path).date == "2026-10-01"
    t2 = Transcript(start="2026-10-01T23:30:00-02:00")
    t2.user("other side of the world")
    assert title_of(t2, tmp_path / "b").date == "2026-10-02"


def test_session_id_and_path(tmp_path):
    t = conversation(session_id="0b1f3c2e-4d5a-4e6f-8a7b-9c0d1e2f3a4b")
    got = title_of(t, tmp_path)
    assert got.session_id == "0b1f3c2e-4d5a-4e6f-8a7b-9c0d1e2f3a4b"
    assert got.path == str(tmp_path / f"{got.session_id}.jsonl")


# --- a whole project folder --------------------------------------------------------

def test_project_folder_yields_exactly_the_interactive_titles(tmp_path):
    project = tmp_path / "claude" / "projects" / "-home-alice-work-shop"
    conversation(session_id="s1-cli").title("custom-title", "Webhook retries").write(project)
    vscode = conversation(session_id="s2-vscode", entrypoint="claude-vscode")
    vscode.title("ai-title", "Fix rounding").write(project)
    conversation(session_id="s3-desktop", entrypoint="claude-desktop").write(project)
    conversation(session_id="s4-old", entrypoint=None, version="1.0.30").summary("Old summary").write(project)
    conversation(session_id="s5-sdk-cli", entrypoint="sdk-cli").title("ai-title", "nightly").write(project)
    conversation(session_id="s6-sdk-py", entrypoint="sdk-py").write(project)
    conversation(session_id="s7-sdk-ts", entrypoint="sdk-ts").write(project)
    Transcript(session_id="s8-commands").user("<command-name>/clear</command-name>").write(project)
    conversation(session_id="s9-garbage").raw("{oops").write(project)
    # Not sessions of this folder: a subagent transcript in a subfolder, memory notes.
    Transcript(session_id="agent-1").user("subagent task").write(project / "s1-cli" / "subagents")
    (project / "memory").mkdir()
    (project / "memory" / "MEMORY.md").write_text("- [Note](note.md)\n")

    titles, stats = read_project_titles(project, prompts=True)
    by_id = {t.session_id: (t.source, t.title) for t in titles}
    assert by_id == {
        "s1-cli": ("custom-title", "Webhook retries"),
        "s2-vscode": ("ai-title", "Fix rounding"),
        "s3-desktop": ("first-prompt", "Add a retry to the payment webhook handler"),
        "s4-old": ("summary", "Old summary"),
        "s9-garbage": ("first-prompt", "Add a retry to the payment webhook handler"),
    }
    assert stats == ReadStats(files=9, sessions=5, skipped_automated=3, skipped_empty=1, malformed_lines=1)


def test_missing_project_folder(tmp_path):
    assert read_project_titles(tmp_path / "nope") == ([], ReadStats())


# --- issue 16: a past prompt is not a title unless the user opts in --------------------------------

def test_by_default_no_title_is_taken_from_the_users_words(tmp_path):
    assert read_title(conversation().write(tmp_path / "a")) == (None, 0, "no title")
    t = conversation().title("last-prompt", "what the user typed last")
    assert read_title(t.write(tmp_path / "b")) == (None, 0, "no title")
    got = title_of(conversation().title("last-prompt", "typed").summary("A summary"), tmp_path / "c", False)
    assert (got.source, got.title) == ("summary", "A summary")
    got = title_of(conversation().title("ai-title", "Fix rounding"), tmp_path / "d", False)
    assert (got.source, got.title) == ("ai-title", "Fix rounding")


def test_project_folder_without_prompts_keeps_only_named_sessions(tmp_path):
    project = tmp_path / "p"
    conversation(session_id="s1").title("custom-title", "Webhook retries").write(project)
    conversation(session_id="s2").write(project)
    conversation(session_id="s3").title("last-prompt", "typed words").write(project)
    titles, stats = read_project_titles(project)
    assert [(t.session_id, t.source) for t in titles] == [("s1", "custom-title")]
    assert stats.skipped_empty == 2


def test_a_secret_at_the_title_limit_is_masked_before_the_cut(tmp_path):
    rng = random.Random(5)
    key = "".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(40))
    title = "x" * 180 + " " + key + " rest"  # the key straddles the 200-character limit
    got = title_of(conversation().title("custom-title", title), tmp_path)
    assert key[:12] not in got.title and len(got.title) <= 200
