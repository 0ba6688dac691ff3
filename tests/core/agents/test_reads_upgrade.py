"""Read tracking kept across an upgrade: releases up to stop 48 wrote it to ``usage/reads.jsonl``,
which later releases did not read, so `recall log --stats` said "opened 0" and told a user who had
installed --track-reads to install it (an outside tester's upgrade, class 2)."""

from __future__ import annotations

import json
import time

from helpers.cli import run_cli


def test_reads_an_older_release_recorded_are_counted(recall_home):
    stamp = "2026-12-01 10:00:00"
    logs = recall_home / "logs"
    logs.mkdir(parents=True)
    chosen = {"chosen": [{"id": "deploy-rollback"}]}
    (logs / "daemon.log").write_text(f"{stamp},250 INFO query {json.dumps(chosen)}\n")
    injected_at = round(time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + 0.25, 3)
    usage = recall_home / "usage"
    usage.mkdir()
    (usage / "reads.jsonl").write_text(json.dumps({"note": "deploy-rollback", "path": "/n/deploy.md",
                                                   "time": injected_at + 5, "session": "s",
                                                   "injected_at": injected_at}) + "\n")
    (usage / "reads.jsonl").chmod(0o600)
    said = run_cli("log", "--stats", check=True)
    row = next(line for line in said.stdout.splitlines() if line.startswith("deploy-rollback"))
    assert row.split()[1:3] == ["1", "1"], said.stdout
    assert "no reads recorded" not in said.stderr, said.stderr
