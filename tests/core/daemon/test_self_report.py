"""What recall says about itself is what is true (stop 48, an outside tester's Y-02 to Y-09):
the read tracker's counts, its log's place and size, a team URL set in the environment, the
MCP status of a damaged index, the daemon's log kept bounded and read from its end, a
calibration that kept the packaged floor, a daemon answering with other settings."""

from __future__ import annotations

import json
import logging
import time

import pytest

from helpers.cli import run_cli
from recall.agents import track


def _query_line(when: float, note: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    return f"{stamp},{int(when * 1000) % 1000:03d} INFO query " + json.dumps(
        {"decision": "short", "chosen": [{"id": note, "score": 0.5}]}) + "\n"


def test_opened_counts_each_injection_once_and_reads_go_to_logs(recall_home, monkeypatch):
    logs = recall_home / "logs"
    logs.mkdir(parents=True)
    injected = time.time() - 60
    (logs / "daemon.log").write_text(_query_line(injected, "deploy"), encoding="utf-8")
    monkeypatch.setattr(track, "note_for_path", lambda path: "deploy")
    for i in range(4):  # one session reads it three times, another once
        track.record({"tool_name": "Read", "tool_input": {"file_path": "/n/deploy.md"},
                      "session_id": "s1" if i < 3 else "s2"}, now=injected + 10 + i)
    assert track.reads_path() == logs / "reads.jsonl" and track.reads_path().is_file()
    assert track.stats() == [{"note": "deploy", "injected": 1, "opened": 1, "last_injected": pytest.approx(injected,
                                                                                                         abs=0.01)}]


def test_the_read_log_is_bounded(recall_home, monkeypatch):
    logs = recall_home / "logs"
    logs.mkdir(parents=True)
    (logs / "daemon.log").write_text(_query_line(time.time() - 5, "deploy"), encoding="utf-8")
    (logs / "reads.jsonl").write_bytes(b"x" * (track.READS_MAX_BYTES + 1))
    monkeypatch.setattr(track, "note_for_path", lambda path: "deploy")
    track.record({"tool_name": "Read", "tool_input": {"file_path": "/n/deploy.md"}})
    assert (logs / "reads.jsonl").stat().st_size < 1000 and (logs / "reads.jsonl.1").exists()


def test_config_shows_the_team_url_the_environment_sets(recall_home):
    recall_home.mkdir(parents=True)
    (recall_home / "config.toml").write_text('[team]\nurl = "postgresql://alice@127.0.0.1:1/recall"\n')
    out = run_cli("config", env={"RECALL_PG_URL": "postgresql://alice@127.0.0.2:2/recall"}).stdout
    line = next(x for x in out.splitlines() if x.startswith("team.url"))
    assert "127.0.0.2" in line and "# env RECALL_PG_URL" in line, line


def test_a_log_kept_with_no_backups_still_stays_bounded(tmp_path):
    from recall.daemon.logs import PrivateRotatingFileHandler

    path = tmp_path / "daemon.log"
    handler = PrivateRotatingFileHandler(path, maxBytes=2000, backupCount=0, encoding="utf-8")
    logger = logging.getLogger("test-self-report")
    logger.addHandler(handler)
    try:
        for i in range(200):
            logger.warning("line %d %s", i, "x" * 80)
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert path.stat().st_size <= 2000 and not list(tmp_path.glob("daemon.log.*"))


def test_recall_log_reads_a_torn_end_from_its_end_and_says_so(recall_home):
    logs = recall_home / "logs"
    logs.mkdir(parents=True)
    with open(logs / "daemon.log", "wb") as fh:
        fh.write(_query_line(time.time(), "deploy").encode() + b"\0" * 4_000_000)
    t0 = time.perf_counter()
    res = run_cli("log", "-n", "3")
    assert res.returncode == 0 and len(res.stdout) < 10_000, len(res.stdout)
    assert "zero bytes" in res.stderr and time.perf_counter() - t0 < 5


def test_a_calibration_that_kept_the_packaged_floor_says_why(recall_home, hash_model, tmp_path):
    from helpers.notes import write_note

    notes = tmp_path / "notes"
    for i in range(4):
        write_note(notes, f"n{i}", f"Deploy step {i}", f"how step {i} goes", f"step {i} body")
    # near misses: the notes' own words (nearer them than the bank's chit-chat), about something else
    near = [f"deploy step {i % 4} goes wrong on staging {i}" for i in range(20)]
    (notes / "negatives.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in near))
    assert run_cli("index", "-q", str(notes)).returncode == 0
    status = run_cli("status").stdout
    line = next(x for x in status.splitlines() if x.startswith("thresholds:"))
    assert "the packaged floor kept: 20 of the folder's own negatives, under the 30 a fit needs" in line, line
    # 20 more about nothing near the notes: 40 of its own, still 20 near misses
    with (notes / "negatives.jsonl").open("a") as fh:
        fh.write("".join(json.dumps({"text": f"unrelated message number {i}"}) + "\n" for i in range(20)))
    assert run_cli("index", "-q", str(notes)).returncode == 0
    line = next(x for x in run_cli("status").stdout.splitlines() if x.startswith("thresholds:"))
    import re

    counted = re.search(r"the packaged floor kept: (\d+) of the folder's 40 own negatives near the notes", line)
    assert counted and 20 <= int(counted.group(1)) < 30, line


@pytest.mark.process
def test_status_says_when_the_daemon_answers_with_other_settings(indexed, daemons, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text('model = "hash"\n[thresholds."hash-256"]\ntop_floor = 0.95\n')
    daemons.start(RECALL_CONFIG=str(other))
    out = run_cli("status").stdout
    assert f"answers with the settings in {other}" in out and "top_floor 0.95" in out, out
