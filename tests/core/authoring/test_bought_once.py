"""What an agent CLI wrote for a note's exact text is never bought twice.

A run drops the generated line of a note no longer in the folder: a `git checkout` of a branch
without some notes and back, an edit reverted, a note moved to another folder, and the agent
was paid again for text it had answered already. The answers are kept in RECALL_HOME by the
note's hash: a pending note whose text is known gets its line back with no request, and the
cost shown counts it free."""

from __future__ import annotations

import json
import shutil

from helpers.cli import run_cli
from helpers.fake_agent import fake_claude
from recall.notes.questions import read_questions_file

BOUGHT = "questions-bought.json"


def calls(record) -> list[str]:
    return [json.loads(line)["prompt"] for line in record.read_text().splitlines()] if record.exists() else []


def lines(folder) -> dict[str, dict]:
    return {o["note"]: o for o in map(json.loads, (folder / "questions.jsonl").read_text().splitlines())}


def test_a_note_that_comes_back_gets_its_questions_back_without_asking(folder, tmp_path, recall_home, hash_model):
    record, env = fake_claude(tmp_path)
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    first = lines(folder)
    asked = len(calls(record))
    # a checkout of a branch without decimal-money, where another note is added: a run drops its line
    aside = tmp_path / "aside.md"
    shutil.move(folder / "decimal-money.md", aside)
    (folder / "branch-note.md").write_text("---\nname: Branch\ndescription: only here\n---\nbody\n")
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    assert "decimal-money" not in lines(folder)  # the folder's file still drops an absent note's line
    asked = len(calls(record))
    # back on the first branch
    (folder / "branch-note.md").unlink()
    shutil.move(aside, folder / "decimal-money.md")
    estimate = run_cli("questions", env=env)
    assert estimate.returncode == 0 and "would be asked" not in estimate.stdout, estimate.stdout
    assert "1 note(s) get back" in estimate.stdout, estimate.stdout
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 0, out.stderr
    assert len(calls(record)) == asked  # nothing sent
    assert lines(folder)["decimal-money"] == first["decimal-money"]
    assert "indexed:" in out.stdout
    hit = run_cli("query", "--json", "zq decimal-money when does this apply?", cwd=folder)
    assert json.loads(hit.stdout)["ranked"][0]["path"].endswith("decimal-money.md")
    kept = recall_home / BOUGHT
    assert kept.stat().st_mode & 0o777 == 0o600
    assert "We froze deploys" not in kept.read_text() and str(folder) not in kept.read_text()


def test_an_edit_reverted_and_a_note_moved_to_another_folder_cost_nothing(folder, tmp_path, recall_home, hash_model):
    record, env = fake_claude(tmp_path)
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    note = folder / "deploy-freeze.md"
    before = note.read_text()
    note.write_text(before + "Hotfixes need the on-call lead.\n")
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    asked = len(calls(record))
    note.write_text(before)  # reverted
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    assert len(calls(record)) == asked
    assert lines(folder)["deploy-freeze"]["questions"] == ["zq deploy-freeze when does this apply?"]
    other = tmp_path / "other-project" / "memory"
    other.mkdir(parents=True)
    shutil.copy(folder / "zeitzone-utc.md", other / "zeitzone-utc.md")
    (other / "negatives.jsonl").write_text(json.dumps({"text": "rename a git branch?"}) + "\n")
    out = run_cli("questions", "run", str(other), env=env)
    assert out.returncode == 0, out.stderr
    assert len(calls(record)) == asked
    got, problems = read_questions_file(other / "questions.jsonl", field="restatements")
    assert problems == [] and got == {"zeitzone-utc": ["zeitzone-utc restated"]}


def test_a_secret_in_what_the_agent_wrote_is_kept_masked(folder, tmp_path, recall_home, hash_model):
    secret = "ghp_" + "QnAb12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"
    record, env = fake_claude(tmp_path)
    agent = tmp_path / "bin" / "claude"
    agent.write_text(agent.read_text().replace('" when does this apply?"', f'" token {secret}?"'))
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    assert secret not in (folder / "questions.jsonl").read_text()
    assert secret not in (recall_home / BOUGHT).read_text()


def test_a_damaged_store_costs_a_request_and_one_warning_never_the_run(folder, tmp_path, recall_home, hash_model):
    record, env = fake_claude(tmp_path)
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    aside = tmp_path / "aside.md"
    shutil.move(folder / "decimal-money.md", aside)
    (folder / "branch-note.md").write_text("---\nname: Branch\ndescription: only here\n---\nbody\n")
    assert run_cli("questions", "run", str(folder), env=env).returncode == 0
    (recall_home / BOUGHT).write_text('{"broken": ')
    (folder / "branch-note.md").unlink()
    shutil.move(aside, folder / "decimal-money.md")
    asked = len(calls(record))
    out = run_cli("questions", "run", str(folder), env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert len(calls(record)) == asked + 2  # its questions and restatements asked for again
    assert len([line for line in out.stderr.splitlines() if BOUGHT in line]) == 1, out.stderr
    assert "decimal-money" in lines(folder)
    assert "decimal-money" in json.dumps(lines(folder)) and json.loads((recall_home / BOUGHT).read_text())
