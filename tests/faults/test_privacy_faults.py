"""Privacy probes: fuzzed hook input, and planted secrets and prompt canaries looked for in
every byte under RECALL_HOME (SQLite and its WAL, FAISS files, meta.json, lexical.npz, logs,
caches) after `recall index` and questions through the real daemon and the real hook."""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import time
from pathlib import Path

import pytest

from helpers.corpora import build_corpus
from helpers.daemon import CHITCHAT, MATCHING, write_config
from helpers.env import env_with
from helpers.leaks import files_under, find_leaks
from helpers.notes import write_note
from helpers.paths import PY, SAMPLE_NOTES
from recall.privacy.paths import encode_project_path, projects_dir

HOOK_TIMEOUT_S = 30
ALNUM = string.ascii_letters + string.digits


def run_hook(stdin: bytes, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=stdin, capture_output=True,
                          env=env_with(**env), timeout=HOOK_TIMEOUT_S)


def recall(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "recall.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env_with(RECALL_MODEL="hash"), timeout=300)


def event(prompt: object, cwd: object = "/", **extra: object) -> bytes:
    return json.dumps({"session_id": os.urandom(8).hex(), "transcript_path": "/nonexistent.jsonl", "cwd": cwd,
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt, **extra}).encode()


def malformed_events(rng: random.Random) -> list[bytes]:
    """Inputs no hook should answer: broken JSON, wrong types, bad encodings, odd sizes. The
    well-formed event they are cut from is small talk, which the daemon never answers, so
    a corruption that leaves it valid must print nothing too."""
    good = event(CHITCHAT)
    out = [
        b"", b"\n", b"null", b"[]", b"42", b'"prompt"', b"{", b"}", b"{{}}", b"\xff\xfe\x00",
        good[: len(good) // 2], good + b"garbage", good.replace(b'"prompt"', b'"prompt\\ud800"'),
        json.dumps({"prompt": None}).encode(), json.dumps({"prompt": 12345678}).encode(),
        json.dumps({"prompt": ["a list", "of words"]}).encode(), json.dumps({"prompt": {"a": 1}}).encode(),
        json.dumps({"prompt": True}).encode(), json.dumps({"prompt": "short"}).encode(),
        json.dumps({"prompt": "   \n\t   "}).encode(), event("é" * 3, cwd=None),
        b"[" * 100_000 + b"]" * 100_000, b'{"prompt": "' + b"\xc3\x28" * 50 + b'"}',
        b"\x00" * 4096, b'{"prompt": "x"}' * 1000,
    ]
    for _ in range(20):  # random bytes, random JSON fragments, truncations at random points
        kind = rng.randrange(3)
        if kind == 0:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        elif kind == 1:
            cut = rng.randrange(1, len(good))
            out.append(good[:cut])
        else:
            blob = bytearray(good)
            for _ in range(rng.randrange(1, 6)):
                blob[rng.randrange(len(blob))] = rng.randrange(256)
            out.append(bytes(blob))
    return out


def test_hook_input_fuzzing(probe, indexed, daemons):
    """Malformed events into the real hook, a real daemon behind it: exit 0, print nothing."""
    daemons.start()
    rng = random.Random(1616)
    inputs = malformed_events(rng)
    t0 = time.monotonic()
    for stdin in inputs:
        proc = run_hook(stdin)
        assert proc.returncode == 0, (stdin[:80], proc.stderr[-500:])
        assert proc.stdout == b"", (stdin[:80], proc.stdout[:200])
        probe.add(inputs=1, faults=1, survived=1)
    # Wrong-typed fields around a real prompt: answered or not, never more than one JSON line.
    for cwd in (None, 7, ["/"], "", "/nonexistent/" + "x" * 300, "\x00"):
        proc = run_hook(event(MATCHING, cwd=cwd))
        assert proc.returncode == 0
        lines = proc.stdout.splitlines()
        assert len(lines) <= 1 and all(json.loads(line)["hookSpecificOutput"] for line in lines)
        probe.add(inputs=1, faults=1, survived=1)
    assert time.monotonic() - t0 < 90
    proc = run_hook(event(MATCHING))  # and the daemon still answers
    assert proc.returncode == 0 and b"additionalContext" in proc.stdout


def _secret_values(seed: int) -> list[tuple[str, str, str]]:
    """(kind, line, what must not survive) for many kinds of secrets with fresh values."""
    from helpers.corpora import issue16_cases

    corpus = [(c.kind, c.line, c.random_part) for c in build_corpus(seed)]
    return corpus + issue16_cases(seed + 1)


def test_planted_secrets_and_prompt_canaries_never_reach_disk(probe, recall_home, hash_model, daemons, tmp_path):
    """Secrets in notes (name, description, body, questions, questions file) and in conversation
    titles; prompt canaries typed into the hook and into transcripts without a title. After
    `recall index` and questions through the daemon, no byte under RECALL_HOME holds any."""
    rng = random.Random(20261130)
    write_config(recall_home)
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    convs = projects_dir() / encode_project_path(project)
    memory = convs / "memory"
    cases = _secret_values(rng.randrange(10**9))
    for i, (kind, line, _part) in enumerate(cases):  # whole lines: a cut secret is a test's own leak
        one_line = " ".join(line.split())
        write_note(memory, f"cfg-{i:03d}", json.dumps(f"{kind} note {one_line}"), json.dumps(one_line),
                   f"Setup for {kind}:\n{line}\nThat is all.\n")
    (memory / "questions.jsonl").write_text("".join(
        json.dumps({"note": f"cfg-{i:03d}", "questions": [f"where is {line}?"]}) + "\n"
        for i, (_, line, _) in enumerate(cases[:20])), encoding="utf-8")
    from helpers.corpora import Transcript, conversation

    canaries = ["Canary" + "".join(rng.choice(ALNUM) for _ in range(14)) for _ in range(6)]
    for i, (_, line, _) in enumerate(cases[:10]):
        conversation(session_id=f"titled-{i}").title("custom-title", line).write(convs)
    Transcript(session_id="untitled-0").user(f"{canaries[0]} fix the login test").assistant("ok").write(convs)
    conversation(session_id="untitled-1").title("last-prompt", f"{canaries[1]} and deploy").write(convs)
    for source in SAMPLE_NOTES.glob("*.md"):
        (memory / source.name).write_bytes(source.read_bytes())
    # A control: a plain word in a body, which the scan must find in the store and in BM25's vocabulary.
    control = "Controlword" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))
    write_note(memory, "control", "Control note", "a plain word", f"the word {control} is no secret")

    out = recall("index", "-q", cwd=project)
    assert out.returncode == 0, out.stderr
    daemons.start()
    typed = [f"{c} how do we add a feature flag with Unleash?" for c in canaries[2:]]
    typed += [f"{line} -- what is this for?" for _, line, _ in cases[:8]]  # secrets typed into prompts
    for prompt in typed:
        assert run_hook(event(prompt, cwd=str(project))).returncode == 0
    q = recall("query", "feature flags with Unleash", cwd=project)
    assert q.returncode == 0, q.stderr

    counts = json.loads(recall("status", "--json", cwd=project).stdout)["counts"]
    notes_written = len(list(memory.glob("*.md")))
    assert counts["notes"] == notes_written + 10  # every note, and the ten titled conversations
    seen = {f for _, f in find_leaks(recall_home, [control])}
    assert {"recall.db", "lexical.npz"} <= {Path(f).name for f in seen}, seen
    files = files_under(recall_home)
    names = {p.name for p in files}
    assert "recall.db" in names and "lexical.npz" in names and "daemon.log" in names, names
    needles = [part for _, _, part in cases]
    leaked = find_leaks(recall_home, needles)
    found = find_leaks(recall_home, canaries)
    probe.add(inputs=len(cases) + len(typed) + 2, secrets=len(leaked), prompts=len(found))
    assert leaked == [], leaked[:5]
    assert found == [], found


def test_a_crashed_daemon_leaves_no_core_dump_of_the_messages_it_held(probe, indexed, daemons):
    """A daemon that crashes (a native library's segfault) where core dumps are allowed wrote a
    330 MB `core` of its memory, the messages it was asked included, into RECALL_HOME/run (stop 40).
    Now it never dumps: none is written, whatever the shell's `ulimit -c`."""
    import os
    import signal

    where = Path("/proc/sys/kernel/core_pattern")
    pattern = where.read_text().strip() if where.exists() else ""
    if not pattern or pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"core dumps go to {pattern or 'no file'!r} here: this probe reads the daemon's own folder")
    daemon = daemons.start(cores=True)
    canary = "Canary" + "".join(random.Random(40).choice(ALNUM) for _ in range(14))
    assert run_hook(event(f"{canary} how do we add a feature flag with Unleash?")).returncode == 0
    os.kill(daemon.pid, signal.SIGSEGV)
    assert daemon.wait(timeout=60) == -signal.SIGSEGV
    home = indexed
    dumps = [p for p in files_under(home) if p.name.startswith("core")]  # core_pattern "core": in its cwd, run/
    found = find_leaks(home, [canary])
    probe.add(inputs=1, faults=1, survived=int(not dumps), prompts=len(found))
    assert dumps == [], dumps
    assert found == [], found
