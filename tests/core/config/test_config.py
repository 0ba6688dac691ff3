"""Typed settings: the packaged TOML is the only source of defaults, every key maps to one
field (and back), a user's unknown or mistyped key is one clear line, origins are kept."""

import dataclasses
import os
import stat
import subprocess
import sys
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path

import pytest

from helpers.models import DEFAULT_ID, DEFAULT_MODEL
from recall.config.load import ConfigError, load_config, packaged_config_text, packaged_settings
from recall.config.settings import LEARNED_KEYS, THRESHOLD_KEYS, Settings


def _toml_fields(cls) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.metadata.get("toml", True)]


def test_every_packaged_key_is_a_field_and_every_field_a_key():
    data = tomllib.loads(packaged_config_text())
    hints = typing.get_type_hints(Settings)
    sections = {f.name for f in _toml_fields(Settings)}
    assert set(data) == sections
    for name in sections - {"model", "thresholds", "learned"}:
        fields = {f.name for f in _toml_fields(hints[name])}
        assert set(data[name]) == fields, name
    # Model tables: their keys are the thresholds (and provenance), or the learned numbers.
    for table in data["thresholds"].values():
        assert set(table) <= {*THRESHOLD_KEYS, "provenance"}
    assert set(data["thresholds"]["default"]) == set(THRESHOLD_KEYS)
    assert {f.name for f in _toml_fields(typing.get_type_hints(Settings)["thresholds"].__args__[1])} == {
        *THRESHOLD_KEYS, "provenance"}
    for table in data["learned"].values():
        assert set(table) <= LEARNED_KEYS


def test_no_field_has_a_default_for_a_toml_key():
    hints = typing.get_type_hints(Settings)
    classes = [Settings, *(hints[f.name] for f in _toml_fields(Settings) if dataclasses.is_dataclass(hints[f.name]))]
    classes.append(hints["thresholds"].__args__[1])
    for cls in classes:
        for f in _toml_fields(cls):
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, (cls, f.name)


def test_packaged_values_come_through_typed():
    s = packaged_settings()
    assert s.search.lexical_weight == 0.4 and s.search.lexical_weight_with_questions == 0.0
    assert (s.search.best_rows, s.search.prototype_weight) == (2, 0.3)
    assert s.search.fusion_depth == 50
    assert (s.chunking.chars, s.chunking.overlap, s.chunking.max_chunks) == (700, 100, 6)
    assert s.hook.skip_entrypoints == ("sdk-cli", "sdk-py", "sdk-ts")
    t = s.thresholds_for("a model without its own table")
    assert (t.source, t.gap_floor, t.top_floor, t.origin) == ("default", 0.025, 0.5, "packaged")
    e5 = s.thresholds_for("intfloat/multilingual-e5-small")
    assert e5.neg_weight == 0.0 and isinstance(e5.provenance, Mapping)  # completed from the default table
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.model = "other"  # type: ignore[misc]


def test_user_file_and_env_win_and_keep_their_origin(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[selector]\nmax_notes = 2\n[search]\nlexical_weight = 0\n', encoding="utf-8")
    monkeypatch.setenv("RECALL_MODEL", "hash")
    s = load_config(path)
    assert s.selector.max_notes == 2 and s.search.lexical_weight == 0 and s.model == "hash"
    got = {k: (v, o) for k, v, o in s.entries()}
    assert got["selector.max_notes"] == (2, str(path))
    assert got["model"] == ("hash", "env RECALL_MODEL")
    assert got["selector.min_prompt_chars"] == (6, "packaged")


def test_every_number_of_every_section_has_its_range():
    """A number setting without a range took nan and inf (AI04): each declares one (``ranged``),
    which the parser checks and `recall config --defaults` prints."""
    import dataclasses

    from recall.config import settings as typed

    sections = [typed._hints(typed.Settings)[f.name] for f in dataclasses.fields(typed.Settings)
                if dataclasses.is_dataclass(typed._hints(typed.Settings)[f.name])
                and typed._hints(typed.Settings)[f.name] is not typed.Thresholds]
    unranged = [f"{cls.__name__}.{f.name}" for cls in sections for f in dataclasses.fields(cls)
                if typed._hints(cls)[f.name] in (int, float) and "range" not in f.metadata]
    assert len(sections) >= 12 and not unranged, unranged


@pytest.mark.parametrize("text, words", [
    ('[selector]\nmax_note = 2\n', "selector.max_note in {path}: unknown setting"),
    ('colour = "red"\n', "colour in {path}: unknown setting"),
    ('[thresholds."hash-256"]\ntop_flor = 0.3\n', 'thresholds.hash-256.top_flor in {path}: unknown setting'),
    # an empty table of the user's was said to be in the packaged file (an outside tester's, stop 55)
    ('[a.b]\n', "a in {path}: unknown setting"), ('[daemon.x.y]\n', "daemon.x in {path}: unknown setting"),
    ('[selector]\nmax_notes = "3"\n', "selector.max_notes in {path}: expected a whole number, got '3'"),
    ('[hook]\nskip_entrypoints = "sdk-cli"\n', "hook.skip_entrypoints in {path}: expected a list of strings"),
    ('[chunking]\noverlap = 900\n', "chunking in {path}: chunk overlap must be >= 0 and smaller"),
    ('[search]\nsentence_rank_k = 0\n', "search in {path}: sentence_rank_k must be a number from 1 to 10,000, not 0"),
    ('[search]\nlexical_weight = 1.5\n', "search in {path}: lexical_weight must be a number from 0 to 1"),
    ('[search]\nsentence_weight = -1\n', "search in {path}: sentence_weight must be a number from 0 to 100"),
    # The numbers an outside tester found without a range (AI04): nan was a traceback in
    # `recall index`, took the size cap away, and restarted the daemon (nan is not nan).
    ('[search]\nsentence_weight = nan\n', "search in {path}: sentence_weight must be a number from 0 to 100"),
    ('[documents]\nconvert_max_mb = nan\n', "documents in {path}: convert_max_mb must be a number from 64 to"),
    ('[documents]\nconvert_timeout_s = -inf\n', "documents in {path}: convert_timeout_s must be a number from 0.001"),
    ('[documents]\nmax_file_mb = nan\n', "documents in {path}: max_file_mb must be a number from 0 to"),
    ('[documents]\nframe_every_s = 0\n', "documents in {path}: frame_every_s must be a number from 0.1 to"),
    ('[gemini]\ntimeout_s = nan\n', "gemini in {path}: timeout_s must be a number from 1 to 3,600"),
    ('[gemini]\ndimensions = 64\n', "gemini in {path}: dimensions must be a number from 128 to 3,072, not 64"),
    ('[chunking]\nmax_chunks = 0\n', "chunking in {path}: max_chunks must be a number from 1 to 100,000"),
    # a rule folder named "" was whatever folder a command ran in, its notes handed over everywhere (AI10)
    ('[sources]\nrules = [""]\n', "sources.rules in {path}: an empty folder name"),
    ('[sources]\nlibraries = ["  "]\n', "sources.libraries in {path}: an empty folder name"),
    # Every number of every section has its range: a budget of -5 ms or nan never answered.
    ('[daemon]\nhook_budget_ms = -5\n', "daemon in {path}: hook_budget_ms must be a number from 1 to 60,000"),
    ('[daemon]\nhook_budget_ms = nan\n', "daemon in {path}: hook_budget_ms must be a number from 1 to 60,000, not nan"),
    ('[daemon]\nhook_budget_ms = 1e308\n', "daemon in {path}: hook_budget_ms must be a number from 1 to 60,000"),
    ('[daemon]\nmax_queued = -1\n', "daemon in {path}: max_queued must be a number from 1 to 100,000"),
    ('[daemon]\nmax_connections = 0\n', "daemon in {path}: max_connections must be a number from 1 to 100,000"),
    ('[index]\npublish_every_s = -1\n', "index in {path}: publish_every_s must be a number from 0 to 86,400"),
    ('[watch]\ndebounce_ms = inf\n', "watch in {path}: debounce_ms must be a number from 0 to 600,000"),
    ('[log]\nbackups = -2\n', "log in {path}: backups must be a number from 0 to 1,000"),
    ('[selector]\ntarget_silence = 1.5\n', "selector in {path}: target_silence must be a number from 0.5 to 1"),
    ('[selector]\nmax_notes = 0\n', "selector in {path}: max_notes must be a number from 1 to 50"),
    ('[questions]\ntimeout_s = 0\n', "questions in {path}: timeout_s must be a number from 1 to 86,400"),
    # A threshold of nan or -inf switches a gate off; a word outside its choices did something else.
    ('[thresholds.default]\ntop_floor = nan\n', "thresholds.default in {path}: top_floor must be a number"),
    ('[thresholds.default]\ngap_floor = -inf\n', "thresholds.default in {path}: gap_floor must be a number"),
    ('[daemon]\ntransport = "carrier-pigeon"\n', 'daemon in {path}: transport must be "unix" or "tcp"'),
    ('[selector]\nkind = "bogus"\n', 'selector in {path}: kind must be "gap" or "learned"'),
    ('[team]\nwait_s = 0\n', "team in {path}: wait_s must be a number from 1 to 86,400"),
    # An empty table where a value goes: the user's file is named, not the packaged one.
    ('model = {}\n', "model in {path}: expected str"),
    # A learned selector's numbers: a word made every message a traceback, nan switched its gate off.
    ('[learned."intfloat/multilingual-e5-small"]\nthreshold = "x"\n',
     "learned.intfloat/multilingual-e5-small.threshold in {path}: expected a finite number"),
    ('[learned."intfloat/multilingual-e5-small"]\nthreshold = nan\n',
     "learned.intfloat/multilingual-e5-small.threshold in {path}: expected a finite number"),
    # a key missing from the user's own table: their file is named, not the packaged one (AI06)
    ('[learned.usem3]\nthreshold = 0.9\n', "learned.usem3.features in {path}: expected the list"),
    ('[learned."intfloat/multilingual-e5-small"]\ncoef = [[1.0, 2.0]]\n',
     "learned.intfloat/multilingual-e5-small.coef in {path}: expected 3 rows of 8 finite numbers"),
    ('[learned."intfloat/multilingual-e5-small"]\nmean = [0, 0, 0, 0, 0, 0, 0, inf]\n',
     "learned.intfloat/multilingual-e5-small.mean in {path}: expected a list of 8 finite numbers"),
])
def test_a_bad_key_is_one_line_naming_the_key_and_the_file(tmp_path, text, words):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert words.format(path=path) in msg and "\n" not in msg and "fix or remove it there" in msg


@pytest.mark.process
def test_a_bad_key_through_the_cli_is_one_line_and_exit_1(tmp_path):
    import os

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[daemon]\nbatch = 4\n", encoding="utf-8")
    env = {**os.environ, "RECALL_HOME": str(home), "RECALL_MODEL": "hash"}
    recall = str(Path(sys.executable).with_name("recall"))
    out = subprocess.run([recall, "status"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"daemon.batch in {home / 'config.toml'}: unknown setting" in lines[0]


@pytest.mark.process
def test_an_unknown_model_names_where_it_was_set(tmp_path):
    import os

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "no-such-model"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "RECALL_MODEL"} | {"RECALL_HOME": str(home)}
    recall = str(Path(sys.executable).with_name("recall"))
    out = subprocess.run([recall, "query", "how do we ship feature flags"], env=env, capture_output=True,
                         text=True, timeout=60)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1, out.stderr
    assert "unknown model 'no-such-model'" in lines[0] and str(home / "config.toml") in lines[0]
    # `recall status` too (it said the name alone), and a variable set where the user forgot it
    for extra, where in (({}, str(home / "config.toml")), ({"RECALL_MODEL": "hash "}, "env RECALL_MODEL")):
        out = subprocess.run([recall, "status"], env=env | extra, capture_output=True, text=True, timeout=60)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 1 and len(lines) == 1 and "unknown model" in lines[0] and where in lines[0], out.stderr


def test_calibration_is_taken_as_a_unit_unless_the_user_set_the_table(tmp_path):
    s = load_config(tmp_path / "none.toml", calibrated_layer=False)
    cal = s.with_calibration("hash-256", {"top_floor": 0.7, "neg_weight": 1.0, "provenance": {"mode": "x"}},
                             "/h/calibration.toml")
    t = cal.thresholds_for("hash-256")
    assert (t.top_floor, t.neg_weight, t.gap_floor, t.origin) == (0.7, 1.0, 0.025, "/h/calibration.toml")
    assert t.provenance == {"mode": "x"} and s.thresholds_for("hash-256").source == "default"  # s unchanged
    assert ("thresholds.hash-256.provenance.mode", "x", "/h/calibration.toml") in cal.entries()
    mine = tmp_path / "config.toml"
    mine.write_text('[thresholds."hash-256"]\ntop_floor = 0.1\n', encoding="utf-8")
    user = load_config(mine, calibrated_layer=False)
    assert user.with_calibration("hash-256", {"top_floor": 0.7}, "/h/calibration.toml") is user


def test_rule_is_the_selector_input_built_from_one_model_table():
    s = packaged_settings()
    rule = s.rule("intfloat/multilingual-e5-small")
    assert rule.thresholds is s.thresholds["intfloat/multilingual-e5-small"] and rule.selector.max_notes == 3
    assert rule.learned is None
    learned = dataclasses.replace(s, selector=dataclasses.replace(s.selector, kind="learned"))
    assert learned.rule("intfloat/multilingual-e5-small").learned is not None
    assert learned.rule("intfloat/multilingual-e5-small", kind="gap").learned is None  # eval's gap rule
    tuned = rule.replace(gap_floor=0.1, max_notes=2, source="tuned")
    assert (tuned.thresholds.gap_floor, tuned.selector.max_notes, tuned.thresholds.source) == (0.1, 2, "tuned")
    assert rule.as_dict()["thresholds_source"] == "intfloat/multilingual-e5-small"


def test_other_search_settings_reach_the_searcher_and_its_weight_is_read_only(recall_home, sample_notes):
    from recall.api import Recall
    from recall.embedding.models import get_embedder
    from recall.indexing.indexer import SourceSpec
    from recall.ranking.scope import Scope

    app = Recall(home=recall_home, config=load_config(), embedder=get_embedder("hash"))
    app.index([SourceSpec("dir", sample_notes)])
    text = "how do we roll back a helm release in production?"
    fused = app.query(text, Scope(everything=True))
    assert "lexical_ms" in fused.timings and app.searcher.lexical_weight == 0.4  # the TOML's, unchanged
    with pytest.raises(AttributeError):
        app.searcher.lexical_weight = 0.0  # type: ignore[misc]
    app.replace_settings(dataclasses.replace(app.config, search=app.config.search.with_lexical_weight(0.0)))
    dense = app.query(text, Scope(everything=True))
    assert "lexical_ms" not in dense.timings and dense.rule == fused.rule
    app.store.close()


@pytest.mark.slow
def test_real_model_query_uses_its_packaged_table_and_weight(recall_home, sample_notes):
    """The default model end to end: the TOML's e5 table is the rule, the TOML's weight the order."""
    from recall.api import Recall
    from recall.indexing.indexer import SourceSpec
    from recall.ranking.scope import Scope

    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text("[selector]\ncalibrate = false\n", encoding="utf-8")
    app = Recall(home=recall_home)
    assert app.config.model == DEFAULT_MODEL
    app.index([SourceSpec("dir", sample_notes)])
    res = app.query("New Celery task writes a ledger entry for each incoming payment. If a worker gets killed "
                    "mid-deploy and it runs a second time, that's harmless, right?", Scope(everything=True))
    packaged = tomllib.loads(packaged_config_text())
    t = res.rule.thresholds
    assert t.source == DEFAULT_ID and t.origin == "packaged"
    assert t.as_dict() == {**packaged["thresholds"]["default"], **{k: v for k, v in
                           packaged["thresholds"][t.source].items() if k != "provenance"}}
    assert app.searcher.lexical_weight == packaged["search"]["lexical_weight"] and "lexical_ms" in res.timings
    assert res.decision.kind in ("short", "full") and res.decision.chosen[0].note["id"] == "celery-tasks-idempotent"
    app.store.close()


def test_a_config_at_its_size_cap_still_gives_the_hook_its_snapshot(recall_home):
    """Skip tags filling the 1 MB a config may be (emoji: 12 bytes each as escaped JSON) must
    not make a snapshot the hook cannot read (it would load the settings on every message)."""
    from recall.config import snapshot
    from recall.config.load import MAX_CONFIG_BYTES, refresh_snapshot

    robot = "\U0001f916" * 20
    tags, size = [], 100
    while size < MAX_CONFIG_BYTES - 200:
        tags.append(f'"{robot}{len(tags)}"')
        size += len(tags[-1].encode()) + 2
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text("[hook]\nskip_prompt_tags = [" + ", ".join(tags[:-1]) + "]\n",
                                             encoding="utf-8")
    refresh_snapshot()
    conf = snapshot.read()
    assert conf is not None and len(conf["skip_tags"]) > 10_000


@pytest.mark.process
def test_recall_config_set_to_dev_null_means_the_defaults(tmp_path):
    """`RECALL_CONFIG=/dev/null`, the usual way to say "none of my settings": every command took
    it for a broken config file (a device, not a file) and refused to run."""
    import os

    env = {**os.environ, "RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash", "RECALL_CONFIG": os.devnull}
    recall = str(Path(sys.executable).with_name("recall"))
    out = subprocess.run([recall, "config"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "chunking.chars = 700    # packaged" in out.stdout and "Error" not in out.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # any other device or pipe is still one line naming the variable
    out = subprocess.run([recall, "status"], env={**env, "RECALL_CONFIG": str(fifo)}, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "point RECALL_CONFIG at your config file" in out.stderr


def _unshare_dev() -> bool:
    """Whether this process may run a command in a mount namespace of its own with a /dev of its
    own (root on Linux): where the tests below write at /dev/null without risking the machine's."""
    import shutil

    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-m", "true"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.process
def test_a_command_that_writes_a_setting_never_writes_over_dev_null(tmp_path):
    """`RECALL_CONFIG=/dev/null` (the packaged defaults alone) with `recall questions off`: the
    command renamed its file over the device (as root, /dev/null became a 0600 file for the whole
    machine) and said it was done (an outside tester's AI01). It is one line saying nothing can
    be written there. Run in a mount namespace with a /dev of its own: the machine's is never at risk."""
    if not _unshare_dev():
        pytest.skip("needs `unshare -m` (root on Linux) to give the command a /dev of its own")
    recall = str(Path(sys.executable).with_name("recall"))
    script = ("mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && "
              f"{recall} questions off; echo rc=$?; [ -c /dev/null ] && echo device-kept")
    env = {**os.environ, "RECALL_HOME": str(tmp_path / "home"), "RECALL_MODEL": "hash", "RECALL_CONFIG": "/dev/null"}
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert "device-kept" in out.stdout and "rc=1" in out.stdout, (out.stdout, out.stderr)
    assert "/dev/null, which stands for the packaged defaults alone" in out.stderr, out.stderr
    assert "unset RECALL_CONFIG" in out.stderr


def test_a_file_written_whole_never_replaces_a_pipe_or_a_device(tmp_path):
    """The one writer of recall's own files (``replace_private``) renamed its temporary file over
    whatever was at the path: a device (AI01's /dev/null), a named pipe. It refuses anything but a
    file, and leaves it as it was."""
    from recall.privacy.paths import replace_private
    from recall.privacy.regular import NotAFile

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    with pytest.raises(NotAFile, match="named pipe"):
        replace_private(fifo, "[questions]\ngenerate = 'off'\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["config.toml"]


def test_a_relative_rule_folder_is_the_one_beside_the_config_file(recall_home, hash_model, tmp_path):
    """`rules = ["shared-rules"]` was read from where each command ran: indexed from one project,
    "no longer in [sources] rules" and dropped from the next, embedded again from the first (an
    outside tester's AI10). A relative folder is the one beside the file that names it."""
    from helpers.cli import run_cli
    from helpers.notes import write_note

    recall_home.mkdir(parents=True)
    write_note(recall_home / "shared-rules", "tabs", "Tabs not spaces", "indent rule", "Use tabs.", "feedback")
    (recall_home / "config.toml").write_text('[sources]\nrules = ["shared-rules"]\n')
    assert load_config().sources.rules == (str(recall_home / "shared-rules"),)
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        out = run_cli("index", cwd=tmp_path / where)
        assert out.returncode == 0 and "dropped" not in out.stderr, out.stderr
        assert "shared-rules does not" not in out.stderr, out.stderr
    assert "Tabs not spaces" in run_cli("search", "tabs indent rule", cwd=tmp_path / "b").stdout
