"""``recall-eval expand`` through its CLI: a fake Messages API over loopback HTTP (the
same boundary as the generate tests), the file import, and the refusals."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.fake_messages import serve
from helpers.notes import write_note
from recall.notes.questions import read_questions_file
from recall_eval.cli import main
from recall_eval.datasets.collections import collection_hash

STEMS = ["deploy-freeze", "decimal-money", "zeitzone-utc"]


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "memory"
    write_note(folder, "deploy-freeze", "No deploys on Friday", "Production deploys stop Friday noon",
               "We froze deploys after the outage of March; hotfixes need the on-call lead.")
    write_note(folder, "decimal-money", "Money is Decimal", "Amounts are Decimal, never float",
               "Use Decimal with explicit quantize for every amount.")
    write_note(folder, "zeitzone-utc", "タイムスタンプはUTC", "DBの時刻はUTCで保存する",
               "表示のときだけローカル時刻に変換する。")
    (folder / "MEMORY.md").write_text("- index of the notes\n", encoding="utf-8")  # not a note
    return folder


def answer_for(prompt: str, extra: str = "") -> str:
    """A well-behaved model's answer to each of the three prompts, inside a code fence:
    questions (one line per note shown), negatives, or restatements."""
    stems = re.findall(r"^### (.+)\.md$", prompt, flags=re.M)
    if "for which NONE of the notes is relevant" in prompt:  # recall/authoring/prompts/negatives.md
        lines = [json.dumps({"text": t, "lang": "en", "kind": "near-miss"}) for t in NEGATIVES]
    elif "restate its header" in prompt:  # recall/authoring/prompts/restate_notes.md
        lines = [json.dumps({"note": s, "restatements": [f"{s} を言い換えると"]}, ensure_ascii=False) for s in stems]
    else:
        lines = [json.dumps({"note": s, "questions": [f"when is {s} relevant?", f"{s} の件どうする？",
                                                       f"help me with {s}"]}, ensure_ascii=False)
                 for s in stems]
    return "\n".join(["Here you go:", "```jsonl", *lines, extra, "```"])


# The last one repeats a note's question word for word: it must be dropped as too close.
NEGATIVES = ["how do I profile a slow SQL query?", "which linter do we run on the frontend?",
             "thanks, go on", "help me with decimal-money"]


@pytest.fixture
def fake_api(monkeypatch):
    with serve(monkeypatch, answer_for) as state:
        yield state


def expand(*args: str):
    return CliRunner().invoke(main, ["expand", *args])


def test_api_backend_writes_a_sidecar_the_core_reads(fake_api, notes, hash_model):
    res = expand("--notes", str(notes), "--backend", "anthropic", "--api-model", "claude-test-model")
    assert res.exit_code == 0, res.output
    assert len(fake_api.requests) == 3  # questions, negatives, restatements
    body = fake_api.requests[0]["body"]
    assert fake_api.requests[0]["path"] == "/v1/messages" and body["model"] == "claude-test-model"
    prompt = body["messages"][0]["content"]
    assert all(f"### {s}.md" in prompt for s in STEMS) and "MEMORY" not in prompt
    words = " ".join(prompt.split())
    assert "write 8 short messages" in words and "about 30% of them in Japanese" in words
    assert "without naming the rule" in words and "pasted with a short question" in words
    assert "the first message of a piece of work" in words

    questions_file = notes / "questions.jsonl"
    got, problems = read_questions_file(questions_file, known=STEMS)
    assert problems == [] and sorted(got) == sorted(STEMS)
    assert got["zeitzone-utc"] == ["when is zeitzone-utc relevant?", "zeitzone-utc の件どうする？",
                                    "help me with zeitzone-utc"]
    if sys.platform != "win32":
        assert stat.S_IMODE(questions_file.stat().st_mode) == 0o600
    prov = json.loads((notes / "questions.provenance.json").read_text(encoding="utf-8"))
    assert prov["backend"] == "anthropic" and prov["model"] == "claude-test-model"
    # negatives beside it, the one that repeats a question dropped and counted
    from recall.ranking.negatives import read_negatives_file as read_negatives

    negs, problems = read_negatives(notes / "negatives.jsonl")
    assert problems == [] and [n.text for n in negs] == NEGATIVES[:3]
    nprov = json.loads((notes / "negatives.provenance.json").read_text(encoding="utf-8"))
    assert nprov["dropped_too_close_to_a_question"] == 1
    assert nprov["prompt"] == "recall/authoring/prompts/negatives.md"
    # restatements merged into each note's line, read by the core
    restated, _ = read_questions_file(questions_file, field="restatements")
    assert restated["zeitzone-utc"] == ["zeitzone-utc を言い換えると"]
    assert prov["prompt"] == "recall/authoring/prompts/expand_notes.md" and len(prov["prompt_hash"]) == 16
    assert prov["collection_hash"] == collection_hash(notes)
    assert (prov["n_per_note"], prov["share_ja"], prov["questions"], prov["missing"]) == (8, 0.3, 9, [])
    summary = json.loads(res.stdout)
    assert summary["expanded"] == 3 and summary["missing"] == []
    assert [p.name for p in notes.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_notes_left_out_are_asked_again_then_fail_the_run(fake_api, notes):
    fake_api.reply = (lambda prompt: answer_for(prompt.replace("### decimal-money.md", "")))
    res = expand("--notes", str(notes), "--backend", "anthropic", "--n-per-note", "2", "--share-ja", "0.5")
    assert res.exit_code == 1
    assert len(fake_api.requests) == 2  # the folder, then once more for the note left out
    retry = fake_api.requests[1]["body"]["messages"][0]["content"]
    assert "### decimal-money.md" in retry and "### deploy-freeze.md" not in retry
    words = " ".join(retry.split())
    assert "write 2 short messages" in words and "about 50% of them" in words
    assert "leaves out 1 of 3 notes" in res.output and "decimal-money" in res.output
    assert not (notes / "questions.jsonl").exists()


def test_import_of_a_hand_written_answer_records_who_wrote_it(notes, tmp_path):
    src = tmp_path / "answer.jsonl"
    src.write_text("\n".join([
        "",
        json.dumps({"note": "deploy-freeze", "questions": ["can I ship this on Friday afternoon?"]}),
        json.dumps({"note": "decimal-money", "questions": ["store the total as a float?", "  "]}),
        json.dumps({"note": "zeitzone-utc", "questions": ["DBに日本時間で保存していい？"]}, ensure_ascii=False),
    ]), encoding="utf-8")
    out = tmp_path / "out" / "exp.jsonl"
    res = expand("--notes", str(notes), "--import", str(src), "--written-by", "a helper session",
                 "--out", str(out))
    assert res.exit_code == 0, res.output
    got, problems = read_questions_file(out, known=STEMS)
    assert problems == [] and got["decimal-money"] == ["store the total as a float?"]
    prov = json.loads((tmp_path / "out" / "exp.provenance.json").read_text(encoding="utf-8"))
    assert prov["backend"] == "file" and prov["model"] is None
    assert prov["written_by"] == "a helper session" and prov["imported_from"] == str(src)
    assert not (notes / "questions.jsonl").exists()  # --out was honoured
    # the steps not taken are said with the prompt each needs, and what comes next (a first-hour tester, stop 58)
    assert "no negatives written: `--dry-run --prompt negatives`" in res.output
    assert "no restatements written: `--dry-run --prompt restatements`" in res.output
    assert f"next: `recall index {notes}`" in res.output


def test_an_answer_naming_an_unknown_note_fails_and_writes_nothing(fake_api, notes):
    ghost = json.dumps({"note": "no-such-note", "questions": ["what about it?"]})
    fake_api.reply = (lambda prompt: answer_for(prompt, extra=ghost))
    res = expand("--notes", str(notes), "--backend", "anthropic")
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    errors = [x for x in res.output.splitlines() if x.startswith("Error:")]
    assert len(errors) == 1 and res.output.rstrip().endswith(errors[0])
    assert "no note named 'no-such-note'" in errors[0] and "nothing written" in errors[0]
    assert sorted(p.name for p in notes.iterdir()) == ["MEMORY.md", *sorted(f"{s}.md" for s in STEMS)]


def test_a_malformed_line_fails_the_import(notes, tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"note": "deploy-freeze", "questions": "not a list"}\n{"note": "decimal-money"\n',
                   encoding="utf-8")
    res = expand("--notes", str(notes), "--import", str(src), "--written-by", "me")
    assert res.exit_code == 1
    assert f"{src}, line 1" in res.output and f"{src}, line 2" in res.output
    assert not (notes / "questions.jsonl").exists()


def test_an_existing_sidecar_is_kept_unless_forced(fake_api, notes):
    questions_file = notes / "questions.jsonl"
    before = json.dumps({"note": "deploy-freeze", "questions": ["hand-written"]}) + "\n"
    questions_file.write_text(before, encoding="utf-8")
    res = expand("--notes", str(notes), "--backend", "anthropic")
    assert res.exit_code == 1 and "exists; give --force" in res.output
    assert fake_api.requests == [] and questions_file.read_text(encoding="utf-8") == before
    res = expand("--notes", str(notes), "--backend", "anthropic", "--force")
    assert res.exit_code == 0, res.output
    got, _ = read_questions_file(questions_file, known=STEMS)
    assert sorted(got) == sorted(STEMS)


@pytest.mark.parametrize(("which", "words"), [("negatives", "decide when to stay silent"),
                                               ("restatements", "in one language to notes written")])
def test_dry_run_prints_each_prompt_an_import_takes(fake_api, notes, which, words):
    """Only the questions' prompt could be printed; --import-negatives and --import-restatements
    took answers to prompts no command showed (a first-hour tester's, stop 58)."""
    res = expand("--notes", str(notes), "--dry-run", "--prompt", which)
    assert res.exit_code == 0, res.output
    assert words in res.stdout and all(f"### {s}.md" in res.stdout for s in STEMS)
    assert fake_api.requests == []


def test_dry_run_prints_the_prompt_and_sends_nothing(fake_api, notes):
    res = expand("--notes", str(notes), "--dry-run", "--n-per-note", "4")
    assert res.exit_code == 0, res.output
    assert all(f"### {s}.md" in res.stdout for s in STEMS)
    assert "write 4 short messages" in res.stdout and "{notes}" not in res.stdout
    assert "DBの時刻はUTCで保存する" in res.stdout  # the notes themselves, inlined
    assert fake_api.requests == [] and not (notes / "questions.jsonl").exists()


def test_needs_a_backend_or_an_import(notes):
    res = expand("--notes", str(notes))
    assert res.exit_code == 1 and "give either --backend NAME or --import FILE" in res.output


def test_a_named_pipe_given_as_the_answer_is_one_line_not_a_wait(notes, tmp_path):
    """`--import FIFO` waited for a writer that never came (an outside tester's, stop 55)."""
    import os

    fifo = tmp_path / "answer.jsonl"
    os.mkfifo(fifo)
    res = expand("--notes", str(notes), "--import", str(fifo), "--written-by", "a helper", "--out",
                 str(tmp_path / "out" / "exp.jsonl"))
    assert res.exit_code == 1 and "not a file" in res.output and "Traceback" not in res.output, res.output
