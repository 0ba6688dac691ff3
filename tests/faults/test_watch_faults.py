"""inotify's limits, met by `recall watch` on a large tree: at the start, and while it runs (a
folder made inside the tree past the limit). Before stop 40 the first said 'no space left on
the disk' (inotify's ENOSPC read as a full disk) and the second left each new folder unwatched
with one watchdog warning apiece. Now the folders are walked instead, said once."""

from __future__ import annotations

import glob
import subprocess
import time
from pathlib import Path

import pytest

from helpers.daemon import wait_for, write_config
from helpers.env import env_with
from helpers.notes import write_note
from helpers.paths import PY

LIMIT = Path("/proc/sys/fs/inotify/max_user_watches")


def watches_in_use() -> int:
    """inotify watches this user holds now (each `inotify wd:` line of every descriptor of the
    user's processes: the limit is per user)."""
    import os

    used = 0
    for info in glob.glob("/proc/[0-9]*/fdinfo/*"):
        try:
            if os.stat(info.split("/fdinfo/")[0]).st_uid != os.getuid():
                continue
            with open(info, encoding="ascii", errors="replace") as fh:
                used += sum(line.startswith("inotify wd:") for line in fh)
        except OSError:
            continue
    return used


@pytest.fixture
def watch_limit():
    """Sets fs.inotify.max_user_watches for the test (root, a writable /proc/sys), given back after."""
    try:
        before = LIMIT.read_text()
        LIMIT.write_text(before)
    except OSError as exc:
        pytest.skip(f"cannot set fs.inotify.max_user_watches here ({exc.strerror}): needs root")

    def set_to(value: int) -> None:
        LIMIT.write_text(f"{value}\n")

    try:
        yield set_to
    finally:
        LIMIT.write_text(before)


@pytest.mark.parametrize("when", ["at the start", "while running"])
def test_inotify_watch_limit_the_folders_are_walked_and_saves_indexed(probe, tmp_path, watch_limit, when):
    home, notes = tmp_path / "home", tmp_path / "notes"
    env = env_with(RECALL_HOME=str(home), RECALL_MODEL="hash")
    write_config(home)
    write_note(notes, "first", "first note", "a note there before", "body")
    for i in range(3):
        (notes / f"sub{i}").mkdir()
    assert subprocess.run([PY, "-m", "recall.cli", "index", "-q", str(notes)], env=env,
                          capture_output=True, timeout=300).returncode == 0
    # at the start: room for one folder of four; while running: the four, not the forty made after
    watch_limit(watches_in_use() + (1 if when == "at the start" else 6))
    log = tmp_path / "watch.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([PY, "-m", "recall.cli", "watch"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: b"watching " in log.read_bytes(), 60), log.read_text()
        if when == "while running":
            for i in range(40):
                (notes / f"new{i}").mkdir()
        time.sleep(1.5)
        write_note(notes / "new39" if when == "while running" else notes / "sub2", "late", "zorblax late note",
                   "saved after the limit was met", "body")

        def found() -> bool:
            out = subprocess.run([PY, "-m", "recall.cli", "search", "zorblax late note", "--json"], env=env,
                                 capture_output=True, text=True, timeout=60).stdout
            return '"late"' in out
        assert wait_for(found, 40), log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    said = log.read_text()
    assert said.count("inotify's limit reached (fs.inotify.max_user_watches)") == 1, said
    assert "sysctl fs.inotify.max_user_watches=" in said and "no space left" not in said, said
    assert "Unable to watch" not in said, said  # watchdog's warning per folder: told once, by recall
    probe.add(inputs=1, faults=1, survived=1)


QUEUE = Path("/proc/sys/fs/inotify/max_queued_events")


@pytest.fixture
def small_event_queue():
    """fs.inotify.max_queued_events made small for the watchers started in the test (a queue's
    size is fixed when its inotify instance is made), given back after."""
    try:
        before = QUEUE.read_text()
        QUEUE.write_text("64\n")
    except OSError as exc:
        pytest.skip(f"cannot set fs.inotify.max_queued_events here ({exc.strerror}): needs root")
    try:
        yield
    finally:
        QUEUE.write_text(before)


def test_file_events_the_system_dropped_are_caught_up_by_reading_the_folder_again(probe, tmp_path,
                                                                                   small_event_queue):
    """An outside tester rewrote 12,000 notes while `recall watch` was busy: the kernel's event
    queue overflowed, and 6,539 notes stayed stale in the index for good, nothing said."""
    home, notes = tmp_path / "home", tmp_path / "notes"
    env = env_with(RECALL_HOME=str(home), RECALL_MODEL="hash")
    write_config(home)
    for i in range(3):
        write_note(notes, f"n{i}", f"note {i}", "before", "the old text")
    assert subprocess.run([PY, "-m", "recall.cli", "index", "-q", str(notes)], env=env,
                          capture_output=True, timeout=300).returncode == 0
    log = tmp_path / "watch.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([PY, "-m", "recall.cli", "watch"], env=env, stdout=out, stderr=subprocess.STDOUT)
    import signal

    try:
        assert wait_for(lambda: b"watching " in log.read_bytes(), 60), log.read_text()
        proc.send_signal(signal.SIGSTOP)  # busy: the kernel queues, then drops, what happens meanwhile
        for i in range(200):
            (notes / f"junk-{i}.log").write_text("x")
        for i in range(3):  # rewritten in place, as a checkout does: only events tell
            path = notes / f"n{i}.md"
            path.write_text(path.read_text().replace("the old text", f"quixotic rewrite number {i}"))
        proc.send_signal(signal.SIGCONT)

        def caught_up() -> bool:
            out = subprocess.run([PY, "-m", "recall.cli", "search", "quixotic rewrite number", "--json", "-k", "10"],
                                 env=env, capture_output=True, text=True, timeout=60).stdout
            return all(f"quixotic rewrite number {i}" in out for i in range(3))  # the new text, indexed
        assert wait_for(caught_up, 60), log.read_text()
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=30)
    assert "file events were lost" in log.read_text()
    probe.add(inputs=1, faults=1, survived=1)
