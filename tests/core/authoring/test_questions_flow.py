"""The recommended flow's parts that need no agent: which notes are pending, what a run would
cost, how answers are read and written where recall reads them, consent, and the plugin's
option. (The agents themselves, the real Claude Code, Codex and Gemini CLIs, are tests/e2e/test_agent_questions.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.agents import plugin_installed_now
from helpers.cli import run_cli
from helpers.daemon import Daemons, refreshes_done
from helpers.fake_agent import fake_claude
from helpers.notes import write_note
from helpers.paths import ROOT
from recall.authoring import answers, notegen
from recall.config.load import load_config
from recall.notes.files import parse_note
from recall.notes.questions import read_questions_file
from recall.ranking.negatives import read_negatives_file


def stems(paths):
    return sorted(p.stem for p in paths)


def test_new_notes_are_pending_then_only_changed_ones(folder):
    state = notegen.folder_state(folder)
    assert stems(state.notes) == stems(state.pending) == ["decimal-money", "deploy-freeze", "zeitzone-utc"]
    hashes = {p.stem: notegen.note_hash(p) for p in state.pending}
    notegen.write_questions(folder, {s: [f"q {s}"] for s in hashes}, {"zeitzone-utc": ["Timestamps are UTC"]},
                            hashes, "claude")
    assert notegen.folder_state(folder).pending == []
    with open(folder / "deploy-freeze.md", "a", encoding="utf-8") as fh:
        fh.write("Hotfixes need the on-call lead.\n")
    write_note(folder, "new-note", "New", "A new note", "body")
    assert stems(notegen.folder_state(folder).pending) == ["deploy-freeze", "new-note"]


def test_lines_written_by_hand_or_by_recall_eval_are_left_alone(folder):
    (folder / "questions.jsonl").write_text(json.dumps({"note": "deploy-freeze", "questions": ["mine"]}) + "\n")
    (folder / "questions.jsonl").chmod(0o600)  # the user's private file (under umask 022 it was 0644: kept so)
    state = notegen.folder_state(folder)
    assert stems(state.pending) == ["decimal-money", "zeitzone-utc"]
    hashes = {p.stem: notegen.note_hash(p) for p in state.pending}
    notegen.write_questions(folder, {"decimal-money": ["float for money?"], "zeitzone-utc": ["store local time?"]},
                            {}, hashes, "codex")
    read, problems = read_questions_file(folder / "questions.jsonl", known=stems(state.notes))
    assert problems == []
    assert read == {"deploy-freeze": ["mine"], "decimal-money": ["float for money?"],
                    "zeitzone-utc": ["store local time?"]}
    assert (folder / "questions.jsonl").stat().st_mode & 0o777 == 0o600


def test_a_removed_notes_generated_line_goes_with_it(folder):
    state = notegen.folder_state(folder)
    hashes = {p.stem: notegen.note_hash(p) for p in state.pending}
    notegen.write_questions(folder, {s: ["q"] for s in hashes}, {}, hashes, "claude")
    (folder / "decimal-money.md").unlink()
    write_note(folder, "new-note", "New", "A new note", "body")
    notegen.write_questions(folder, {"new-note": ["n"]}, {}, {"new-note": notegen.note_hash(folder / "new-note.md")},
                            "claude")
    _, problems = read_questions_file(folder / "questions.jsonl", known=stems(notegen.note_paths(folder)))
    assert problems == []  # no line for a note the folder no longer has


def test_a_renamed_note_keeps_its_generated_questions_without_asking_again(folder, recall_home, hash_model):
    state = notegen.folder_state(folder)
    hashes = {p.stem: notegen.note_hash(p) for p in state.pending}
    notegen.write_questions(folder, {s: [f"what about {s} then?"] for s in hashes}, {"deploy-freeze": ["金曜は凍結"]},
                            hashes, "claude")
    (folder / "deploy-freeze.md").rename(folder / "Deploy-Freeze.md")  # a case-only rename
    (folder / "zeitzone-utc.md").rename(folder / "utc-timestamps.md")
    assert notegen.folder_state(folder).pending == []  # nothing to pay for again

    out = run_cli("index", str(folder))
    assert out.returncode == 0 and "no note named" not in out.stderr, out.stderr
    found = run_cli("query", "what about deploy-freeze then?", "--json")
    assert found.returncode == 0, found.stderr
    assert "Deploy-Freeze.md" in found.stdout

    # the next write (another note's) keeps the renamed notes' lines, under their new names
    write_note(folder, "new-note", "New", "A new note", "body")
    notegen.write_questions(folder, {"new-note": ["n"]}, {}, {"new-note": notegen.note_hash(folder / "new-note.md")},
                            "claude")
    lines, problems = read_questions_file(folder / "questions.jsonl", known=stems(notegen.note_paths(folder)))
    assert problems == []
    assert lines["Deploy-Freeze"] == ["what about deploy-freeze then?"]
    assert lines["utc-timestamps"] == ["what about zeitzone-utc then?"]
    assert read_questions_file(folder / "questions.jsonl", field="restatements")[0]["Deploy-Freeze"] == ["金曜は凍結"]


def test_a_rename_is_followed_only_when_the_content_names_one_note(folder):
    state = notegen.folder_state(folder)
    hashes = {p.stem: notegen.note_hash(p) for p in state.pending}
    notegen.write_questions(folder, {s: ["q"] for s in hashes}, {}, hashes, "claude")
    body = (folder / "deploy-freeze.md").read_bytes()
    (folder / "deploy-freeze.md").unlink()
    (folder / "copy-one.md").write_bytes(body)
    (folder / "copy-two.md").write_bytes(body)  # two notes with its content: neither is taken for it
    (folder / "decimal-money.md").rename(folder / "money.md")
    with open(folder / "money.md", "a", encoding="utf-8") as fh:  # renamed and edited: a new note
        fh.write("And round half even.\n")
    state = notegen.folder_state(folder)
    assert stems(state.pending) == ["money"]
    assert stems(state.bought) == ["copy-one", "copy-two"]  # its text answered before: given back, not bought again


def test_answers_are_read_leniently_and_negatives_appended_where_recall_reads_them(folder):
    raw = ("Here you go:\n```jsonl\n"
           + json.dumps({"note": "deploy-freeze", "questions": ["can I ship on Friday?", "can I ship on Friday?"]})
           + "\n" + json.dumps({"note": "nope", "questions": ["x"]}) + "\n{broken\n```\n")
    got, problems = answers.parse_per_note(raw, ["deploy-freeze"], "questions", "answer")
    assert got == {"deploy-freeze": ["can I ship on Friday?"]} and len(problems) == 2
    negs, problems = answers.parse_negatives(
        "\n".join(json.dumps({"text": t, "lang": "en", "kind": "general"}) for t in ["rename a branch?", "thanks"]),
        "answer")
    assert problems == [] and [n["text"] for n in negs] == ["rename a branch?", "thanks"]
    notegen.append_negatives(folder, negs, "claude")
    notegen.append_negatives(folder, negs[:1], "claude")
    found, problems = read_negatives_file(folder / "negatives.jsonl")
    assert problems == [] and [n.text for n in found] == ["rename a branch?", "thanks", "rename a branch?"]


def test_a_secret_in_a_note_never_reaches_the_prompt(folder):
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4
    write_note(folder, "api-key", "The staging key", "Where the staging key lives", f"ANTHROPIC_API_KEY={key}")
    prompt = notegen.expand_prompt(notegen.folder_state(folder).pending)
    assert "### api-key.md" in prompt and key not in prompt and key[:20] not in prompt



def test_a_secret_in_a_file_name_never_reaches_the_prompt_and_the_answer_still_finds_its_note(folder):
    secret = "ghp_" + "QnAb12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"
    write_note(folder, f"deploy-token={secret}", "Deploy token", "Where the deploy token lives", "In the vault.")
    pending = notegen.folder_state(folder).pending
    prompt = notegen.expand_prompt(pending)
    assert secret not in prompt and "### deploy-token=[REDACTED].md" in prompt
    answer = json.dumps({"note": "deploy-token=[REDACTED]", "questions": ["where is the deploy token kept?"]})
    got, problems = answers.parse_per_note(answer, [p.stem for p in pending], "questions", "test")
    assert problems == [] and got == {f"deploy-token={secret}": ["where is the deploy token kept?"]}


def test_the_cost_is_estimated_from_the_prompts_that_would_be_sent(folder):
    state = notegen.folder_state(folder)
    cost = notegen.cost(state, batch_notes=20)
    assert cost.requests == 3  # questions, restatements, negatives
    prompt = notegen.expand_prompt(state.pending)
    assert cost.input_tokens > notegen.estimate_tokens(prompt) > 0
    assert "We froze deploys" in prompt and "### zeitzone-utc.md" in prompt and "MEMORY" not in prompt
    assert notegen.cost(notegen.folder_state(folder), batch_notes=1).requests == 7  # 3 x 2 + negatives
    assert notegen.estimate_tokens("表示のときだけ") == 7 and notegen.estimate_tokens("abcdefgh") == 2


def test_a_prompt_shows_a_note_as_it_is_now_even_edited_to_the_same_size_and_time(folder):
    note = folder / "deploy-freeze.md"
    before = notegen.expand_prompt([note])
    st = note.stat()
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("We froze deploys", "We thawed deploy"), encoding="utf-8")  # same length
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert note.stat().st_size == st.st_size and note.stat().st_mtime_ns == st.st_mtime_ns
    after = notegen.expand_prompt([note])
    assert "We froze deploys" in before and "We thawed deploy" in after and "We froze deploys" not in after


# 3 prompts of 1,000 tokens in all, 600 out. Per model request each CLI adds its own tokens
# (measured by bench/bench_questions.py): Claude Code with recall's flags ~500, Codex ~10,000;
# Gemini CLI ~10,000, and with no model named a router request first (~1,000, and the prompt again).
@pytest.mark.parametrize(("name", "model", "asked", "tokens_in"), [
    ("claude", "", "3 time(s),", 1_000 + 3 * 500),
    ("codex", "", "3 time(s),", 1_000 + 3 * 10_000),
    ("gemini", "", "3 time(s) (6 model requests),", 2 * 1_000 + 3 * (1_000 + 10_000)),
    ("gemini", "gemini-2.5-flash", "3 time(s),", 1_000 + 3 * 10_000),
])
def test_the_cost_shown_counts_each_agents_own_tokens_per_request(name, model, asked, tokens_in):
    from recall.authoring.agentcli import Agent, describe

    line = describe(notegen.Cost(requests=3, input_tokens=1_000, output_tokens=600), 2, Agent(name, name, model))
    assert line.startswith(f"2 new or changed note(s): {name} would be asked {asked} ")
    assert f"about {tokens_in + 600:,} tokens ({tokens_in:,} in, 600 out)" in line, line
    assert "own instructions" not in line
    unknown = describe(notegen.Cost(requests=3, input_tokens=1_000, output_tokens=600), 2, None)
    assert "about 1,600 tokens (1,000 in, 600 out, plus the agent's own instructions per request)" in unknown


def test_nothing_is_sent_before_consent_and_consent_is_written_once(folder, tmp_path, recall_home, hash_model):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    agent = fake_bin / "claude"  # never run here: only found on PATH
    agent.write_text("#!/bin/sh\nexit 3\n")
    agent.chmod(0o755)
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"}
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 1 and "nothing is sent" in out.stderr and "`recall questions on`" in out.stderr
    shown = run_cli("index", str(folder), env=env)
    assert shown.returncode == 0 and "3 new or changed note(s): claude would be asked 3 time(s)" in shown.stderr
    assert "`recall questions on` allows it" in shown.stderr
    assert not (folder / "questions.jsonl").exists()
    on = run_cli("questions", "on", "--agent", "claude", env=env)
    assert on.returncode == 0 and "tokens" in on.stdout
    config = tomllib.loads((recall_home / "config.toml").read_text())
    assert config["questions"]["generate"] == "claude"
    assert (recall_home / "config.toml").stat().st_mode & 0o777 == 0o600
    assert run_cli("questions", "off").returncode == 0
    assert load_config().questions.generate == "off"


def test_off_in_the_users_file_stands_over_the_environment(folder, tmp_path, recall_home, hash_model):
    """`recall questions off` said the notes would no longer go out, while
    RECALL_QUESTIONS_GENERATE=claude kept sending them at each `recall index` (an outside
    tester's AI02). An "off" the user's file holds is not overridden by the environment, and
    a command whose setting the environment overrides says so."""
    from helpers.fake_agent import fake_claude

    record, env = fake_claude(tmp_path)
    off = run_cli("questions", "off", env=env)
    assert off.returncode == 0, off.stderr
    assert "generate = \"off\"" in run_cli("config", env=env).stdout
    assert run_cli("questions", "run", str(folder), env=env).returncode == 1
    indexed = run_cli("index", str(folder), env=env)
    assert indexed.returncode == 0 and "in the background" not in indexed.stdout, indexed.stdout
    assert not record.exists() and not (folder / "questions.jsonl").exists()  # nothing was sent
    on = run_cli("questions", "on", "--agent", "claude", env={**env, "RECALL_QUESTIONS_GENERATE": "off"})
    assert on.returncode == 1 and "RECALL_QUESTIONS_GENERATE=off in this environment wins" in on.stderr, on.stderr


def test_an_agent_that_fails_is_one_line_and_nothing_is_written(folder, tmp_path, recall_home, hash_model):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    agent = fake_bin / "claude"
    agent.write_text("#!/bin/sh\necho 'not logged in' >&2\nexit 3\n")
    agent.chmod(0o755)
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "RECALL_QUESTIONS_GENERATE": "claude"}
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 1 and "claude exited 3: not logged in" in out.stderr and "Traceback" not in out.stderr
    assert not (folder / "questions.jsonl").exists()


def test_the_setting_names_an_agent_or_says_what_it_takes(recall_home, monkeypatch):
    monkeypatch.setenv("RECALL_QUESTIONS_GENERATE", "gemini")
    assert load_config().questions.generate == "gemini"
    monkeypatch.setenv("RECALL_QUESTIONS_GENERATE", "chatgpt")
    out = run_cli("config")
    assert out.returncode == 1 and "generate must be one of ask, off, auto, claude, codex, gemini" in out.stderr


def test_a_note_written_as_the_skill_says_has_its_questions(tmp_path):
    """skills/recall/SKILL.md asks Claude to add `questions:` in the user's own words, an
    opening and a terse one among them; its own example parses into those questions."""
    skill = (ROOT / "skills" / "recall" / "SKILL.md").read_text(encoding="utf-8")
    assert "questions:" in skill and "first message of a piece of work" in skill and "in a hurry" in skill
    example = skill.split("```markdown\n", 1)[1].split("```", 1)[0]
    questions = parse_note(tmp_path / "friday.md", (example + "\nbody\n").encode()).questions
    assert len(questions) == 4 and any(len(q.split()) <= 4 and q == q.lower() for q in questions)
    assert any("金曜" in q for q in questions)


def plugin(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "recall_plugin.py"), *args],
                          input=json.dumps({"cwd": env["HOME"]}), capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)


@pytest.fixture
def plugin_data(tmp_path) -> Iterator[Path]:
    """An installed plugin's data folder. Each session start runs a background refresh, which
    starts a daemon in its home (``data/home``): waited for, then killed, so none outlives the test."""
    data = tmp_path / "data"
    (data / "home").mkdir(parents=True)
    yield data
    refreshes_done(data)
    Daemons(data / "home", tmp_path).kill_all()


def test_the_plugin_shows_the_cost_once_while_its_option_is_ask(tmp_path, plugin_data):
    data = plugin_data
    (data / "env.json").write_text(plugin_installed_now(sys.executable))
    (data / "home" / "questions-offer.txt").write_text("3 new or changed note(s): claude would be asked 3 time(s), "
                                                       "about 2,000 tokens\n")
    env = {"CLAUDE_PLUGIN_DATA": str(data), "RECALL_PLUGIN_PYTHON": sys.executable, "PYTHONPATH": str(ROOT),
           "HOME": str(tmp_path), "RECALL_MODEL": "hash",  # the background `recall index` it starts: light
           "CLAUDE_PLUGIN_OPTION_GENERATE_QUESTIONS": "ask", "RECALL_GENERATING": ""}
    first = plugin("session-start", env=env)
    assert first.returncode == 0
    message = json.loads(first.stdout)["systemMessage"]
    assert "about 2,000 tokens" in message and "generate_questions = yes" in message
    assert plugin("session-start", env=env).stdout == ""  # once
    (data / "home" / "questions-offer.shown").unlink()
    assert plugin("session-start", env={**env, "CLAUDE_PLUGIN_OPTION_GENERATE_QUESTIONS": "no"}).stdout == ""
    generating = plugin("session-start", env={**env, "RECALL_GENERATING": "1"})
    assert generating.returncode == 0 and generating.stdout == ""


def test_recall_install_asks_once_with_the_cost(folder, tmp_path, recall_home, hash_model):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "claude").write_text("#!/bin/sh\nexit 3\n")
    (fake_bin / "claude").chmod(0o755)
    env = {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    assert run_cli("index", str(folder), env=env).returncode == 0
    out = run_cli("install", "--project", "--form", "command", "--skip-check", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("questions:"))
    assert "3 new or changed note(s)" in line and "tokens" in line and "`recall questions on --agent claude`" in line
    run_cli("questions", "off")
    out = run_cli("install", "--project", "--form", "command", "--skip-check", cwd=project, env=env)
    assert "questions:" not in out.stdout


def test_a_run_asks_from_an_empty_folder_and_indexes_what_comes_back(folder, tmp_path, recall_home, hash_model):
    record, env = fake_claude(tmp_path)
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 0, out.stderr
    assert "questions for 3 note(s) (3), 2 negatives" in out.stdout and "indexed:" in out.stdout
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(calls) == 3
    for call in calls:
        assert os.path.basename(call["cwd"]).startswith("gen-") and call["files"] == []
        # Not in a shared /tmp, whose CLAUDE.md anyone may write (stop 46): RECALL_HOME's run folder,
        # every folder above it this user's; the CLI's temporary files in another of its folders.
        run = recall_home.resolve() / "run"
        assert Path(call["cwd"]).parent == run and Path(call["tmpdir"]).parent == run
        assert oct(run.stat().st_mode & 0o777) == "0o700"
        assert call["generating"] == "1" and str(folder) not in call["cwd"]
        assert call["argv"][:3] == ["-p", "--output-format", "json"] and ["--tools", ""] == call["argv"][3:5]
        assert call["argv"][call["argv"].index("--setting-sources") + 1] == "user"  # no project CLAUDE.md
        assert "We froze deploys" in call["prompt"] and str(folder) not in call["prompt"]
    hit = run_cli("query", "--json", "zq decimal-money when does this apply?", cwd=folder)
    assert json.loads(hit.stdout)["ranked"][0]["path"].endswith("decimal-money.md")
    again = run_cli("questions", "run", str(folder), env=env)
    assert again.returncode == 0 and len(record.read_text().splitlines()) == 3  # nothing pending: nothing asked


@pytest.mark.process
def test_the_daemons_watcher_starts_a_run_for_a_saved_note(folder, tmp_path, recall_home, hash_model, daemons):
    record, env = fake_claude(tmp_path)
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text('model = "hash"\n[watch]\nenabled = true\ndebounce_ms = 50\n')
    assert run_cli("index", str(folder), env=env).returncode == 0  # allowed: a run starts in the background
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and notegen.folder_state(folder).pending:
        time.sleep(0.2)
    assert notegen.folder_state(folder).pending == []
    daemons.start(**env)
    write_note(folder, "saved-later", "Retries", "Retry idempotent calls only", "Never retry a POST blindly.")
    while time.monotonic() < deadline and not (record.exists() and "saved-later" in record.read_text()):
        time.sleep(0.2)
    lines = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
    while time.monotonic() < deadline and "saved-later" not in {o["note"] for o in lines}:
        time.sleep(0.2)
        lines = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
    asked = [json.loads(line)["prompt"] for line in record.read_text().splitlines()]
    assert "saved-later" in {o["note"] for o in lines}
    assert re.findall(r"^### (.+)\.md$", asked[-2], flags=re.M) == ["saved-later"]  # only the new note


def test_lines_recall_cannot_read_are_kept_when_it_writes_and_u2028_splits_no_line(folder):
    """A hand-written line with a typo, one nested 100,000 deep, and a question holding U+2028:
    writing another note's questions keeps the first two as written, and the third is read."""
    target = folder / "questions.jsonl"
    odd = json.dumps({"note": "decimal-money", "questions": ["money\u2028in cents?"]}, ensure_ascii=False)
    target.write_text('{"note": "zeitzone-utc", "questions": ["typo"}\n' + "[" * 100_000 + "\n" + odd + "\n",
                      encoding="utf-8")
    notegen.write_questions(folder, {"deploy-freeze": ["can I deploy now?"]}, {}, {"deploy-freeze": "h"}, "test")
    text = target.read_text(encoding="utf-8")
    assert '{"note": "zeitzone-utc", "questions": ["typo"}' in text and "[" * 100_000 in text
    got, problems = read_questions_file(target)
    assert got["decimal-money"] == ["money in cents?"] and got["deploy-freeze"] == ["can I deploy now?"]
    assert len(problems) == 2 and all("line skipped" in p.message for p in problems), problems


def test_consent_withdrawn_during_a_run_stops_it_before_the_next_request(folder, tmp_path, recall_home, hash_model):
    """An outside tester ran `recall questions off` while a run was under way: six more prompts
    with the notes' text went out, and the answers were written and indexed."""
    record, env = fake_claude(tmp_path)
    env.pop("RECALL_QUESTIONS_GENERATE")
    recall_home.mkdir(parents=True, exist_ok=True)
    config = recall_home / "config.toml"
    config.write_text('model = "hash"\n[questions]\ngenerate = "claude"\nbatch_notes = 1\n')
    # the user says no while the first request is out
    agent = tmp_path / "bin" / "claude"
    agent.write_text(agent.read_text().replace(
        "prompt = sys.stdin.read()\n",
        f"prompt = sys.stdin.read()\nopen({str(config)!r}, 'w').write('model = \"hash\"\\n[questions]\\n"
        "generate = \"off\"\\n')\n", 1))
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 1 and "consent was withdrawn" in out.stderr and "Traceback" not in out.stderr
    assert len(record.read_text().splitlines()) == 1  # the request under way; none after it
    assert not (folder / "questions.jsonl").exists() and not (folder / "negatives.jsonl").exists()


def test_a_refusal_is_said_and_its_notes_are_not_sent_again_and_again(folder, tmp_path, recall_home, hash_model):
    """An outside tester's CLI answered prose ("I'm sorry, but I can't help"): the run said
    "questions for 0 note(s)", rc 0, and every later run sent every note in full again. Runs in
    the background (as `recall index` starts them) give a note up after two; a run the user
    starts asks again."""
    record, env = fake_claude(tmp_path)
    background = {**env, "RECALL_GENERATING": "1"}
    agent = tmp_path / "bin" / "claude"
    refusal = 'lines = ["I am sorry, but I cannot help with that."]\nprint(json.dumps({"type"'
    agent.write_text(agent.read_text().replace('print(json.dumps({"type"', refusal, 1))
    first = run_cli("questions", "run", str(folder), env=background)
    assert first.returncode == 0 and "3 of 3 note(s) got no questions from claude" in first.stdout + first.stderr
    run_cli("questions", "run", str(folder), env=background)
    calls = len(record.read_text().splitlines())
    third = run_cli("questions", "run", str(folder), env=background)
    assert len(record.read_text().splitlines()) == calls and "nothing to send" in third.stderr  # given up
    assert "3 note(s) got nothing from the agent in 2 tries" in run_cli("questions", env=env).stdout
    (folder / "decimal-money.md").write_text((folder / "decimal-money.md").read_text() + "\nEdited.\n")
    run_cli("questions", "run", str(folder), env=background)
    asked = [json.loads(line)["prompt"] for line in record.read_text().splitlines()[calls:]]
    assert asked and all("Money is Decimal" in p and "No deploys on Friday" not in p for p in asked)
    calls = len(record.read_text().splitlines())
    mine = run_cli("questions", "run", str(folder), env=env)  # the user asks: the notes given up are asked again
    asked = [json.loads(line)["prompt"] for line in record.read_text().splitlines()[calls:]]
    assert "asking again" in mine.stderr and any("No deploys on Friday" in p for p in asked)


def test_an_agent_that_did_not_get_to_answer_gives_no_note_up(folder, tmp_path, recall_home, hash_model):
    """Two runs whose agent exited with an error (rate-limited, logged out) gave every note up for
    good: `recall questions` said "nothing to send" over an empty questions file, and the repair
    it printed, `recall questions run`, did nothing (an outside tester's AD02). Such a failure
    costs no note a try: the background waits it out, a run the user starts asks at once."""
    record, env = fake_claude(tmp_path)
    background = {**env, "RECALL_GENERATING": "1"}
    agent = tmp_path / "bin" / "claude"
    working = agent.read_text()
    agent.write_text(working.replace("stems = ", "print('API Error: 429 rate limited', file=sys.stderr)\n"
                                                "sys.exit(1)\nstems = ", 1))
    for _ in range(2):
        out = run_cli("questions", "run", str(folder), env=env)
        assert out.returncode == 1 and "429 rate limited" in out.stderr and "recall questions run" in out.stderr
    calls = len(record.read_text().splitlines())
    waited = run_cli("questions", "run", str(folder), env=background)
    assert waited.returncode == 0 and "asked again in" in waited.stderr
    assert len(record.read_text().splitlines()) == calls  # the background waits: nothing sent
    from recall.authoring import tries

    pending = notegen.folder_state(folder).pending
    assert len(pending) == 3 and not any(tries.given_up(p) for p in pending)  # none given up
    agent.write_text(working)
    fixed = run_cli("questions", "run", str(folder), env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert len(read_questions_file(folder / "questions.jsonl")[0]) == 3


def test_a_folder_with_negatives_is_not_asked_for_more_at_each_edit(folder, tmp_path, recall_home, hash_model):
    """Every edit of a note sent another negatives request showing that note alone, and its
    answer was thrown away (an outside tester's AD03): negatives are asked for while a folder has
    none, as the README says; an edited note costs its questions and restatements only."""
    from recall.authoring.agentcli import Agent, agent_cost

    record, env = fake_claude(tmp_path)
    quoted = agent_cost(notegen.cost(notegen.folder_state(folder), batch_notes=8), Agent("claude", "claude")).total
    first = run_cli("questions", "run", str(folder), env=env)
    # the run's own line counts the agent's tokens per request, as the line consented to (AD04)
    assert first.returncode == 0 and f"about {quoted:,} tokens with claude" in first.stderr, first.stderr
    assert (folder / "negatives.jsonl").exists()
    calls = len(record.read_text().splitlines())
    (folder / "decimal-money.md").write_text((folder / "decimal-money.md").read_text() + "\nEdited.\n")
    assert notegen.cost(notegen.folder_state(folder), batch_notes=8).requests == 2
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    asked = [json.loads(line)["prompt"] for line in record.read_text().splitlines()[calls:]]
    assert len(asked) == 2 and not any("for which NONE" in p for p in asked)


def test_negatives_that_failed_are_asked_for_again_alone_then_given_up(folder, tmp_path, recall_home, hash_model):
    """An outside tester's agent refused one request, the negatives': the notes' questions were
    kept, and no later run ever asked for negatives again (nothing was pending)."""
    record, env = fake_claude(tmp_path)
    background = {**env, "RECALL_GENERATING": "1"}
    agent = tmp_path / "bin" / "claude"
    refuse = ('if "for which NONE" in prompt and os.path.exists({flag!r}):\n'
              '    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, '
              '"result": "I cannot help with that."}}))\n    sys.exit(0)\nstems = '
              ).format(flag=str(tmp_path / "refuse"))
    agent.write_text(agent.read_text().replace("stems = ", refuse, 1))
    (tmp_path / "refuse").touch()
    first = run_cli("questions", "run", str(folder), env=background)
    assert first.returncode == 0 and "0 negatives" in first.stdout, first.stderr
    assert len(read_questions_file(folder / "questions.jsonl")[0]) == 3  # the questions are kept
    assert not (folder / "negatives.jsonl").exists()
    asked = len(record.read_text().splitlines())
    assert notegen.cost(notegen.folder_state(folder), batch_notes=8).requests == 1  # the negatives alone

    (tmp_path / "refuse").unlink()
    second = run_cli("questions", "run", str(folder), env=background)
    assert second.returncode == 0 and "2 negatives" in second.stdout, second.stderr
    prompts = [json.loads(line)["prompt"] for line in record.read_text().splitlines()[asked:]]
    assert len(prompts) == 1 and "for which NONE" in prompts[0]  # the negatives alone, over every note
    assert all(name in prompts[0] for name in ("No deploys on Friday", "Money is Decimal", "タイムスタンプはUTC"))
    assert len(read_negatives_file(folder / "negatives.jsonl")[0]) == 2

    # refused every time: asked MAX_TRIES times, then not again until a note comes or goes
    (folder / "negatives.jsonl").unlink()
    (tmp_path / "refuse").touch()
    for _ in range(3):
        run_cli("questions", "run", str(folder), env=background)
    calls = len(record.read_text().splitlines())
    assert calls == asked + 1 + 2
    assert "nothing to send" in run_cli("questions", "run", str(folder), env=background).stderr
    write_note(folder, "new-note", "New", "A new note", "body")
    run_cli("questions", "run", str(folder), env=background)
    assert len(record.read_text().splitlines()) > calls


def test_the_negatives_request_of_a_large_folder_fits_its_budget_and_samples_every_topic(tmp_path):
    folder = tmp_path / "big"
    for i in range(600):
        write_note(folder, f"note-{i:03d}", f"Topic {i:03d}", f"rule number {i:03d}", "word " * 400)
    paths = sorted(notegen.note_paths(folder))
    prompt = notegen.negatives_prompt(paths, 400)
    assert notegen.estimate_tokens(prompt) <= notegen.NEGATIVES_PROMPT_TOKENS
    shown = [int(n) for n in re.findall(r"^### note-(\d+)\.md$", prompt, flags=re.M)]
    assert len(shown) >= 50 and shown[0] == 0 and shown[-1] >= 540  # from the first note to the last
    assert len({b - a for a, b in zip(shown, shown[1:])}) == 1  # evenly
    long = tmp_path / "long"
    write_note(long, "essay", "An essay", "long", "sentence. " * 2000)
    assert len(notegen.negatives_prompt(notegen.note_paths(long), 80)) < notegen.NEGATIVE_NOTE_CHARS + 4000


def test_a_background_run_that_failed_is_said_where_the_user_looks(recall_home, hash_model):
    """The failure of a run in the background was only in questions.log: `recall questions`
    went on saying "allowed; 5 new or changed note(s)"."""
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "questions.log").write_text("3 note(s): about 900 tokens with claude\n"
                                               "Error: claude exited 1: Invalid API key · Please run /login\n")
    out = run_cli("questions")
    assert "the last run in the background failed: claude exited 1: Invalid API key" in out.stdout
    (recall_home / "questions.log").write_text("indexed: added 0, changed 3, unchanged 0\n")
    assert "failed" not in run_cli("questions").stdout


def test_answers_that_could_not_be_kept_are_never_paid_for(folder, tmp_path, recall_home, hash_model):
    """With a folder where questions.jsonl goes, each run paid for two answers, then failed."""
    record, env = fake_claude(tmp_path)
    (folder / "questions.jsonl").mkdir()
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 1 and "is not a file recall can write: move it aside; nothing was sent" in out.stderr
    assert not record.exists()


def test_the_negatives_written_near_a_deleted_note_go_with_it(folder, tmp_path, recall_home, hash_model):
    """A negative is written on the notes' topics: the ones written near a note that was then
    deleted kept its words in negatives.jsonl for ever (stop 48, an outside tester's V03, the
    negatives' part). Each generated line names the note it is nearest; the next index drops the
    lines of a note that is gone; lines written by hand stay as written."""
    record, env = fake_claude(tmp_path)
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    path = folder / "negatives.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines and all(line.get("note") in {"deploy-freeze", "zeitzone-utc", "decimal-money"} for line in lines)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "a line someone wrote about money", "note": "decimal-money"}) + "\n")
    gone = lines[0]["note"]
    (folder / f"{gone}.md").unlink()
    assert run_cli("index", "-q", str(folder), env=env).returncode == 0
    left = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert not any(line.get("note") == gone and "note_hash" in line for line in left)
    assert [line for line in lines if line["note"] != gone] == [line for line in left if "note_hash" in line]
    assert "a line someone wrote about money" in path.read_text(encoding="utf-8")
