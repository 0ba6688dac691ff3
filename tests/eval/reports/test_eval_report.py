"""The report: files, `latest`, a self-contained HTML, and (where chromium exists) a
headless render whose screenshot must show the figures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import EVAL_NOTES as NOTES
from helpers.paths import EVAL_QUESTIONS as QUESTIONS
from recall_eval.cli import main
from recall_eval.reports.report import run_id

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture
def run_dir(tmp_path) -> Path:
    res = CliRunner().invoke(main, ["run", "--notes", str(NOTES), "--questions", str(QUESTIONS), "--model",
                                    "hash", "--reports", str(tmp_path / "reports"),
                                    "--collection", "fixture"])
    assert res.exit_code == 0, res.output
    latest = (tmp_path / "reports" / "fixture" / "latest").read_text().strip()
    assert f"report: {tmp_path / 'reports' / 'fixture' / latest / 'report.html'}" in res.output
    assert "balanced_accuracy" in res.output and "bm25" in res.output and "grep" in res.output
    return tmp_path / "reports" / "fixture" / latest


def test_run_writes_the_three_files(run_dir):
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{7}", run_dir.name)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["run_id"] == run_dir.name and results["collection"] == "fixture"
    assert list(results["pipelines"]) == ["default", "packaged-thresholds", "original-rule", "grep", "bm25"]
    assert len(results["curve"]["values"]) >= 80 and results["curve"]["param"] == "top_floor"
    assert results["sets"][0]["set_id"] == "questions"
    md = (run_dir / "report.md").read_text()
    assert "| hit_rate@1 |" in md and "## Headline metrics" in md


def test_html_is_self_contained(run_dir):
    page = (run_dir / "report.html").read_text()
    srcs = re.findall(r"""src\s*=\s*['"]([^'"]*)""", page)
    assert len(srcs) >= 3 and all(s.startswith(("data:image/png;base64,", "data:image/svg+xml;base64,"))
                                  for s in srcs)
    assert not re.search(r"""href\s*=""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    for title in ("Score and gap distributions", "Silence vs hit trade-off", "Pipelines compared"):
        assert title in page


def test_report_command_rerenders_the_latest(run_dir):
    (run_dir / "report.html").unlink()
    reports = run_dir.parent.parent
    res = CliRunner().invoke(main, ["report", "--collection", "fixture", "--reports", str(reports)])
    assert res.exit_code == 0, res.output
    assert (run_dir / "report.html").exists()


def test_what_the_harness_and_its_libraries_create_is_the_users_only(run_dir, tmp_path):
    """`recall-eval run` left ~/.cache/matplotlib 0755 and its font list 0644 (matplotlib writes
    them under the umask: an outside tester's, stop 56): the harness runs under umask 077."""
    import os
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    exe = Path(sys.executable).with_name("recall-eval")
    proc = subprocess.run(["sh", "-c", 'umask 022 && exec "$0" "$@"', str(exe), "report", str(run_dir)],
                          capture_output=True, text=True, env={**env, "HOME": str(home)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    made = [p for p in home.rglob("*")]
    assert any("matplotlib" in str(p) for p in made), made  # what the check is about was made
    assert [p for p in made if p.stat().st_mode & 0o077] == []


def test_run_id_is_timestamp_plus_hash():
    import datetime as dt

    a = run_id({"model": "m", "metrics": {"x": 1}}, dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    b = run_id({"model": "m", "metrics": {"x": 2}}, dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    assert a.startswith("20260102T030405Z-") and a != b


def test_latency_figure_when_bench_data_is_present():
    from recall_eval.reports.report import figures

    res = CliRunner().invoke(main, ["score", "--notes", str(NOTES), "--questions", str(QUESTIONS),
                                    "--model", "hash", "--json", "--records", "--baselines"])
    data = json.loads(res.stdout)
    data["latency"] = {"hook": {"p50_ms": 4.0, "samples_ms": [3.0, 4.0, 4.5, 5.0, 9.0, 4.2]}}
    assert [t for t, _png in figures(data)][-1] == "Hook latency"  # a histogram of the timings
    data["latency"] = {"indexes": [{"name": "sample", "sequential": {"p50_ms": 40.0, "p95_ms": 55.0}}]}
    assert [t for t, _png in figures(data)][-1] == "Hook latency"  # bars of the benchmark's summaries
    data["latency"] = None
    assert "Hook latency" not in [t for t, _png in figures(data)]


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
def test_html_renders_in_headless_chromium(run_dir, tmp_path):
    import matplotlib.image as mpimg

    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", f"--screenshot={shot}",
                    "--window-size=1200,3000", (run_dir / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists(), "chromium wrote no screenshot"
    img = mpimg.imread(shot)
    assert img.shape[0] == 3000 and img.shape[1] == 1200
    # Figures are colourful: a page of text and tables alone is grey-scale. Count pixels
    # whose channels differ (the blue/red histograms and bars).
    rgb = img[..., :3]
    colourful = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.25
    assert colourful.mean() > 0.01


def test_the_tradeoff_is_the_pages_own_plot(run_dir):
    """One drawing of the silence vs hit plot: the report inlines recall.svg.tradeoff (the page's),
    with headline precision dashed; no second (matplotlib) version."""
    import base64

    from recall import svg
    from recall_eval.reports import plots

    results = json.loads((run_dir / "results.json").read_text())
    drawn = svg.tradeoff(results["curve"], precision=True)
    alone = drawn.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)  # an <img> needs the namespace
    page = (run_dir / "report.html").read_text()
    assert "data:image/svg+xml;base64," + base64.b64encode(alone.encode()).decode() in page
    assert 'class="precision"' in drawn and 'class="precision"' not in svg.tradeoff(results["curve"])
    assert not hasattr(plots, "tradeoff")



def test_a_report_masks_secrets_in_messages_and_is_the_users_only(tmp_path):
    """A question set holds a user's messages: a secret in one is masked in every file of the
    report, and the files and folders a run creates are 0600 / 0700 under umask 000."""
    import os

    secret = "sk-ant-api03-" + "UserMsgSecret7731zzQQ" * 2
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] = f"{first['text']} my password is Canary7731xx and the key {secret}"
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    old = os.umask(0)
    try:
        res = CliRunner().invoke(main, ["run", "--notes", str(NOTES), "--questions", str(questions), "--model",
                                        "hash", "--reports", str(tmp_path / "reports"), "--collection", "fixture"])
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.output
    made = [p for p in (tmp_path / "reports").rglob("*")]
    assert made and all(p.stat().st_mode & 0o777 == (0o700 if p.is_dir() else 0o600) for p in made), \
        {str(p): oct(p.stat().st_mode & 0o777) for p in made}
    for path in (p for p in made if p.is_file()):
        data = path.read_bytes()
        assert b"Canary7731xx" not in data and b"UserMsgSecret7731" not in data, path
    assert "[REDACTED]" in next(p for p in made if p.name == "results.json").read_text(encoding="utf-8")


def test_tune_and_versus_reports_and_error_lines_mask_secrets_and_are_the_users_only(tmp_path):
    """Every file recall-eval writes as a report (tune's JSON and Markdown, versus --out), and its
    error lines, mask a secret in a set's name, and are 0600 in 0700 folders under umask 000."""
    import os

    secret = "sk-ant-api03-" + "SetNameSecret4411zzQQ" * 2
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    sets = [tmp_path / f"ta-{secret}.jsonl", tmp_path / "tb.jsonl"]
    for i, path in enumerate(sets):
        rows = [json.loads(line) for line in lines]
        path.write_text("".join(json.dumps({**r, "id": f"{r['id']}-{i}", "text": r["text"] + " ?" * i}) + "\n"
                                for r in rows), encoding="utf-8")  # not word for word: tb is held out
    reports = tmp_path / "reports"
    old = os.umask(0)
    try:
        args = ["--notes", str(NOTES), "-q", str(sets[0]), "-q", str(sets[1]), "--model", "hash"]
        tuned = CliRunner().invoke(main, ["tune", *args, "--reports", str(reports), "--no-write",
                                          "--collection", "fixture"])
        run = CliRunner().invoke(main, ["run", *args, "--reports", str(reports), "--collection", "fixture"])
        run_dir = next(p for p in (reports / "fixture").iterdir() if p.is_dir())
        versus = CliRunner().invoke(main, ["versus", str(run_dir), str(run_dir), "--out", str(reports / "vs.md")])
        clash = CliRunner().invoke(main, ["run", "--notes", str(NOTES), "-q", str(sets[0]), "-q", str(sets[0]),
                                          "--model", "hash", "--reports", str(reports)])
    finally:
        os.umask(old)
    assert tuned.exit_code == 0 and run.exit_code == 0 and versus.exit_code == 0, tuned.output + versus.output
    made = list(reports.rglob("*"))
    assert any(p.name.startswith("tune-") for p in made) and (reports / "vs.md").exists()
    assert all(p.stat().st_mode & 0o777 == (0o700 if p.is_dir() else 0o600) for p in made), \
        {str(p): oct(p.stat().st_mode & 0o777) for p in made}
    for path in (p for p in made if p.is_file()):
        assert b"SetNameSecret4411" not in path.read_bytes(), path
    assert clash.exit_code != 0 and "SetNameSecret4411" not in clash.output, clash.output


def test_escape_sequences_from_a_set_or_a_question_reach_no_terminal_and_no_report(tmp_path):
    """An outside tester's set named `a\\x1b]0;PWN\\x07.jsonl` changed the terminal's title through
    `run` and `tune`, and a question's ESC reached report.md and the chart."""
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["text"] += " \x1b]52;c;ZWNobyBwd25lZA==\x07"
    first["lang"] = "en\x1b[2J"
    odd = tmp_path / "a\x1b]0;PWN\x07.jsonl"
    odd.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["run", "--notes", str(NOTES), "--questions", str(odd), "--model", "hash",
                                    "--reports", str(tmp_path / "reports"), "--collection", "fixture"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\x07" not in res.output and "\\u001b" in res.output
    for path in (p for p in (tmp_path / "reports").rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert b"\x1b" not in data and b"\x07" not in data, path


def _metric(r):
    r["pipelines"]["default"]["metrics"]["mrr"] = -1


def _ranked(r):
    r["pipelines"]["default"]["records"][0]["ranked"] = True


def _injected(r):
    r["pipelines"]["default"]["records"][1]["injected"] = [[]]


def _nan(r):
    r["pipelines"]["default"]["metrics"]["hit_rate@1"]["value"] = "NaN"


def _threshold(r):
    r["thresholds"]["top_floor"] = "high"


@pytest.mark.parametrize(("damage", "field"), [
    (_metric, "pipelines.default.metrics.mrr"), (_ranked, "pipelines.default.records[0].ranked"),
    (_injected, "pipelines.default.records[1].injected[0]"), (_nan, "pipelines.default.metrics.hit_rate@1.value"),
    (_threshold, "thresholds.top_floor")])
def test_a_damaged_result_is_one_line_naming_the_field_in_report_and_versus(run_dir, tmp_path, damage, field):
    """A value of another type in results.json was a traceback in `report` and `versus` (AttributeError,
    TypeError, unhashable type; an outside tester's): one typed validation (``recall_eval.results.RunFile``)."""
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    f = run_dir / "results.json"
    results = json.loads(f.read_text(encoding="utf-8"))
    damage(results)
    f.write_text(json.dumps(results), encoding="utf-8")
    page = (run_dir / "report.md").read_text(encoding="utf-8")
    for args in (["report", str(run_dir)], ["versus", str(other), str(run_dir)]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1, res.output
        assert str(f) in res.output and field in res.output and "`recall-eval run`" in res.output, res.output
    assert (run_dir / "report.md").read_text(encoding="utf-8") == page
