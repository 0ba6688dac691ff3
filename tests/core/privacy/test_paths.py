"""Which project a folder is in (``recall.privacy.paths``), whatever the agent sends as its cwd."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recall.privacy.paths import PATH_MAX, project_key, project_root, shown_project_key


def test_the_git_root_above_the_folder_is_the_project(tmp_path: Path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    deep = tmp_path / "repo" / "src" / "a" / "b"
    deep.mkdir(parents=True)
    assert project_root(deep) == (tmp_path / "repo").resolve()
    assert project_root(tmp_path / "elsewhere") == (tmp_path / "elsewhere").resolve()


def test_a_cwd_longer_than_any_path_is_no_project():
    """Every parent of a 100,000-character path is a copy of most of it: walking them all took
    seconds and gigabytes per message. A cwd no system accepts names no folder."""
    for cwd in ("/a" * (PATH_MAX // 2 + 1), "/" + "x" * 200_000, "/a" * 100_000):
        assert project_root(cwd) == Path("/")
    assert project_root("/a" * 100) == Path("/a" * 100)


def test_a_secret_in_a_folder_name_is_masked_in_the_key_that_is_shown(tmp_path: Path):
    token = "ghp_" + "Tk4Lm8Np2Qr6St0Uv3Wx7Yz1Ab5Cd9Ef2Gh6"
    folder = tmp_path / f"proj-{token}" / "notes"
    folder.mkdir(parents=True)
    assert "Tk4Lm8Np2Qr6" in project_key(folder)  # the real key: what scopes the notes
    shown = shown_project_key(project_root(folder))
    assert "Tk4Lm8Np2Qr6" not in shown and "REDACTED" in shown


def test_a_relative_recall_home_is_read_once_from_where_the_command_runs(tmp_path, monkeypatch):
    """A relative RECALL_HOME names one folder for the command and everything it starts (the
    daemon runs in run/: read again there, it named a home inside the home)."""
    import os

    from recall.privacy.paths import recall_home

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RECALL_HOME", "relhome")
    assert recall_home() == tmp_path / "relhome"
    monkeypatch.chdir(tmp_path.parent)
    assert recall_home() == tmp_path / "relhome" and os.environ["RECALL_HOME"] == str(tmp_path / "relhome")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="XDG_DATA_HOME and HOME name the folder on Linux")
def test_a_relative_xdg_data_home_is_ignored_and_a_relative_home_read_once(tmp_path, monkeypatch):
    """An outside tester's XDG_DATA_HOME=data (and HOME=hh): the hook's home was one folder and
    the daemon it started (in run/) opened another inside it, which no hook ever reached."""
    import os

    from recall.privacy.paths import recall_home

    monkeypatch.delenv("RECALL_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    monkeypatch.setenv("XDG_DATA_HOME", "data")
    assert recall_home() == tmp_path / "h" / ".local" / "share" / "recall"  # the specification: ignored
    monkeypatch.delenv("RECALL_HOME", raising=False)
    monkeypatch.setenv("HOME", "hh")
    assert recall_home() == tmp_path / "hh" / ".local" / "share" / "recall"
    monkeypatch.chdir(tmp_path.parent)
    assert recall_home() == tmp_path / "hh" / ".local" / "share" / "recall"
    assert os.environ["RECALL_HOME"] == str(tmp_path / "hh" / ".local" / "share" / "recall")


# Claude Code 2.1.332's own key function run by node on these paths (its bundle's
# `w(e)=e.replace(/[^a-zA-Z0-9]/g,"-")`, cut at 200 with `-` + Math.abs(javaHash(e)).toString(36)).
CLAUDE_KEYS = [
    ("/tmp/a", "-tmp-a"),
    ("/home/u/app-\U0001f680", "-home-u-app---"),
    ("/home/u/" + "y" * 215, "-home-u-" + "y" * 192 + "-ku4mke"),
    ("/home/u/café/" + "z" * 200 + "\U0001f680", "-home-u-caf--" + "z" * 187 + "-8rb4ui"),
]


@pytest.mark.parametrize(("path", "key"), CLAUDE_KEYS)
def test_a_projects_key_is_claude_codes_for_any_path(path, key):
    """recall counted characters, not UTF-16 units, and never cut a long key: a project with an
    emoji or a long path had its memory looked for under another name (stop 49, AA08)."""
    from recall.privacy.paths import claude_key, encode_project_path

    assert claude_key(path) == key
    assert encode_project_path(path, resolve=False) == key
    assert claude_key("/tmp/bad\udcff") == "-tmp-bad-"  # a name that is not UTF-8 costs nothing


def test_a_worktrees_git_records_that_are_pipes_hold_nothing(tmp_path: Path):
    """A folder whose `.git` names a gitdir holding named pipes (what any archive can unpack):
    reading its `commondir` blocked a daemon thread in open() for ever, and a stopped daemon never
    exited (an outside tester's AG04). The records are read without blocking; the folder is its
    own project."""
    import contextlib
    import os
    import threading

    (tmp_path / "repo").mkdir()
    (tmp_path / "gd").mkdir()
    (tmp_path / "repo" / ".git").write_text("gitdir: ../gd\n")
    for name in ("commondir", "gitdir"):
        os.mkfifo(tmp_path / "gd" / name)
    found: list[Path] = []
    reader = threading.Thread(target=lambda: found.append(project_root(tmp_path / "repo")), daemon=True)
    reader.start()
    reader.join(10)
    stuck = reader.is_alive()
    for name in ("commondir", "gitdir") if stuck else ():  # free the thread before failing
        with contextlib.suppress(OSError):
            os.close(os.open(tmp_path / "gd" / name, os.O_WRONLY | os.O_NONBLOCK))
    assert not stuck and found == [tmp_path / "repo"]
