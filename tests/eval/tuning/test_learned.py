"""The learned selector: the daemon's pure-Python evaluation equals scikit-learn's,
survives a TOML round trip, and is what ``decide`` uses when selector.kind = "learned"."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from recall.config.load import load_config, packaged_config_text
from recall.ranking.learned import FEATURES, LearnedSelector, features
from recall.ranking.selector import Hit, decide
from recall_eval.tuning.config_file import set_learned
from recall_eval.tuning.selector_fit import export, fit_pipeline


def random_data(n: int = 300, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(FEATURES))) * rng.uniform(0.01, 5, len(FEATURES)) + rng.normal(size=len(FEATURES))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    if classes == 3:
        y[X[:, 2] > np.quantile(X[:, 2], 0.7)] = 2
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pure_python_probabilities_equal_sklearn(seed):
    X, y = random_data(seed=seed)
    pipe = fit_pipeline(X, y)
    sel = export(pipe, 0.5)
    ours = np.array([sel.proba(list(x)) for x in X])
    np.testing.assert_allclose(ours, pipe.predict_proba(X), rtol=0, atol=1e-9)


def test_a_class_missing_in_training_gets_zero_probability():
    X, y = random_data(classes=2)
    pipe = fit_pipeline(X, y)
    ours = np.array([export(pipe, 0.5).proba(list(x)) for x in X])
    np.testing.assert_allclose(ours[:, :2], pipe.predict_proba(X), atol=1e-9)
    assert ours[:, 2].max() < 1e-15


def test_round_trip_through_toml():
    X, y = random_data()
    sel = export(fit_pipeline(X, y), 0.37)
    text = set_learned(packaged_config_text(), "some/model", sel.to_dict(), {"tuned": "2026-01-01"})
    back = LearnedSelector.from_dict(tomllib.loads(text)["learned"]["some/model"])
    assert back == sel
    for x in X[:20]:
        assert back.proba(list(x)) == sel.proba(list(x))


def test_from_dict_refuses_other_features():
    X, y = random_data()
    d = export(fit_pipeline(X, y), 0.5).to_dict()
    d["features"] = ["top", "gap"]
    with pytest.raises(ValueError, match="other features"):
        LearnedSelector.from_dict(d)


def hits(scores: list[float]) -> list[Hit]:
    return [Hit({"id": f"n{i}", "name": f"note {i}", "description": "d", "path": f"/n{i}.md", "kind": "dir"}, s)
            for i, s in enumerate(scores)]


def config_with_learned(tmp_path, threshold: float, kind: str = "learned"):
    X, y = random_data()
    sel = export(fit_pipeline(X, y), threshold)
    text = set_learned(packaged_config_text(), "hash-256", sel.to_dict(), {"tuned": "2026-01-01"}, kind)
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_decide_uses_the_learned_selector_when_configured(tmp_path):
    ranked = hits([0.9, 0.5, 0.45, 0.4, 0.4, 0.38, 0.35, 0.3, 0.3, 0.3, 0.2, 0.1])
    prompt = "how do I write a migration?"
    always = config_with_learned(tmp_path, 0.0).rule("hash-256")
    assert always.learned is not None
    d = decide(prompt, ranked, always)
    assert d.reason.startswith("learned selector") and d.kind in ("short", "full") and d.chosen
    never = config_with_learned(tmp_path, 1.01).rule("hash-256")
    d = decide(prompt, ranked, never)
    assert d.kind == "nothing" and d.reason.startswith("learned selector")
    # the daemon's decision is the selector's decision
    kind, p = LearnedSelector.from_dict(never.learned).decide(prompt, [h.score for h in ranked])
    assert kind == "nothing" and 0.0 <= p <= 1.0
    assert len(features(prompt, [h.score for h in ranked])) == len(FEATURES)


def test_gap_kind_ignores_the_learned_table(tmp_path):
    s = config_with_learned(tmp_path, 0.0, kind="gap").rule("hash-256")
    assert s.learned is None
    d = decide("how do I write a migration?", hits([0.9, 0.5, 0.45, 0.4, 0.4, 0.38, 0.35, 0.3, 0.3, 0.3]), s)
    assert not d.reason.startswith("learned")


def test_learned_kind_without_a_table_says_what_to_run(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[selector]\nkind = "learned"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="recall-eval tune --learned"):
        load_config(path).rule("hash-256")


def test_learned_kind_without_a_table_is_a_one_line_error(tmp_path, recall_home):
    from helpers.cli import run_cli

    cfg = tmp_path / "c.toml"
    cfg.write_text('[selector]\nkind = "learned"\n')
    proc = run_cli("query", "a message long enough", env={"RECALL_CONFIG": str(cfg), "RECALL_MODEL": "hash"})
    assert proc.returncode == 1
    assert "no [learned" in proc.stderr and "Traceback" not in proc.stderr
