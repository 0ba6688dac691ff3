"""Fault probes on RECALL_HOME itself (issue 25, classes 3 and 7): a daemon another user planted,
and a home recall cannot write or that another user owns.

Class 3: another real uid (``helpers.users``) plants a run folder, a status file and a socket
that records whatever it receives and answers with a forged block. The hook, run as Claude Code
runs it, must exit 0, print nothing of the impostor's, and send it nothing; ``recall status``
says why in one line. Class 7: a read-only mount (a private mount namespace) and the run/ and
logs/ folders root leaves after one ``sudo recall serve``: every command prints one line with
the repair, the hook stays silent and quick, and after the repair the notes are all there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers.daemon import MATCHING
from helpers.env import env_with
from helpers.paths import PY, SAMPLE_NOTES
from helpers.users import FORGED_BLOCK, OTHER_UID, as_user, need_second_user, received, start_impostor

CANARY = "CANARY-home-7d3e11"
PROMPT = f"{MATCHING} {CANARY}"


def hook(env: dict[str, str] | None = None, user: int | None = None) -> tuple[subprocess.CompletedProcess, float]:
    stdin = json.dumps({"session_id": os.urandom(8).hex(), "cwd": "/", "hook_event_name": "UserPromptSubmit",
                        "prompt": PROMPT}).encode()
    cmd = [PY, "-P", "-m", "recall.agents.hook"]
    t0 = time.monotonic()
    proc = subprocess.run(as_user(user, *cmd) if user is not None else cmd, input=stdin,
                          capture_output=True, env=env or env_with(), timeout=30)
    return proc, time.monotonic() - t0


def recall(*args: str, user: int | None = None, wrap: list[str] | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [PY, "-m", "recall.cli", *args]
    if user is not None:
        cmd = as_user(user, *cmd)
    return subprocess.run([*(wrap or []), *cmd], capture_output=True, text=True, env=env or env_with(),
                          timeout=120)


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed with exactly one ``Error:`` line holding ``words`` and no traceback."""
    err = proc.stderr.strip()
    assert proc.returncode == 1, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("Error: ") and all(w in err for w in words), err
    return err


# --- class 3: the client trusts any daemon ---------------------------------------------------


def _status(run: Path, pid: int, **extra: object) -> None:
    (run / "daemon.json").write_text(json.dumps({"pid": pid, "socket": str(run / "daemon.sock"),
                                                 "model": "hash-256", "transport": "unix", **extra}))


TCP_SQUATTED = "tcp port taken by another uid after the daemon died"
TCP_PID_REUSED = "tcp daemon's pid reused by a process of mine"


def _plant(case: str, home: Path, drop: Path) -> subprocess.Popen:
    """Set up one attack on ``home``; the impostor process it started."""
    run = home / "run"
    record = drop / f"{case}.got"
    if case == "shared home (0777, another uid)":
        home.mkdir(mode=0o777)
        os.chmod(home, 0o777)
        run.mkdir(mode=0o777)
        os.chown(home, OTHER_UID, OTHER_UID)
        os.chown(run, OTHER_UID, OTHER_UID)
        proc = start_impostor(OTHER_UID, str(run / "daemon.sock"), record)
        _status(run, proc.pid)
        os.chown(run / "daemon.json", OTHER_UID, OTHER_UID)
    elif case == "run folder pre-created by another uid":
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o755)
        os.chown(run, OTHER_UID, OTHER_UID)
        proc = start_impostor(OTHER_UID, str(run / "daemon.sock"), record)
        _status(run, proc.pid)
    elif case == "files mine, process another uid's (SO_PEERCRED)":
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        os.chown(run, OTHER_UID, OTHER_UID)  # lets the impostor bind; handed back below
        proc = start_impostor(OTHER_UID, str(run / "daemon.sock"), record)
        os.chown(run, 0, 0)
        os.chown(run / "daemon.sock", 0, 0)
        os.chmod(run / "daemon.sock", 0o600)
        _status(run, proc.pid)
        os.chmod(run / "daemon.json", 0o600)
    elif case == "status file open to others":
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        proc = start_impostor(None, str(run / "daemon.sock"), record)
        os.chmod(run / "daemon.sock", 0o600)
        _status(run, proc.pid)
        os.chmod(run / "daemon.json", 0o666)
    elif case == "status file is a link to another uid's file":
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        proc = start_impostor(None, str(run / "daemon.sock"), record)
        os.chmod(run / "daemon.sock", 0o600)
        _status(drop, proc.pid)
        (drop / "daemon.json").write_text(json.dumps({"pid": proc.pid, "socket": str(run / "daemon.sock")}))
        os.chown(drop / "daemon.json", OTHER_UID, OTHER_UID)
        (run / "daemon.json").symlink_to(drop / "daemon.json")
    elif case == "tcp status and secret planted by another uid":
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = start_impostor(OTHER_UID, f"tcp:{port}", record)
        _status(run, proc.pid, transport="tcp", port=port, socket=f"127.0.0.1:{port}")
        os.chmod(run / "daemon.json", 0o600)
        (run / "daemon.secret").write_text("0" * 64)
        os.chown(run / "daemon.secret", OTHER_UID, OTHER_UID)
        os.chmod(run / "daemon.secret", 0o600)
    elif case in (TCP_SQUATTED, TCP_PID_REUSED):
        # An outside tester's H4: daemon.json (mine, 0600) still names a dead daemon's port and
        # a pid now another process's; whoever took the port got the prompt and the secret.
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        theirs = case == TCP_SQUATTED
        proc = start_impostor(OTHER_UID if theirs else None, f"tcp:{port}", record)
        # the pid: a live process of mine that is not the daemon (this test's); its start time
        # as the daemon that wrote the file recorded its own
        _status(run, os.getpid(), transport="tcp", port=port, socket=f"127.0.0.1:{port}",
                **({} if theirs else {"pid_start": "1"}))
        os.chmod(run / "daemon.json", 0o600)
        (run / "daemon.secret").write_text("7" * 64)
        os.chmod(run / "daemon.secret", 0o600)
    else:  # the status file names a socket outside the run folder
        home.mkdir(mode=0o700)
        run.mkdir(mode=0o700)
        proc = start_impostor(OTHER_UID, str(drop / "evil.sock"), record)
        _status(run, proc.pid, socket=str(drop / "evil.sock"))
        os.chmod(run / "daemon.json", 0o600)
    return proc


PLANTED = ["shared home (0777, another uid)", "run folder pre-created by another uid",
           "files mine, process another uid's (SO_PEERCRED)", "status file open to others",
           "status file is a link to another uid's file", "tcp status and secret planted by another uid",
           "status names a socket outside the run folder", TCP_SQUATTED, TCP_PID_REUSED]


def test_class3_client_trusts_no_planted_daemon(recall_home, hash_model, daemons, tmp_path, probe):
    need_second_user()
    drop = tmp_path / "attacker"
    drop.mkdir()
    os.chown(drop, OTHER_UID, OTHER_UID)
    for i, case in enumerate(PLANTED):
        home = tmp_path / f"home-{i}"
        env = env_with(RECALL_HOME=str(home), RECALL_MODEL="hash")
        impostor = _plant(case, home, drop)
        try:
            proc, wall = hook(env)
            status = recall("status", "--json", env=env)
            got = received(drop / f"{case}.got")
        finally:
            impostor.kill()
            impostor.wait(timeout=10)
            daemons.kill_all()
        probe.add(inputs=1, faults=1, prompts=got.count(CANARY.encode()))
        assert CANARY.encode() not in got and b"prompt" not in got and b"7777" not in got, (case, got[:200])
        assert proc.returncode == 0 and wall < 1.5, (case, proc.returncode, wall)
        assert FORGED_BLOCK.encode() not in proc.stdout, case
        # status tells the truth: the home refused in one line, or the daemon refused and why
        assert "Traceback" not in status.stderr, (case, status.stderr)
        if status.returncode == 0 and case == "status file open to others":
            pass  # the CLI closes up its own user's files (0600) and the process is this user's
        elif status.returncode == 0:  # the impostor is refused, or not taken for a daemon at all
            info = json.loads(status.stdout)["daemon"]
            assert ("repair" in info.get("refused", "") or not info["running"]
                    or info.get("pid") != impostor.pid), (case, info)
        else:
            one_line_error(status, "repair")
        probe.add(survived=1)


# --- class 7: a home recall cannot write, or that another user owns ----------------------------


def _read_only(home: Path) -> list[str]:
    """A prefix that runs a command with ``home`` mounted read-only (its own mount namespace;
    nothing to undo afterwards)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a read-only mount")
    userns = [] if os.geteuid() == 0 else ["-r"]
    probe = subprocess.run(["unshare", *userns, "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"mount namespaces not allowed here: {probe.stderr.decode().strip()}")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", *userns, "-m", "sh", "-c", script, str(home)]


COMMANDS = [("status",), ("query", MATCHING), ("index", str(SAMPLE_NOTES)), ("serve", "--wait", "5"),
            ("calibrate",), ("stop",)]


def test_class7_read_only_home(indexed, daemons, probe):
    ro = _read_only(indexed)
    for args in COMMANDS:
        proc = recall(*args, wrap=ro)
        probe.add(inputs=1, faults=1)
        one_line_error(proc, "read-only", "repair:", "RECALL_HOME")
        probe.add(survived=1)
    t0 = time.monotonic()
    stdin = json.dumps({"prompt": PROMPT, "cwd": "/"}).encode()
    hooked = subprocess.run([*ro, PY, "-P", "-m", "recall.agents.hook"], input=stdin, capture_output=True,
                            timeout=30)
    wall = time.monotonic() - t0
    probe.add(inputs=1, faults=1)
    assert hooked.returncode == 0 and hooked.stdout == b"" and wall < 1.5, (hooked, wall)
    probe.add(survived=1)
    # Writable again: nothing was lost, the note is found.
    found = recall("query", "--json", MATCHING)
    lost = 0 if found.returncode == 0 and "feature" in found.stdout.lower() else 1
    probe.add(lost=lost)
    assert not lost, found.stdout + found.stderr


def test_class7_home_after_sudo_serve(indexed, tmp_path, probe):
    """The user's home (another real uid here) with run/ and logs/ left root's by an old
    `sudo recall serve`; and `sudo recall serve` today, which refuses to touch it."""
    need_second_user()
    user = OTHER_UID
    home = tmp_path / "user-home"
    shutil.copytree(indexed, home)
    os.makedirs(home / "run", exist_ok=True)
    os.makedirs(home / "logs", exist_ok=True)
    (home / "logs" / "daemon.log").write_text("")
    for dirpath, dirnames, filenames in os.walk(home):
        for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
            os.chown(name, user, user)
    for root_left in (home / "run", home / "logs", home / "logs" / "daemon.log"):
        os.chown(root_left, 0, 0)
    env = env_with(RECALL_HOME=str(home), RECALL_MODEL="hash", CLAUDE_CONFIG_DIR=str(tmp_path / "c"))
    lines = set()
    for args in [("status",), ("serve", "--wait", "5"), ("stop",), ("query", MATCHING), ("index", str(SAMPLE_NOTES))]:
        proc = recall(*args, user=user, env=env)
        probe.add(inputs=1, faults=1)
        lines.add(one_line_error(proc, "belongs to root", f"sudo chown -R nobody {home}"))
        probe.add(survived=1)
    assert len(lines) <= 2, lines  # status, serve and stop tell the same story (run/ or logs/ named)
    proc, wall = hook(env, user=user)
    probe.add(inputs=1, faults=1)
    assert proc.returncode == 0 and proc.stdout == b"" and wall < 1.5, (proc, wall)
    probe.add(survived=1)
    # `sudo recall serve` on the user's home today: refused, and root leaves nothing there.
    as_root = recall("serve", "--wait", "5", env=env)
    probe.add(inputs=1, faults=1)
    one_line_error(as_root, "belongs to", "not to you, root")
    assert not (home / "run" / "daemon.sock").exists()
    probe.add(survived=1)
    # The repair the line names, then the user's query finds the note: nothing lost.
    subprocess.run(["chown", "-R", str(user), str(home)], check=True)
    found = recall("query", "--json", MATCHING, user=user, env=env)
    lost = 0 if found.returncode == 0 and "feature" in found.stdout.lower() else 1
    probe.add(lost=lost)
    assert not lost, found.stdout + found.stderr


# --- class 7, beyond the issue: a file where a folder goes, a folder where a file goes ---------

MISPLACED = [
    # (what is put where, what it is done to the home, the commands, words of the one line)
    ("config.toml is a folder", lambda h: ((h / "config.toml").unlink(missing_ok=True), (h / "config.toml").mkdir()),
     [("status",), ("query", MATCHING)],
     ("config.toml", "move it aside")),
    ("recall.db is a folder", lambda h: ([Path(f"{h / 'recall.db'}{s}").unlink(missing_ok=True)
                                          for s in ("", "-wal", "-shm")], (h / "recall.db").mkdir()),
     [("status",), ("index", "-q", str(SAMPLE_NOTES))], ("recall.db", "recall index --rebuild")),
]


@pytest.mark.parametrize("case", MISPLACED, ids=[c[0] for c in MISPLACED])
def test_class7_a_folder_where_a_file_goes_is_one_line_with_its_repair(indexed, probe, case):
    """Every command meeting a folder where recall keeps a file (or the other way round)
    says which, and what to do, in one line: no traceback, however deep the error rose from."""
    _name, misplace, commands, words = case
    misplace(indexed)
    for args in commands:
        probe.add(inputs=1, faults=1)
        one_line_error(recall(*args), *words)
        probe.add(survived=1)


@pytest.mark.parametrize("name", ["calibration.toml", "calibration-cache.npz"])
def test_class7_a_folder_where_recall_writes_its_own_file_is_moved_aside(indexed, probe, name):
    """A folder where recall keeps one of its own files (not the user's config.toml) is moved aside
    by the command that writes the file, its contents kept: an outside tester's `--rebuild`
    refused and named `mv` as the repair (stop 44)."""
    target = indexed / name if name == "calibration.toml" else next((indexed / "index").glob("*/")) / name
    target.unlink(missing_ok=True)
    (target / "inside").mkdir(parents=True)
    probe.add(inputs=1, faults=1)
    done = recall("index", "-q", "--rebuild", str(SAMPLE_NOTES))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert target.is_file() and [p.name for p in target.parent.glob(f"{name}.stray-*/*")] == ["inside"]
    probe.add(survived=1)


def test_class7_recall_home_that_is_a_file_and_an_empty_folder_name(tmp_path, probe):
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    env = env_with(RECALL_HOME=str(home))
    for args in (("log",), ("stop",), ("status",), ("query", MATCHING)):
        probe.add(inputs=1, faults=1)
        one_line_error(recall(*args, env=env), str(home), "move it aside")
        probe.add(survived=1)
    # /dev/null named as RECALL_HOME: `mv /dev/null /dev/null.old` was the repair it gave
    for args in (("status",), ("query", MATCHING)):
        probe.add(inputs=1, faults=1)
        said = recall(*args, env=env_with(RECALL_HOME=os.devnull))
        one_line_error(said, os.devnull, "a device", "point RECALL_HOME at a folder")
        assert "mv " not in said.stderr, said.stderr
        probe.add(survived=1)
    # "" (an unset variable) is no folder: read as ".", it indexed everything below the cwd.
    empty = recall("index", "-q", "")
    probe.add(inputs=1, faults=1)
    assert empty.returncode == 2 and "empty folder name" in empty.stderr and "Traceback" not in empty.stderr
    probe.add(survived=1)


def test_class7_recall_config_does_not_show_another_users_settings_as_in_force(indexed, tmp_path, probe):
    """An outside tester: every command refused a config.toml of another user's in one line,
    but `recall config` listed its values as the settings in force."""
    need_second_user()
    home = tmp_path / "home"
    shutil.copytree(indexed, home)
    (home / "config.toml").write_text('[questions]\ngenerate = "claude"\n', encoding="utf-8")
    os.chown(home / "config.toml", OTHER_UID, OTHER_UID)
    proc = recall("config", env=env_with(RECALL_HOME=str(home), RECALL_MODEL="hash"))
    probe.add(inputs=1, faults=1)
    one_line_error(proc, "belongs to", "chown")
    assert "generate" not in proc.stdout
    probe.add(survived=1)
