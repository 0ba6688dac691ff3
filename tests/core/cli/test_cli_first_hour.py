"""What a new user's first hour showed in the CLI's own lines (an outside tester's walk)."""

from __future__ import annotations

import subprocess

from helpers.cli import run_cli
from helpers.fake_agent import fake_claude
from helpers.notes import write_note


def test_a_missing_memory_folder_is_said_once_per_command_with_what_to_do(tmp_path, recall_home, hash_model):
    """Every `recall index`, `install` and `questions` run printed "note: …/memory does not
    exist yet (memory); skipped", some twice, with no repair and nothing for a user without
    Claude Code. Once per command, with what to do."""
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    notes = tmp_path / "notes"
    write_note(notes, "deploy-freeze", "No deploys on Friday", "Production deploys stop Friday noon", "body")
    _record, env = fake_claude(tmp_path)
    asking = {**env, "RECALL_QUESTIONS_GENERATE": None}
    assert run_cli("index", str(notes), cwd=project, env=asking).returncode == 0
    for args, with_env in ((["index"], asking), (["install", "--skip-check", "--form", "command"], asking),
                           (["questions"], asking), (["questions", "on", "--agent", "claude"], asking),
                           (["questions", "run"], env)):
        out = run_cli(*args, cwd=project, env=with_env)
        assert out.returncode == 0, (args, out.stderr)
        lines = [ln for ln in (out.stdout + out.stderr).splitlines() if "memory" in ln and "note:" in ln]
        assert len(lines) == 1, (args, lines)
        assert "no Claude Code memory for this project yet" in lines[0], lines
        assert "Claude Code creates it when it saves its first memory" in lines[0]
        assert "`recall index DIR`" in lines[0]


def _readme_command_rows() -> dict[str, str]:
    """The README's command table: each row's top-level commands (`recall index …` / `recall stop`)."""
    import re

    from helpers.paths import ROOT

    rows: dict[str, str] = {}
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `recall "):
            head = line.split(" | ")[0]
            for name in re.findall(r"`recall ([a-z-]+)", head):
                rows[name] = line
    return rows


def test_the_readme_command_table_lists_every_command_and_says_what_index_reads():
    """The table left out `calibrate`, `questions` and `ui`, and said `recall index` with no
    folder reads "past conversations' titles" where --help said "shared rules and libraries":
    each said half of what it reads (the memory folder, [sources]' rules and libraries, and
    conversations' titles)."""
    from recall.cli import main

    rows = _readme_command_rows()
    assert set(main.commands) <= set(rows), sorted(set(main.commands) - set(rows))
    helped = " ".join(run_cli("index", "--help").stdout.split())
    for said in (rows["index"], helped):
        assert "memory folder" in said and "rules" in said and "libraries" in said, said
        assert "past conversations' titles" in said, said
