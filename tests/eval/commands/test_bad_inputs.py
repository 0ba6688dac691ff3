"""Bad input to recall-eval, each a class across the commands (an outside tester's): one line saying
what is wrong and the flag that repairs it, exit 1, nothing written. A question-per-note file with no
usable line, an output path checked only after the work, a file given where the notes folder goes, a
--pool error naming --collection, an empty --model, a --pipelines glob matching nothing, two runs in
one second sharing a report folder."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import EVAL_NOTES, EVAL_QUESTIONS
from recall_eval.cli import main

NO_MODEL = "no-such-model-is-loaded"  # a refusal after the work would say the model instead


def cli(*args: str | Path):
    return CliRunner().invoke(main, [str(a) for a in args])


def _refused(res, *said: str) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "Errno" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    for s in said:
        assert s in res.output, res.output
    return res.output


SCORING = ["run", "score", "regress", "tune"]


def _scoring(command: str, tmp_path: Path, *more: str | Path) -> list:
    extra = {"run": ["--reports", tmp_path / "r"], "regress": ["--baseline", tmp_path / "b.json", "--update"],
             "tune": ["--reports", tmp_path / "r", "--no-write"], "score": []}[command]
    return [command, "--notes", EVAL_NOTES, "-q", EVAL_QUESTIONS, "--model", NO_MODEL, *extra, *more]


@pytest.mark.parametrize("command", [*SCORING, "compare"])
@pytest.mark.parametrize("content", ["", "\n\n", '{"note": "no-such-note", "questions": ["where is it?"]}\n'])
def test_a_note_questions_file_with_nothing_usable_is_refused(tmp_path, command, content):
    f = tmp_path / "nq.jsonl"
    f.write_text(content)
    args = _scoring(command, tmp_path) if command != "compare" else \
        ["compare", "--notes", EVAL_NOTES, "-q", EVAL_QUESTIONS, "--models", NO_MODEL, "--reports", tmp_path / "r"]
    _refused(cli(*args, "--note-questions", f), f"--note-questions {f}", "--no-note-questions")
    assert not (tmp_path / "r").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("args, option", [
    (["versus", "{run}", "{run}", "--out", "{f}/v.md"], "--out"),
    (["generate", "--backend", "file", "--notes", str(EVAL_NOTES), "--from", str(EVAL_QUESTIONS),
      "--written-by", "me", "--out", "{f}/s.jsonl", "--check-model", NO_MODEL], "--out"),
    (["expand", "--notes", str(EVAL_NOTES), "--import", str(EVAL_QUESTIONS), "--written-by", "me",
      "--out", "{f}/q.jsonl"], "--out"),
    (["report", "--reports", "{f}"], "--reports"),
    (["score", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS), "--model", NO_MODEL, "--home", "{f}/h"],
     "--home"),
    (["compare", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS), "--models", NO_MODEL, "--home", "{f}"],
     "--home"),
])
def test_an_output_path_that_cannot_be_written_is_refused_before_the_work(tmp_path, args, option):
    """A file where the output's folder goes: refused before any run is read or any note is checked."""
    f = tmp_path / "afile"
    f.write_text("mine\n")
    run = tmp_path / "run-not-read"  # versus reads its runs after the check: none are needed
    run.mkdir()
    res = cli(*(a.replace("{f}", str(f)).replace("{run}", str(run)) for a in args))
    _refused(res, option, "is a file, not a folder", f"give {option} another path")
    assert f.read_text() == "mine\n"


@pytest.mark.parametrize("command", [*SCORING, "compare", "generate", "expand", "export-beir"])
def test_a_file_given_as_the_notes_folder_says_it_is_a_file(tmp_path, command):
    note = tmp_path / "afile.md"
    note.write_text("---\nname: x\n---\nbody\n")
    args = {"generate": ["generate", "--backend", "file", "--notes", note, "--out", tmp_path / "s.jsonl"],
            "expand": ["expand", "--notes", note, "--dry-run"],
            "compare": ["compare", "--notes", note, "-q", EVAL_QUESTIONS, "--models", NO_MODEL],
            "export-beir": ["export-beir", "--notes", note, "-q", EVAL_QUESTIONS, "--out", tmp_path / "b"],
            }.get(command) or _scoring(command, tmp_path)
    args = [note if a == EVAL_NOTES else a for a in args]
    out = _refused(cli(*args), f"--notes {note} is a file", "give --notes the folder")
    assert "no such notes folder" not in out


@pytest.mark.parametrize("pool", ["../x", "no-such-collection"])
def test_a_bad_pool_names_pool(tmp_path, pool):
    res = cli("tune", "--collection", "sample", "--model", NO_MODEL, "--reports", tmp_path / "r", "--no-write",
              "--pool", pool)
    out = _refused(res, f"--pool {pool!r}" if pool == "../x" else f"--pool {pool}")
    assert "--collection" not in out


@pytest.mark.parametrize("args, option", [
    (["score", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS)], "--model"),
    (["run", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS), "--reports", "{t}/r"], "--model"),
    (["clinc150", "--data", "{t}/none.json"], "--model"),
    (["compare", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS), "--models", "hash", "--reports", "{t}/r"],
     "--model"),
    (["generate", "--backend", "file", "--notes", str(EVAL_NOTES), "--out", "{t}/s.jsonl", "--from",
      str(EVAL_QUESTIONS), "--written-by", "me"], "--check-model"),
    (["expand", "--notes", str(EVAL_NOTES), "--backend", "anthropic", "--out", "{t}/q.jsonl"], "--api-model"),
    (["tune", "--collection", "sample", "--model", NO_MODEL, "--no-write", "--reports", "{t}/r"], "--tune-sets"),
])
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_value_is_refused_not_taken_for_the_default(tmp_path, args, option, empty):
    res = cli(*(a.replace("{t}", str(tmp_path)) for a in args), option, empty)
    _refused(res, option, "is empty")
    assert not (tmp_path / "r").exists() and not (tmp_path / "s.jsonl").exists()


def test_a_pipelines_glob_matching_nothing_is_refused_with_the_pipelines_there(tmp_path):
    res = cli("compare", "--collection", "sample", "--models", "hash", "--no-memory",
              "--reports", tmp_path / "r", "--pipelines", "bm25", "--pipelines", "nomatch*")
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    (out,) = [line for line in res.output.splitlines() if line.startswith("Error")]  # after its progress line
    assert "--pipelines 'nomatch*' matches no pipeline" in out and ", bm25," in out, out
    assert not (tmp_path / "r").exists()


class _Frozen(dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)


def test_two_identical_runs_in_one_second_keep_a_folder_each(tmp_path, monkeypatch):
    import recall_eval.reports.report as report

    monkeypatch.setattr(report.dt, "datetime", _Frozen)
    args = ["run", "--notes", EVAL_NOTES, "-q", EVAL_QUESTIONS, "--model", "hash", "--reports", tmp_path]
    for _ in range(2):
        assert (res := cli(*args)).exit_code == 0, res.output
    (home,) = (p.parent for p in tmp_path.glob("*/latest"))
    runs = sorted(p for p in home.iterdir() if p.is_dir())
    assert len(runs) == 2, runs
    ids = {json.loads((p / "results.json").read_text())["run_id"] for p in runs}
    assert ids == {p.name for p in runs}
    assert (home / "latest").read_text().strip() == runs[-1].name


def test_two_identical_tunes_in_one_second_keep_a_report_each(tmp_path, monkeypatch):
    import recall_eval.commands.tune as tune

    monkeypatch.setattr(tune.dt, "datetime", _Frozen)
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--no-write", "--reports", tmp_path]
    for _ in range(2):
        assert (res := cli(*args)).exit_code == 0, res.output
    reports = sorted((tmp_path / "sample").glob("tune-*.json"))
    assert len(reports) == 2, reports
    assert {json.loads(p.read_text())["run_id"] for p in reports} == {p.stem[len("tune-"):] for p in reports}
