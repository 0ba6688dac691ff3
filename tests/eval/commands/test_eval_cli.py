"""The command line: every subcommand has help, the lazy registry, latency reuse of the
hook benchmark (present or absent), and `run` on the shipped sample with the test model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import committed
from recall.notes.files import read_folder
from recall_eval.cli import COMMANDS, main
from recall_eval.scoring import latency

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help(name):
    res = CliRunner().invoke(main, [name, "--help"])
    assert res.exit_code == 0, res.output
    assert main.get_command(None, name).help.strip()  # type: ignore[union-attr]


def test_group_lists_every_command():
    res = CliRunner().invoke(main, ["--help"])
    for name in COMMANDS:
        assert name in res.output


def test_latency_without_the_benchmark_measures_nothing(tmp_path):
    data, message = latency.run_bench(tmp_path)
    assert data is None and "bench/bench_hook.py missing" in message


def test_latency_runs_the_benchmark_module_and_reads_its_json(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "__init__.py").write_text("")
    (bench / "bench_hook.py").write_text(textwrap.dedent("""
        import json, pathlib
        out = pathlib.Path("reports/bench")
        out.mkdir(parents=True, exist_ok=True)
        (out / "hook.json").write_text(json.dumps({"hook": {"p50_ms": 4.1, "p95_ms": 7.5,
                                                            "samples_ms": [3, 4, 4.1, 5, 7.5, 8]}}))
    """))
    data, message = latency.run_bench(tmp_path)
    assert data is not None and "hook.json" in message
    assert latency.samples(data) == ("hook.samples_ms", [3.0, 4.0, 4.1, 5.0, 7.5, 8.0])
    assert latency.summary(data) == {"hook.p50_ms": 4.1, "hook.p95_ms": 7.5}


def test_latency_reads_summaries_by_index_and_load():
    """bench/bench_hook.py's shape: per index, {p50_ms, p95_ms, max_ms} per load, no raw timings."""
    data = {"indexes": [
        {"name": "sample", "sequential": {"n": 60, "p50_ms": 40.0, "p95_ms": 55.0, "max_ms": 80.0},
         "concurrent": {"n": 100, "p50_ms": 90.0, "p95_ms": 140.0, "max_ms": 200.0}, "floor_ms": 35.0},
        {"name": "synthetic", "sequential": {"n": 60, "p50_ms": 45.0, "p95_ms": 60.0, "max_ms": 90.0}},
    ], "targets": {"p95_sequential_ms": 60, "ratio_p50_floor": 1.3}, "cpus": 2}
    assert latency.samples(data) is None
    rows = latency.percentiles(data)
    assert [label for label, _ in rows] == ["indexes.sample.sequential", "indexes.sample.concurrent",
                                            "indexes.synthetic.sequential"]
    assert rows[0][1] == {"p50_ms": 40.0, "p95_ms": 55.0, "max_ms": 80.0}
    summary = latency.summary(data)
    assert summary["indexes.sample.concurrent.p95_ms"] == 140.0 and summary["indexes.sample.floor_ms"] == 35.0
    assert "cpus" not in summary


@pytest.mark.parametrize("kind", ["missing", "truncated", "folder", "not an object"])
@pytest.mark.parametrize("as_json", [False, True])
def test_latency_reuse_without_a_readable_result_is_one_line(tmp_path, monkeypatch, kind, as_json):
    """`latency --reuse` said "read the last result" and exited 0 when hook.json was missing or cut
    (and printed nothing with --json); a folder there was a traceback (IsADirectoryError)."""
    path = tmp_path / "reports" / "bench" / "hook.json"
    monkeypatch.setattr(latency, "result_path", lambda root=None: path)
    path.parent.mkdir(parents=True)
    if kind == "truncated":
        path.write_text('{"hook": {"p50_ms": 4')
    elif kind == "folder":
        path.mkdir()
    elif kind == "not an object":
        path.write_text("[1, 2]")
    res = CliRunner().invoke(main, ["latency", "--reuse", *(["--json"] if as_json else [])])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and str(path) in res.output, res.output
    assert "`recall-eval latency`" in res.output, res.output


def test_latency_reuse_reads_the_last_result(tmp_path, monkeypatch):
    path = tmp_path / "hook.json"
    monkeypatch.setattr(latency, "result_path", lambda root=None: path)
    path.write_text(json.dumps({"hook": {"p50_ms": 4.1, "p95_ms": 7.5}}))
    res = CliRunner().invoke(main, ["latency", "--reuse", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == {"hook": {"p50_ms": 4.1, "p95_ms": 7.5}}, res.output


def test_run_on_the_shipped_sample_with_the_test_model(tmp_path):
    sets = committed(ROOT / "datasets" / "sample" / "questions", "*.jsonl")
    res = CliRunner().invoke(main, ["run", "--collection", "sample", "--model", "hash",
                                    "--reports", str(tmp_path)])
    assert res.exit_code == 0, res.output
    run = (tmp_path / "sample" / "latest").read_text().strip()
    results = json.loads((tmp_path / "sample" / run / "results.json").read_text())
    assert results["n_questions"] == 40 * len(sets)
    assert results["n_notes"] == len(read_folder(ROOT / "datasets" / "sample" / "notes")[0])



@pytest.mark.parametrize("name", ["../../x", "ABSOLUTE", "a\nb", "a\\b", "..", "a\x00b", "a\x1bb", "x\u202eb"])
@pytest.mark.parametrize("command", ["run", "report", "generate", "expand"])
def test_a_collection_name_that_is_not_one_folder_name_is_refused_in_one_line(tmp_path, name, command):
    """`--collection ../../x`, an absolute path or a name with a line break was a folder of its own:
    reports written outside --reports, and a raw line break printed (an outside tester's, stop 57)."""
    from helpers.paths import EVAL_NOTES, EVAL_QUESTIONS

    name = str(tmp_path / "abs") if name == "ABSOLUTE" else name
    rest = {"run": ["--model", "hash", "--notes", str(EVAL_NOTES), "-q", str(EVAL_QUESTIONS), "--reports",
                    str(tmp_path / "r" / "reports")],
            "report": ["--reports", str(tmp_path / "r" / "reports")], "generate": ["--backend", "file"], "expand": []}
    res = CliRunner().invoke(main, [command, "--collection", name, *rest[command]])
    assert res.exit_code != 0 and res.output.count("\n") == 1, res.output
    assert "one folder name" in res.output and "Traceback" not in res.output, res.output
    assert not any(p.is_file() for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))
