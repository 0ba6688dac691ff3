"""Generation backends at their real boundaries: a fake Messages API over loopback HTTP,
a fake ``claude`` executable first on PATH, and the file import; plus the checks."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.fake_messages import serve
from helpers.paths import EVAL_NOTES as NOTES
from recall_eval.cli import main
from recall_eval.datasets.collections import collection_hash, load_questions
from recall_eval.generation.checks import LEAKAGE_THRESHOLD, normalise, parse_generated
from recall_eval.generation.prompting import template_hash
from recall_eval.text import content_words, detect_lang, overlap

LEAKY = ("Amounts of money are stored and computed as Decimal with explicit quantize, "
         "never as binary floating point")


def line(qid, kind, text, expected=(), lang="en"):
    return json.dumps({"id": qid, "kind": kind, "text": text, "expected": list(expected), "lang": lang},
                      ensure_ascii=False)


ANSWER = "\n".join([
    "```jsonl",
    line("g-01", "paraphrase", "That revision is already on main but has a typo, I'll fix it in place",
         ["never-edit-applied-migration"]),
    line("g-02", "paraphrase", LEAKY, ["decimal-not-float"]),
    line("g-03", "paraphrase", "VATの端数処理、全部足してから最後に一回だけやればいいよね？",
         ["tax-line-rounding"], "ja"),
    line("g-04", "paraphrase", "Which dashboard do I open when the queue backs up?", ["no-such-note"]),
    line("g-05", "unrelated", "thanks, go on"),
    line("g-06", "unrelated", "Thanks -- go on!"),  # same text once normalised
    "this line is prose, not JSON",
    '{"id": "g-07", "kind": "paraphrase", "text": "broken"',
    line("g-08", "unrelated", "What is a good recipe for banana bread?"),
    "```",
])
REWORDED = line("g-02", "paraphrase",
                "I'll keep the exchange-rate result as a plain Python number when I save the invoice total",
                ["decimal-not-float"])


# --- tokenisation and the leakage measure ---------------------------------------------


def test_content_words_and_language():
    assert content_words("The API is on main, and we use it") == {"api", "main", "use"}
    ja = content_words("税額は明細行ごとに丸める")
    assert {"税額", "明細", "細行"} <= ja and "ごと" not in ja  # hiragana-only bigrams dropped
    assert detect_lang("税額は明細行ごとに丸める (`line_tax()` を使う)") == "ja"
    assert detect_lang("Use line_tax() for VAT") == "en"
    score, shared = overlap(LEAKY, "Money is Decimal, never float\n" + LEAKY)
    assert score == 1.0 and "decimal" in shared
    assert overlap("thanks", "anything")[0] == 0.0


def test_parse_generated_is_lenient_line_by_line():
    parsed = parse_generated(ANSWER, "g")
    assert [q.id for q in parsed.questions] == ["g-01", "g-02", "g-03", "g-04", "g-05", "g-06", "g-08"]
    errors = [r["error"] for r in parsed.rejected]
    assert any("line 8" in e and "not a JSON object" in e for e in errors)
    assert any("line 9" in e and "not valid JSON" in e for e in errors)
    assert normalise("Thanks -- go on!") == normalise("thanks, go on")


# --- the file backend ------------------------------------------------------------------


def test_file_backend_imports_checks_and_writes_provenance(tmp_path):
    src = tmp_path / "written.jsonl"
    src.write_text(ANSWER, encoding="utf-8")
    out = tmp_path / "set" / "g.jsonl"
    res = CliRunner().invoke(main, ["generate", "--backend", "file", "--from", str(src), "--written-by",
                                    "a helper session", "--notes", str(NOTES), "--out", str(out),
                                    "--no-index-check"])
    assert res.exit_code == 0, res.output
    kept = load_questions(out)
    assert [q.id for q in kept] == ["g-01", "g-02", "g-03", "g-05", "g-08"]  # unknown id, dup dropped
    assert all("flags" not in json.loads(raw) for raw in out.read_text().splitlines())
    prov = json.loads((tmp_path / "set" / "g.provenance.json").read_text())
    assert prov["backend"] == "file" and prov["written_by"] == "a helper session"
    assert prov["prompt_hash"] == template_hash() and prov["collection_hash"] == collection_hash(NOTES)
    assert prov["spec"]["n_paraphrase"] == 20 and prov["actual"]["paraphrase"] == 3
    assert prov["actual"]["lang_share"] == {"en": 0.8, "ja": 0.2}
    checks = json.loads((tmp_path / "set" / "g.checks.json").read_text())
    by_id = {r["id"]: r for r in checks["lines"]}
    assert by_id["g-02"]["flags"] == ["leakage"] and by_id["g-02"]["leakage"] > LEAKAGE_THRESHOLD
    assert by_id["g-01"]["flags"] == [] and by_id["g-01"]["leakage"] < LEAKAGE_THRESHOLD
    assert checks["summary"] == {"kept": 5, "rejected": 3, "duplicates": 1, "flagged_leakage": 1,
                                 "flagged_near_note": 0, "reworded": 0}
    assert checks["duplicates"][0] == {"id": "g-06", "duplicate_of": "g-05", "text": "Thanks -- go on!"}


def test_near_note_check_flags_an_unrelated_line_that_is_a_note(tmp_path):
    grafana = (NOTES / "grafana-dashboards.md").read_text(encoding="utf-8").split("---")[-1].strip()
    src = tmp_path / "w.jsonl"
    src.write_text("\n".join([
        line("n-01", "paraphrase", "the revision is on main, fix the typo in place?",
             ["never-edit-applied-migration"]),
        line("n-02", "paraphrase", "store the exchange rate result as float", ["decimal-not-float"]),
        line("n-03", "paraphrase", "helm went bad in prod, how to go back", ["rollback-runbook"]),
        line("n-04", "unrelated", grafana),
        line("n-05", "unrelated", "What is a good recipe for banana bread?"),
    ]), encoding="utf-8")
    out = tmp_path / "n.jsonl"
    res = CliRunner().invoke(main, ["generate", "--backend", "file", "--from", str(src), "--written-by",
                                    "test", "--notes", str(NOTES), "--out", str(out),
                                    "--check-model", "hash"])
    assert res.exit_code == 0, res.output
    checks = json.loads((tmp_path / "n.checks.json").read_text())
    by_id = {r["id"]: r for r in checks["lines"]}
    assert by_id["n-04"]["flags"] == ["near_note"] and by_id["n-04"]["top_note"] == "grafana-dashboards"
    assert by_id["n-05"]["flags"] == []
    assert checks["near_note_threshold"] is not None


# --- the anthropic backend against a fake Messages API on loopback ------------------------


@pytest.fixture
def fake_api(monkeypatch):
    with serve(monkeypatch, lambda prompt: REWORDED if "REWRITE REQUEST" in prompt else ANSWER) as state:
        yield state.requests


def test_anthropic_backend_over_http_with_one_reword_round(fake_api, tmp_path):
    out = tmp_path / "api.jsonl"
    res = CliRunner().invoke(main, ["generate", "--backend", "anthropic", "--notes", str(NOTES),
                                    "--out", str(out), "--api-model", "claude-test-model",
                                    "--no-index-check"])
    assert res.exit_code == 0, res.output
    assert len(fake_api) == 2  # the set, then one reword round for the leaky line
    first = fake_api[0]
    assert first["path"] == "/v1/messages" and first["key"] == "sk-test-not-a-real-key"
    assert first["body"]["model"] == "claude-test-model"
    prompt = first["body"]["messages"][0]["content"]
    assert "### decimal-not-float.md" in prompt and "Write exactly 20 PARAPHRASE" in prompt
    assert "REWRITE REQUEST" in fake_api[1]["body"]["messages"][0]["content"]
    by_id = {q.id: q for q in load_questions(out)}
    assert by_id["g-02"].text.startswith("I'll keep the exchange-rate result")
    checks = json.loads((tmp_path / "api.checks.json").read_text())
    assert checks["reworded"] == ["g-02"] and checks["summary"]["flagged_leakage"] == 0
    prov = json.loads((tmp_path / "api.provenance.json").read_text())
    assert prov["backend"] == "anthropic" and prov["model"] == "claude-test-model"


def test_a_secret_in_a_note_never_reaches_the_generation_prompt(fake_api, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for f in NOTES.glob("*.md"):
        (notes / f.name).write_bytes(f.read_bytes())
    key = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 4
    token = "ghp_" + "Zx12Cv34Bn56Mq78Wr90Ty12Ui34Op56As"
    (notes / f"deploy-token={token}.md").write_text(
        f"---\nname: Staging key\ndescription: ANTHROPIC_API_KEY={key}\ntype: reference\n---\n"
        "CREATE USER deploy IDENTIFIED BY 'Tr0ub4dor-and-3';\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["generate", "--backend", "anthropic", "--notes", str(notes),
                                    "--out", str(tmp_path / "api.jsonl"), "--no-index-check"])
    assert res.exit_code == 0, res.output
    prompt = fake_api[0]["body"]["messages"][0]["content"]
    assert "### deploy-token=[REDACTED].md" in prompt and "### decimal-not-float.md" in prompt
    for secret in (key, key[:20], token, "Tr0ub4dor-and-3"):
        assert secret not in prompt


def test_anthropic_backend_needs_a_key(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    res = CliRunner().invoke(main, ["generate", "--backend", "anthropic", "--notes", str(NOTES),
                                    "--out", str(tmp_path / "x.jsonl"), "--no-index-check"])
    assert res.exit_code == 1 and "ANTHROPIC_API_KEY is not set" in res.output


# --- the claude-cli backend with a fake `claude` first on PATH ------------------------------

FAKE_CLAUDE = """#!{python}
import json, os, sys
prompt = sys.stdin.read()
reword = "REWRITE REQUEST" in prompt
with open(os.environ["FAKE_CLAUDE_LOG"], "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "files": os.listdir("."),
                          "reword": reword, "has_notes": "### rollback-runbook.md" in prompt}}) + "\\n")
if os.environ.get("FAKE_CLAUDE_FAIL"):
    sys.stderr.write("not logged in\\n")
    sys.exit(1)
answer = open(os.environ["FAKE_CLAUDE_REWORD" if reword else "FAKE_CLAUDE_ANSWER"]).read()
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": answer,
                  "session_id": "fake", "total_cost_usd": 0.0, "num_turns": 1}}))
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable), encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "answer.txt").write_text(ANSWER, encoding="utf-8")
    (tmp_path / "reword.txt").write_text(REWORDED, encoding="utf-8")
    log = tmp_path / "claude.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.setenv("FAKE_CLAUDE_ANSWER", str(tmp_path / "answer.txt"))
    monkeypatch.setenv("FAKE_CLAUDE_REWORD", str(tmp_path / "reword.txt"))
    return log


def test_claude_cli_backend_runs_headless_in_an_empty_folder(fake_claude, tmp_path):
    out = tmp_path / "cli.jsonl"
    res = CliRunner().invoke(main, ["generate", "--backend", "claude-cli", "--notes", str(NOTES),
                                    "--out", str(out), "--no-index-check"])
    assert res.exit_code == 0, res.output
    calls = [json.loads(x) for x in fake_claude.read_text().splitlines()]
    assert [c["reword"] for c in calls] == [False, True]
    # as `recall questions` runs it: no tools, no MCP servers, no saved session (an outside tester
    # found the harness's backend ran Claude Code with the user's tools and servers)
    assert calls[0]["argv"][:5] == ["-p", "--output-format", "json", "--tools", ""]
    assert {"--strict-mcp-config", "--no-session-persistence"} <= set(calls[0]["argv"])
    assert calls[0]["files"] == [] and calls[0]["has_notes"]  # context-free: only the prompt
    assert Path(calls[0]["cwd"]).resolve() != Path.cwd().resolve()
    assert {q.id for q in load_questions(out)} == {"g-01", "g-02", "g-03", "g-05", "g-08"}
    prov = json.loads((tmp_path / "cli.provenance.json").read_text())
    assert prov["backend"] == "claude-cli"


def test_claude_cli_failure_is_one_clear_line(fake_claude, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_CLAUDE_FAIL", "1")
    res = CliRunner().invoke(main, ["generate", "--backend", "claude-cli", "--notes", str(NOTES),
                                    "--out", str(tmp_path / "x.jsonl"), "--no-index-check"])
    assert res.exit_code == 1
    assert "claude exited 1: not logged in" in res.output and "Traceback" not in res.output


def test_a_named_pipe_given_as_the_answer_is_one_line_not_a_wait(tmp_path):
    """`--from FIFO` waited for a writer that never came (an outside tester's, stop 55)."""
    import os

    fifo = tmp_path / "answer.jsonl"
    os.mkfifo(fifo)
    res = CliRunner().invoke(main, ["generate", "--backend", "file", "--from", str(fifo), "--written-by", "a helper",
                                    "--notes", str(NOTES), "--out", str(tmp_path / "set" / "g.jsonl"),
                                    "--no-index-check"])
    assert res.exit_code == 1 and "not a file" in res.output and "Traceback" not in res.output, res.output
