"""Every path recall-eval writes (--reports, --out, --baseline, --config, --notes-out,
--questions-out) is checked before the work, and a write that fails later is one line naming the
path and the option (an outside tester's 9, 10): no `[Errno 30]` after minutes of scoring. This
machine may run as root, whom chmod does not stop: a file where a folder goes (ENOTDIR) stands
for an unwritable path, and a non-root user (setpriv) where the system has one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recall_eval.cli import main

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "datasets" / "sample"
ONE_SET = sorted((SAMPLE / "questions").glob("*.jsonl"))[0]


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def _refused(res, *said: str) -> None:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "Errno" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    for s in said:
        assert s in res.output, res.output


@pytest.fixture
def afile(tmp_path) -> Path:
    f = tmp_path / "afile"
    f.write_text("mine\n")
    return f


SCORE = ["--notes", str(SAMPLE / "notes"), "-q", str(ONE_SET), "--model", "no-such-model-is-loaded"]


@pytest.mark.parametrize("args, option", [
    (["run", *SCORE, "--reports", "{f}"], "--reports"),
    (["run", *SCORE, "--reports", "{f}/x/y"], "--reports"),
    (["regress", *SCORE, "--baseline", "{f}/b.json", "--update"], "--baseline"),
    (["tune", "--collection", "sample", "--model", "no-such-model-is-loaded", "--config", "{f}/c.toml"], "--config"),
    (["tune", "--collection", "sample", "--model", "no-such-model-is-loaded", "--reports", "{f}"], "--reports"),
    (["export-beir", *SCORE[:4], "--out", "{f}", "--force"], "--out"),
    (["export-beir", *SCORE[:4], "--out", "{f}/b"], "--out"),
    (["compare", "--collection", "sample", "--models", "hash", "--reports", "{f}/r"], "--reports"),
])
def test_a_file_where_an_output_folder_goes_is_refused_before_the_work(afile, args, option):
    """The model named is none that loads: a refusal that came after the work would say that instead."""
    res = cli(*(a.replace("{f}", str(afile)) for a in args))
    _refused(res, option, "is a file, not a folder", f"give {option} another path")
    assert "RECALL_HOME" not in res.output and "model" not in res.output
    assert afile.read_text() == "mine\n"


def test_import_beir_takes_a_split_name_and_says_what_the_folder_lacks(tmp_path):
    beir = tmp_path / "beir"
    assert cli("export-beir", *SCORE[:4], "--out", str(beir)).exit_code == 0
    outs = ["--notes-out", str(tmp_path / "n"), "--questions-out", str(tmp_path / "q.jsonl")]
    _refused(cli("import-beir", str(beir), *outs, "--split", "../../etc/passwd"), "is not a split's name")
    _refused(cli("import-beir", str(beir), *outs, "--split", "dev"), "no qrels/dev.tsv", "its splits: test")
    (beir / "corpus.jsonl").unlink()
    _refused(cli("import-beir", str(beir), *outs), "no corpus.jsonl")
    assert not (tmp_path / "n").exists() and not (tmp_path / "q.jsonl").exists()


def test_tune_names_an_unknown_key_of_its_config_before_tuning(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[search]\nbogus_key = 1\n")
    res = cli("tune", "--collection", "sample", "--model", "no-such-model-is-loaded", "--config", str(cfg))
    _refused(res, "search.bogus_key", "unknown setting")
    assert "[thresholds] or [learned]" not in res.output
    res = cli("tune", "--collection", "sample", "--model", "no-such-model-is-loaded", "--config", os.devnull)
    _refused(res, "--config /dev/null", "give --config a config file's path")
    assert "in place of the link" not in res.output


def test_a_write_that_fails_under_an_option_names_it(tmp_path):
    """Checked before, broken after (a folder made a file while the work ran): one line still."""
    from recall_eval.files import OutputError, check_output, write_private

    out = tmp_path / "out"
    check_output(out, "--out", folder=True)
    out.write_text("made meanwhile\n")
    with pytest.raises(OutputError, match=r"cannot write .*\(--out .*\): a file is where a folder goes"):
        write_private(out / "corpus.jsonl", "x")


@pytest.mark.skipif(sys.platform == "win32" or shutil.which("setpriv") is None, reason="needs setpriv")
def test_a_folder_the_user_cannot_write_is_refused_before_the_work():
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="recall-eval-ro-"))  # pytest's own folders are closed to others
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    tmp_path.chmod(0o755)
    try:
        _refused_as_another_user(tmp_path, ro)
    finally:
        ro.chmod(0o755)
        shutil.rmtree(tmp_path)


def _refused_as_another_user(tmp_path: Path, ro: Path) -> None:
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    env = {**os.environ, "HOME": str(tmp_path), "RECALL_HOME": str(tmp_path / "rh"), "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    res = subprocess.run([*user, sys.executable, "-c", "from recall_eval.cli import run; run()", "export-beir",
                          *SCORE[:4], "--out", str(ro / "b")], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    if "Permission denied" in res.stderr and "sample" in res.stderr and "--out" not in res.stderr:
        pytest.skip("the unprivileged user cannot read the project")
    assert res.returncode == 1, res.stderr
    assert "--out" in res.stderr and "not writable by you" in res.stderr and "Errno" not in res.stderr, res.stderr
