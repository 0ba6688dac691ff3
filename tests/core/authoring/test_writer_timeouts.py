"""A note loses a try only for what it alone caused.

A request that timed out counted a try against every note of its batch: two timeouts of a
batch, because one note in it was slow, gave every note of the batch up for good. Now a batch
of several notes that timed out costs no note a try and is asked again at once in halves, down
to one note; only a note that times out alone loses its try."""

from __future__ import annotations

import json
import re

from helpers.cli import run_cli
from helpers.daemon import write_config
from helpers.fake_agent import fake_claude
from helpers.notes import write_note
from recall.authoring import notegen, tries


def test_a_timeout_costs_a_try_only_to_the_note_that_times_out_alone(folder, tmp_path, recall_home, hash_model):
    write_note(folder, "slow-note", "A slow one", "Slow to answer", "SLOWMARK: the agent never ends on this one.")
    record, env = fake_claude(tmp_path)
    agent = tmp_path / "bin" / "claude"
    agent.write_text(agent.read_text().replace(
        "stems = ", "if 'SLOWMARK' in prompt:\n    import time\n    time.sleep(60)\nstems = ", 1))
    write_config(recall_home, "[questions]\nbatch_notes = 10\ntimeout_s = 2\n")
    (folder / "negatives.jsonl").write_text(json.dumps({"text": "rename a git branch?"}) + "\n")  # none asked
    background = {**env, "RECALL_GENERATING": "1"}  # as `recall index` starts it: tries are kept
    first = run_cli("questions", "run", str(folder), env=background)
    assert "Traceback" not in first.stderr, first.stderr
    got = {json.loads(line)["note"] for line in (folder / "questions.jsonl").read_text().splitlines()}
    assert got == {"deploy-freeze", "zeitzone-utc", "decimal-money"}, first.stdout + first.stderr
    assert "slow-note" in first.stdout + first.stderr and "alone" in first.stdout + first.stderr
    given = {p.stem: tries.given_up(p) for p in notegen.folder_state(folder).pending}
    assert given == {"slow-note": False}
    calls = len(record.read_text().splitlines())
    second = run_cli("questions", "run", str(folder), env=background)
    assert "Traceback" not in second.stderr, second.stderr
    asked = [json.loads(line)["prompt"] for line in record.read_text().splitlines()[calls:]]
    assert asked and all("SLOWMARK" in p and "No deploys on Friday" not in p for p in asked)  # alone
    assert "1 note(s) got nothing from the agent in 2 tries" in run_cli("questions", env=env).stdout


def test_an_agent_slow_whatever_it_is_asked_stops_the_run_and_the_next_asks_smaller_batches(
        folder, tmp_path, recall_home, hash_model):
    """Halving a batch where every request times out would ask 2n - 1 times: a run stops after
    four timeouts, having charged a try only to a note asked alone, and the next run goes on from
    the smaller batches it had reached."""
    record, env = fake_claude(tmp_path)
    write_note(folder, "fourth-note", "Fourth", "A fourth note", "body")
    agent = tmp_path / "bin" / "claude"
    agent.write_text(agent.read_text().replace("stems = ", "import time\ntime.sleep(60)\nstems = ", 1))
    write_config(recall_home, "[questions]\nbatch_notes = 10\ntimeout_s = 1\n")
    (folder / "negatives.jsonl").write_text(json.dumps({"text": "rename a git branch?"}) + "\n")
    background = {**env, "RECALL_GENERATING": "1"}
    first = run_cli("questions", "run", str(folder), env=background)
    assert first.returncode == 1 and "4 requests of this run ran past it" in first.stderr, first.stderr
    sizes = [len(re.findall(r"^### ", json.loads(line)["prompt"], flags=re.M))
             for line in record.read_text().splitlines()]
    assert sizes == [4, 2, 2, 1]
    pending = notegen.folder_state(folder).pending
    assert len(pending) == 4 and not any(tries.given_up(p) for p in pending)
    run_cli("questions", "run", str(folder), env=background)
    sizes = [len(re.findall(r"^### ", json.loads(line)["prompt"], flags=re.M))
             for line in record.read_text().splitlines()[4:]]
    assert sizes and max(sizes) <= 2, sizes
