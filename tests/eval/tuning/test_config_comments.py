"""What ``recall-eval tune --config`` writes beside its numbers: a comment only where it is true
(to_config's stand-ins), none left from the user on a value tune changed, and a config with a
byte-order mark read as the core reads it (an outside tester, stop 58)."""

from __future__ import annotations

import tomllib

from click.testing import CliRunner

from recall_eval.cli import main
from recall_eval.tuning.config_file import set_thresholds

VALUES = {"gap_floor": -3.0, "top_floor": 0.2304, "full_gap": 3.0, "full_margin": 0.05, "neg_weight": 8.0}


def line_of(text: str, key: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"{key} ="))


def test_only_the_stand_ins_say_what_they_stand_for():
    """``neg_weight = 8.0 # no floor``: every value of 3 or more was said to be no floor."""
    new = set_thresholds("", "m", VALUES, {"tuned": "today"})
    assert "#" not in line_of(new, "neg_weight") and "#" not in line_of(new, "top_floor")
    assert line_of(new, "gap_floor").endswith("# no floor") and "never full" in line_of(new, "full_gap")
    assert "#" not in line_of(set_thresholds("", "m", {**VALUES, "full_gap": -3.0}, {}), "full_gap")


def test_a_value_tune_changes_loses_the_comment_the_user_wrote_on_the_old_one():
    old = ('[thresholds."m"]\ngap_floor = -3.0 # mine\ntop_floor = 0.2 # hand-set\nfull_gap = 0.1 # was mine\n'
           "full_margin = 0.05 # kept\n")
    new = set_thresholds(old, "m", VALUES, {})
    assert line_of(new, "top_floor") == "top_floor = 0.2304"
    assert line_of(new, "full_gap").endswith("# never full: gaps lie within [-2, 2]") and "was mine" not in new
    assert line_of(new, "gap_floor") == "gap_floor = -3.0 # mine"  # unchanged: the user's comment stays
    assert line_of(new, "full_margin") == "full_margin = 0.05 # kept"
    assert {k: v for k, v in tomllib.loads(new)["thresholds"]["m"].items() if k in VALUES} == VALUES


def test_tune_writes_into_a_config_with_a_byte_order_mark(tmp_path):
    """The core reads a config saved with a UTF-8 byte-order mark (Notepad's); tune refused it."""
    cfg = tmp_path / "config.toml"
    cfg.write_bytes(b"\xef\xbb\xbf" + b"# mine\n[selector]\nmax_notes = 2\n")
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--config", str(cfg),
            "--accept-no-gain"]
    res = CliRunner().invoke(main, args, env={"RECALL_CONFIG": str(cfg)})
    assert res.exit_code == 0, res.output
    text = cfg.read_bytes().decode("utf-8-sig")
    data = tomllib.loads(text)
    assert data["selector"]["max_notes"] == 2 and "provenance" in data["thresholds"]["hash-256"]
    assert "#" not in line_of(text, "neg_weight")


def test_a_comment_an_older_tune_wrote_goes_from_a_value_tune_leaves_unchanged(tmp_path):
    """An older tune wrote ``neg_weight = 8.0 # no floor``; a tune that keeps 8.0 kept the comment,
    which says what the value is not. A stand-in's comment is tune's own: it is written again from
    the value, on every value tune writes back, changed or not; the user's own comments stay."""
    cfg = tmp_path / "config.toml"
    cfg.write_text("# mine\n")
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--config", str(cfg),
            "--accept-no-gain"]
    assert (res := CliRunner().invoke(main, args, env={"RECALL_CONFIG": str(cfg)})).exit_code == 0, res.output
    first = cfg.read_text()
    tuned = tomllib.loads(first)["thresholds"]["hash-256"]
    older = "\n".join(f"{line} # no floor" if line.split(" =")[0] in VALUES and "#" not in line else line
                      for line in first.splitlines()) + "\n"
    cfg.write_text(older)
    assert (res := CliRunner().invoke(main, args, env={"RECALL_CONFIG": str(cfg)})).exit_code == 0, res.output
    text = cfg.read_text()
    again = tomllib.loads(text)["thresholds"]["hash-256"]
    assert {k: again[k] for k in VALUES} == {k: tuned[k] for k in VALUES}  # unchanged: the case at hand
    for key in VALUES:
        said = line_of(text, key).partition("#")[2].strip()
        value = again[key]
        if key in ("gap_floor", "top_floor") and value <= -3.0:
            assert said == "no floor", text
        elif key == "full_gap" and value >= 3.0:
            assert said.startswith("never full"), text
        else:
            assert said == "", text
    assert text.startswith("# mine\n")


def test_tune_keeps_the_users_comments_byte_order_mark_and_mode(tmp_path):
    """tune rewrote a user's config without its byte-order mark, 0600 where it was 0644, and lost
    comments; only the model's tables change now, the rest of the file is byte for byte the same."""
    cfg = tmp_path / "config.toml"
    mine = ("# my settings\n[selector]\nmax_notes = 2  # two at most, said by me\n\n"
            "[search]\n# the weight I like\nlexical_weight = 0.3 # mine too\n")
    cfg.write_bytes(b"\xef\xbb\xbf" + mine.encode())
    cfg.chmod(0o644)
    args = ["tune", "--collection", "sample", "--model", "hash", "--tune-sets", "sample-a,sample-b",
            "--test-sets", "sample-c", "--reports", str(tmp_path / "reports"), "--config", str(cfg),
            "--accept-no-gain"]
    res = CliRunner().invoke(main, args, env={"RECALL_CONFIG": str(cfg)})
    assert res.exit_code == 0, res.output
    raw = cfg.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf" + mine.encode()), raw[:300]
    assert (cfg.stat().st_mode & 0o777) == 0o644
    assert "provenance" in tomllib.loads(raw.decode("utf-8-sig"))["thresholds"]["hash-256"]


def test_a_comment_of_the_users_survives_a_table_tune_has_to_rewrite():
    """Dotted keys and an inline table are rewritten as a plain table: the comments on them went."""
    dotted = set_thresholds('[thresholds]\n"m".top_floor = 0.2 # old\n"m".gap_floor = -3.0 # mine\n', "m", VALUES, {})
    assert line_of(dotted, "gap_floor") == "gap_floor = -3.0 # mine" and "# old" not in dotted
    inline = set_thresholds('thresholds."m" = { top_floor = 0.2 } # my table\n[search]\nlexical_weight = 0.3 # w\n',
                            "m", VALUES, {})
    assert "# my table" in inline and "lexical_weight = 0.3 # w" in inline
    assert tomllib.loads(inline)["thresholds"]["m"]["top_floor"] == 0.2304
