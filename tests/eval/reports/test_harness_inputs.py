"""recall-eval against inputs an outside tester made (stop 44): a gate fooled by rewritten
questions, runs paired on other questions, files replaced unasked, a secret written in clear,
a config link broken, thresholds the held-out folds reject written, tracebacks, a report forged
or written outside its folder, and question ids that masking made one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from click.testing import CliRunner

from recall_eval.cli import main

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "datasets" / "sample"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def _sets(tmp_path: Path) -> list[Path]:
    out = []
    for f in sorted((SAMPLE / "questions").glob("*.jsonl"))[:2]:
        out.append(Path(shutil.copy(f, tmp_path / f.name)))
    return out


def test_the_gate_refuses_rewritten_questions_under_the_same_ids(tmp_path):
    sets = _sets(tmp_path)
    base = ["regress", "--notes", str(SAMPLE / "notes"), "--model", "hash", "--baseline", str(tmp_path / "b.json")]
    qs = [a for f in sets for a in ("-q", str(f))]
    assert cli(*base, *qs, "--update").exit_code == 0
    lines = [json.loads(line) for line in sets[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    for q in lines:
        q["text"] = "thanks, go on"
    sets[0].write_text("".join(json.dumps(q) + "\n" for q in lines), encoding="utf-8")
    res = cli(*base, *qs)
    assert res.exit_code == 1 and "edited since the baseline" in res.output, res.output


def _run(text: str) -> dict:
    from recall_eval.scoring import metrics as M

    recs = [M.Record(id=f"q{i}", set_id="s", kind="paraphrase", lang="en", text=f"{text} {i}", expected=[f"n{i}"],
                     note_lang="en", ranked=[f"n{i}"], injected=[f"n{i}"], decision="short").as_dict()
            for i in range(30)]
    summary = M.summarize([M.Record(**r) for r in recs])
    metrics = {k: {"value": v.value, "ci95": list(v.ci95 or []), "n": v.n} for k, v in summary.items()}
    return {"model": {"spec": "m", "model_id": "m"}, "timings": {}, "notes_dir": "/n",
            "pipelines": {"default": {"metrics": metrics, "records": recs}}}


def test_versus_refuses_runs_that_asked_other_questions_under_the_same_ids(tmp_path):
    for name, text in (("a", "how do I deploy"), ("b", "thanks, go on")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(_run(text)), encoding="utf-8")
    res = cli("versus", str(tmp_path / "a"), str(tmp_path / "b"))
    assert res.exit_code == 1 and "asked different questions" in res.output, res.output


def test_outputs_are_not_replaced_unasked(tmp_path):
    sets = _sets(tmp_path)
    kept = tmp_path / "mine.jsonl"
    kept.write_text("hand-written\n", encoding="utf-8")
    res = cli("generate", "--backend", "file", "--notes", str(SAMPLE / "notes"), "--from", str(sets[0]),
              "--written-by", "me", "--out", str(kept), "--no-index-check")
    assert res.exit_code == 1 and "--force" in res.output and kept.read_text() == "hand-written\n"
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "keep.txt").write_text("x")
    res = cli("export-beir", "--notes", str(SAMPLE / "notes"), "-q", str(sets[0]), "--out", str(tmp_path / "export"))
    assert res.exit_code == 1 and "--force" in res.output and (tmp_path / "export" / "keep.txt").exists()


def test_tune_writes_through_a_linked_config_and_says_a_broken_one_in_a_line(tmp_path, monkeypatch):
    target = tmp_path / "dotfiles" / "recall.toml"
    target.parent.mkdir()
    target.write_text("# mine\n", encoding="utf-8")
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-d", "--min", "silence_rate=0.5", "--accept-held-out-miss", "--config", str(link),
            "--reports", str(tmp_path / "reports")]
    res = cli(*args)
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and "[thresholds.hash-256]" in target.read_text(encoding="utf-8")
    target.write_text("\ufeff[selector\n", encoding="utf-8")
    res = cli(*args)
    assert res.exit_code == 1 and "Traceback" not in res.output and "not valid TOML" in res.output, res.output
    assert res.output.count("\n") <= 2 and target.read_text(encoding="utf-8") == "\ufeff[selector\n"


def test_tune_does_not_write_what_its_held_out_folds_reject(tmp_path):
    cfg = tmp_path / "config.toml"
    res = cli("tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
              "--test-sets", "sample-d", "--min", "silence_rate=1", "--min", "injected_hit_rate=0.55",
              "--config", str(cfg),
              "--reports", str(tmp_path / "reports"))
    assert res.exit_code == 1 and not cfg.exists(), res.output
    assert "--accept-held-out-miss" in res.output or "no thresholds meet" in res.output


def test_a_damaged_results_file_and_a_latest_pointing_away_are_one_line(tmp_path):
    for name, data in (("a", b""), ("b", b"[" * 100_000), ("c", b"\xff\xfe")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_bytes(data)
        res = cli("versus", str(tmp_path / name), str(tmp_path / name))
        assert res.exit_code == 1 and "Traceback" not in res.output and "results.json" in res.output, res.output
    reports = tmp_path / "reports"
    (reports / "sample").mkdir(parents=True)
    (reports / "sample" / "latest").write_text("../..", encoding="utf-8")
    res = cli("report", "--collection", "sample", "--reports", str(reports))
    assert res.exit_code == 1 and "names no run" in res.output and not (tmp_path / "report.html").exists()


def test_a_set_name_with_line_breaks_stays_in_its_cell():
    from recall_eval.reports.report import _md_table

    table = _md_table(["set"], [["x\n## Headline metrics (forged)\nok"]])
    assert "\n## " not in table and table.count("\n") == 2


def test_random_looking_question_ids_stay_distinct_when_masked():
    from recall_eval.files import masked

    ids = ["QnAb12Cd34Ef56Gh78Ij90Kl", "Zx12Cv34Bn56Mq78Wr90Ty12"]
    out = masked({i: 1.0 for i in ids})
    assert len(out) == 2 and not any(i in json.dumps(out) for i in ids)
    assert masked({"id": ids[0]})["id"] in out


def test_an_imported_answer_is_written_masked(tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(SAMPLE / "notes", notes)
    key = "AKIA" + "QWERTYUIOPASDFGH"
    stems = sorted(p.stem for p in notes.glob("*.md") if p.name != "MEMORY.md")
    answer = tmp_path / "answer.jsonl"
    answer.write_text("".join(json.dumps({"note": s, "questions": [f"where is {key} kept for {s}?", "a", "b"]}) + "\n"
                              for s in stems), encoding="utf-8")
    out = tmp_path / "questions.jsonl"
    res = cli("expand", "--notes", str(notes), "--import", str(answer), "--written-by", "me", "--out", str(out))
    if res.exit_code != 0:  # the answer's other checks (how many per note): the secret is what matters
        assert not out.exists() or key not in out.read_text(encoding="utf-8")
        return
    assert key not in out.read_text(encoding="utf-8") and "[REDACTED]" in out.read_text(encoding="utf-8")
    assert os.stat(out).st_mode & 0o777 == 0o600
