"""A shipped collection's artefacts (its baseline, its questions per note) go with its own notes
folder or its name given as --collection, never with a folder of the user's that is merely named
like it (an outside tester: ``--notes /x/sample/notes`` was gated against
reports/baseline/sample.json, and the suggested --update replaced that committed file). Every
repair hint is the user's own command, all their options kept, with the flag added."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

from helpers.paths import EVAL_NOTES, EVAL_QUESTIONS, ROOT
from recall_eval.cli import main

COMMITTED = ROOT / "reports" / "baseline" / "sample.json"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def users_sample(tmp_path: Path) -> tuple[Path, Path]:
    """A user's notes in a folder whose parent is called ``sample``, and a set of theirs."""
    notes = tmp_path / "sample" / "notes"
    shutil.copytree(EVAL_NOTES, notes)
    questions = tmp_path / "mine.jsonl"
    shutil.copy(EVAL_QUESTIONS, questions)
    return notes, questions


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hint(output: str) -> list[str]:
    """The command a one-line error proposes, as arguments for the CLI (without ``recall-eval``)."""
    line = output.strip().splitlines()[-1]
    words = shlex.split(line[line.rindex("recall-eval "):])
    assert words[0] == "recall-eval"
    return ["--questions" if w == "-q" else w for w in words[1:]]


def same(args: list[str]) -> list[str]:
    return ["--questions" if w == "-q" else w for w in args]


def test_a_folder_named_like_a_shipped_collection_is_not_gated_on_its_baseline(tmp_path):
    notes, questions = users_sample(tmp_path)
    before = digest(COMMITTED)
    res = cli("regress", "--notes", str(notes), "-q", str(questions), "--model", "hash")
    assert res.exit_code == 1 and "--baseline" in res.output, res.output
    assert "reports/baseline" not in res.output and "not the ones the baseline was made on" not in res.output
    fix = hint(res.output)
    assert fix[:7] == same(["regress", "--notes", str(notes), "-q", str(questions), "--model", "hash"]), fix
    assert "--update" in fix and "--collection" not in fix
    made = Path(fix[fix.index("--baseline") + 1])
    assert not made.is_relative_to(ROOT)
    res = cli(*fix)
    assert res.exit_code == 0, res.output
    assert made.is_file() and json.loads(made.read_text(encoding="utf-8"))["model"]["model_id"] == "hash-256"
    # and --update without a baseline of the user's is refused, never the committed one rewritten
    res = cli("regress", "--notes", str(notes), "-q", str(questions), "--model", "hash", "--update")
    assert res.exit_code == 1 and "--baseline" in res.output, res.output
    assert digest(COMMITTED) == before


def test_the_no_baseline_hint_is_the_users_command_with_update(tmp_path):
    notes, questions = users_sample(tmp_path)
    mine = tmp_path / "mybase.json"
    args = ["regress", "--notes", str(notes), "-q", str(questions), "--model", "hash", "--baseline", str(mine)]
    res = cli(*args)
    assert res.exit_code == 1 and f"no baseline at {mine}" in res.output, res.output
    fix = hint(res.output)
    assert fix == same([*args, "--update"]), fix
    res = cli(*fix)
    assert res.exit_code == 0 and mine.is_file(), res.output


def test_the_damaged_baseline_hint_keeps_the_model(tmp_path):
    notes, questions = users_sample(tmp_path)
    mine = tmp_path / "mybase.json"
    mine.write_text("{not json", encoding="utf-8")
    args = ["regress", "--notes", str(notes), "-q", str(questions), "--model", "hash", "--baseline", str(mine)]
    res = cli(*args)
    assert res.exit_code == 1 and "is not a baseline" in res.output, res.output
    fix = hint(res.output)
    assert fix == same([*args, "--update"]), fix
    assert cli(*fix).exit_code == 0
    assert json.loads(mine.read_text(encoding="utf-8"))["model"]["model_id"] == "hash-256"


def test_compare_indexes_no_shipped_note_questions_into_a_users_folder(tmp_path):
    notes, questions = users_sample(tmp_path)
    lines = questions.read_text(encoding="utf-8").splitlines()
    sets = []
    for k in range(2):
        sets.append(tmp_path / f"set-{k}.jsonl")
        sets[-1].write_text("\n".join(lines[k::2]) + "\n", encoding="utf-8")
    res = cli("compare", "--notes", str(notes), "-q", str(sets[0]), "-q", str(sets[1]), "--models", "hash",
              "--pipelines", "bm25", "--no-memory", "--latency-questions", "2",
              "--reports", str(tmp_path / "reports"), "--home", str(tmp_path / "home"))
    assert res.exit_code == 0, res.output
    assert "datasets/sample/questions.jsonl" not in res.output and "note_questions absent" in res.output
    mismatched = tmp_path / "questions.jsonl"
    mismatched.write_text(json.dumps({"note": "no-such-note", "questions": ["how do I roll back?"]}) + "\n")
    res = cli("compare", "--notes", str(notes), "-q", str(sets[0]), "-q", str(sets[1]), "--models", "hash",
              "--note-questions", str(mismatched), "--reports", str(tmp_path / "reports"))
    assert res.exit_code == 1 and "names none of the notes" in res.output and "no-such-note" in res.output, res.output
    assert "ignored" not in res.output and "--no-note-questions" in res.output


def test_only_a_collections_own_folder_is_that_collection(tmp_path, monkeypatch):
    from recall_eval.datasets.collections import shipped_collection

    notes, _ = users_sample(tmp_path)
    assert shipped_collection(notes) is None
    assert shipped_collection(ROOT / "datasets" / "sample" / "notes") == "sample"
    monkeypatch.chdir(ROOT / "datasets" / "sample")
    assert shipped_collection(Path("notes")) == "sample"
    (tmp_path / "link").symlink_to(ROOT / "datasets" / "sample")
    assert shipped_collection(tmp_path / "link" / "notes") == "sample"
