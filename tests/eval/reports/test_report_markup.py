"""No text a run holds is markup in the Markdown the harness writes: an outside tester's
results.json (a teammate's, re-rendered), a dataset's `lang`, a notes folder, a question file's
name or a run's path put `<img onerror=...>`, `<script>`, `[click me](javascript:...)` and a
column of their own into report.md, tune's report and `versus --out` (stop 57)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from helpers.paths import EVAL_NOTES as NOTES
from helpers.paths import EVAL_QUESTIONS as QUESTIONS
from recall_eval.cli import main

HOSTILE = "<img src=x onerror=alert(1)>|col [click me](javascript:alert(1)) <script>alert(2)</script>"
# What a file or folder can be named (no "/").
HOSTILE_NAME = "<img src=x onerror=alert(1)>|col [click me](javascript:alert(1))"
# The run's own words: its kinds and decisions say what each record is, and the default pipeline is read by name.
KEPT = {"kind", "decision", "default"}


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def assert_inert(md: str) -> None:
    """No raw HTML or autolink (a "<" that opens a tag), no link, and every table row as many
    columns as its table."""
    assert not re.search(r"<[A-Za-z/!?]", md), md
    assert "](" not in md and "][" not in md, md
    cols = None
    for line in md.splitlines():
        if not line.startswith("|"):
            cols = None
            continue
        n = len(re.findall(r"(?<!\\)\|", line))
        cols = cols or n
        assert n == cols, line


def _hostile(value, key: str = ""):
    """Every string of a run (keys naming sets, languages, pipelines and styles too) made hostile."""
    if isinstance(value, dict):
        return {(k if k in KEPT or not isinstance(v, (dict, str)) or key not in ("pipelines", "heldout", "by_lang",
                                                                                  "by_style") else f"{k}{HOSTILE}"):
                _hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile(v, key) for v in value]
    if isinstance(value, str) and key not in KEPT:
        return f"{value}{HOSTILE}"
    return value


def test_a_hostile_results_json_rerendered_writes_no_markup_into_report_md(tmp_path):
    reports = tmp_path / "reports"
    res = cli("run", "--notes", str(NOTES), "--questions", str(QUESTIONS), "--model", "hash", "--reports", str(reports),
              "--collection", "fixture")
    assert res.exit_code == 0, res.output
    run = reports / "fixture" / (reports / "fixture" / "latest").read_text().strip()
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    block = {k: data[k] for k in ("pipelines", "thresholds", "timings", "calibration", "by_lang", "cross_lang")}
    data["heldout"] = {"test": {**block, "n_paraphrase": 1, "n_unrelated": 1, "provenance": {"role": "x"},
                                "by_style": {"terse": data["by_lang"]["en"]}}}
    data["pipeline"] = {"note_questions": 0, "questions_file": "q", "lexical_weight": 0.5}
    (run / "results.json").write_text(json.dumps(_hostile(data)), encoding="utf-8")
    res = cli("report", "--collection", "fixture", "--reports", str(reports))
    assert res.exit_code == 0, res.output
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "javascript:alert(1)" in md and "## Held-out set test" in md  # the hostile text is there, as text
    assert_inert(md)


def test_tune_writes_no_markup_from_a_notes_folder_or_a_set_name(tmp_path):
    notes = Path(shutil.copytree(NOTES, tmp_path / HOSTILE_NAME / "notes"))
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    sets = [tmp_path / f"a{HOSTILE_NAME}.jsonl", tmp_path / f"b{HOSTILE_NAME}.jsonl"]
    for i, path in enumerate(sets):
        rows = [json.loads(line) for line in lines]
        path.write_text("".join(json.dumps({**r, "id": f"{r['id']}-{i}", "text": r["text"] + " ?" * i}) + "\n"
                                for r in rows), encoding="utf-8")
    res = cli("tune", "--notes", str(notes), "-q", str(sets[0]), "-q", str(sets[1]), "--model", "hash",
              "--no-write", "--reports", str(tmp_path / "reports"))
    assert res.exit_code == 0, res.output
    md = next((tmp_path / "reports").rglob("tune-*.md")).read_text(encoding="utf-8")
    prose, fenced = md.split("\n```", 1)[0], md.split("\n```", 1)[1]
    assert "javascript:alert(1)" in prose
    assert_inert(prose)
    assert fenced.rstrip().endswith("```") and fenced.count("```") == 1  # the table's text stays in its block


def make_run(spec: str, right: int, n: int = 20) -> dict:
    from recall_eval.scoring import metrics as M

    recs = [M.Record(id=f"q{i}", set_id="s", kind=kind, lang="en", text=f"q{i}", expected=[f"n{i}"] * (kind < "u"),
                     note_lang="en", ranked=[f"n{i}" if i < right else "x"], injected=[], decision="nothing").as_dict()
            for i, kind in enumerate(["paraphrase"] * n + ["unrelated"] * n)]
    summary = M.summarize([M.Record(**r) for r in recs])
    metrics = {k: {"value": v.value, "ci95": list(v.ci95 or []), "n": v.n} for k, v in summary.items()}
    return {"model": {"spec": spec, "model_id": spec}, "timings": {"query_ms_p50": 1.0, "index_s": 2.0},
            "notes_dir": "/n", "pipelines": {"default": {"metrics": metrics, "records": recs}}}


def test_versus_out_writes_no_markup_from_a_run_path_a_model_spec_or_a_skipped_set(tmp_path):
    paths = []
    for name, right in (("a", 10), ("b", 38)):
        data = make_run(f"m{HOSTILE}", right)
        data["heldout"] = {f"old{HOSTILE}": {"pipelines": {"default": {"metrics": {}}}}}  # no records: skipped
        folder = tmp_path / f"{name}{HOSTILE_NAME}"
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps(data), encoding="utf-8")
        paths.append(str(folder))
    res = cli("versus", *paths, "--out", str(tmp_path / "vs.md"))
    assert res.exit_code == 0, res.output
    md = (tmp_path / "vs.md").read_text(encoding="utf-8")
    assert "not compared" in md and "javascript:alert(1)" in md
    assert_inert(md)
