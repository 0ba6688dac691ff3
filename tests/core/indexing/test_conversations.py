"""Past conversations as a source, secrets masked before anything is stored, and
cross-project queries — end to end through `recall index` / `recall query`."""

import json
import sqlite3
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.corpora import Transcript, build_corpus, conversation
from helpers.notes import write_note
from recall.privacy.paths import encode_project_path, projects_dir


def recall(cwd, *args, check=True):
    proc = run_cli(*args, cwd=cwd, env={"RECALL_MODEL": "hash"})
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def make_project(root: Path) -> tuple[Path, Path, Path]:
    """A git project, its memory folder and its transcripts folder (Claude Code layout)."""
    (root / ".git").mkdir(parents=True)
    folder = projects_dir() / encode_project_path(root)
    memory = folder / "memory"
    memory.mkdir(parents=True)
    return root, memory, folder


def stored_titles(recall_home: Path) -> dict[str, str]:
    con = sqlite3.connect(recall_home / "recall.db")
    rows = con.execute("SELECT n.note_id, n.name FROM notes n JOIN sources s ON s.id = n.source_id"
                       " WHERE s.kind = 'conversation'").fetchall()
    con.close()
    return dict(rows)


def test_interactive_titles_indexed_masked_and_kept_after_cleanup(tmp_path, recall_home):
    project, memory, folder = make_project(tmp_path / "shop")
    write_note(memory, "retry-policy", "Retry policy", "how webhooks retry", "exponential backoff")
    key = "sk-ant-api03-" + "Q7d9LmZx2" * 6
    conversation(session_id="s1").title("custom-title", f"Rotate the key {key} in staging").write(folder)
    conversation(session_id="s2", entrypoint="claude-vscode").title("ai-title", "Fix invoice rounding").write(folder)
    conversation(session_id="s3").write(folder)  # no title: its first prompt is not one (default)
    conversation(session_id="s4", entrypoint="sdk-cli").title("ai-title", "nightly batch").write(folder)
    conversation(session_id="s5").user("side task", isSidechain=True).raw("{not json").write(folder)
    Transcript(session_id="s6", entrypoint="sdk-py").user("automated").write(folder)

    out = recall(project, "index", "-q")
    assert "malformed transcript lines skipped" in out.stderr
    titles = stored_titles(recall_home)
    assert set(titles) == {"s1", "s2"}
    assert titles["s1"] == "Rotate the key [REDACTED] in staging"
    assert titles["s2"] == "Fix invoice rounding"

    hits = json.loads(recall(project, "query", "--json", "Fix invoice rounding").stdout)["ranked"]
    conv = next(h for h in hits if h["id"] == "s2")
    assert conv["kind"] == "conversation"

    # Claude Code deletes old transcripts: the titles outlive them.
    (folder / "s2.jsonl").unlink()
    recall(project, "index", "-q")
    assert "s2" in stored_titles(recall_home)


def test_no_secret_of_the_corpus_reaches_the_sqlite_file(tmp_path, recall_home):
    corpus = build_corpus()
    assert len(corpus) >= 30
    project, memory, folder = make_project(tmp_path / "app")
    for i, case in enumerate(corpus):
        write_note(memory, f"note-{i:02d}", f"Config note {i}", case.line[:200], f"Body:\n{case.line}\nend\n")
    for i, case in enumerate(corpus[:10]):
        conversation(session_id=f"c{i}").title("custom-title", case.line[:190]).write(folder)
    recall(project, "index", "-q")
    recall(project, "query", "Config note 3 body", check=False)
    blob = b"".join(p.read_bytes() for p in recall_home.rglob("*") if p.is_file())
    leaked = [c.kind for c in corpus if c.random_part.encode() in blob]
    assert leaked == []
    # and the notes themselves are untouched
    assert corpus[0].line in (memory / "note-00.md").read_text()


def test_repo_and_all_search_other_projects(tmp_path, recall_home):
    a, mem_a, _ = make_project(tmp_path / "alpha-service")
    b, mem_b, conv_b = make_project(tmp_path / "beta-service")
    write_note(mem_a, "alpha-note", "Alpha deploys", "alpha", "alpha uses blue green deploys")
    write_note(mem_b, "beta-note", "Beta deploys", "beta", "beta uses canary deploys")
    conversation(session_id="beta-chat").title("custom-title", "Beta canary deploys").write(conv_b)
    recall(a, "index", "-q")
    recall(b, "index", "-q")

    def ids(*args):
        return {h["id"] for h in json.loads(recall(a, "query", "--json", *args, "deploys canary blue green")
                                            .stdout)["ranked"]}

    assert ids() == {"alpha-note"}  # automatic scope: the current project only
    assert ids("--repo", "beta-service") == {"beta-note", "beta-chat"}
    assert ids("--all") == {"alpha-note", "beta-note", "beta-chat"}


# --- issue 16: no past prompt on disk unless opted in; an upgrade removes the old ones ----------------

PROMPT_CANARY = "Canaryprompt7Qx9Wv please fix the flaky login test"


def _project_with_a_note(tmp_path: Path) -> tuple[Path, Path]:
    """(project, its transcripts folder): a project whose memory holds one note."""
    project, memory, folder = make_project(tmp_path / "shop")
    write_note(memory, "n", "A note", "about webhooks", "retries")
    return project, folder


def _project_with_prompt_sessions(tmp_path: Path) -> tuple[Path, Path]:
    """The same, with sessions whose only title would be the user's prompt (p1, p2) and one
    with an AI title (t1)."""
    project, folder = _project_with_a_note(tmp_path)
    Transcript(session_id="p1").user(PROMPT_CANARY).assistant("ok").write(folder)
    conversation(session_id="p2").title("last-prompt", PROMPT_CANARY).write(folder)
    conversation(session_id="t1").title("ai-title", "Fix invoice rounding").write(folder)
    return project, folder


def _opt_in_to_prompt_titles(recall_home: Path) -> None:
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text("[sources]\nprompt_titles = true\n")


def _bytes_with(home: Path, needle: str) -> list[str]:
    from helpers.leaks import find_leaks

    return [f for _, f in find_leaks(home, [needle])]


def test_past_prompts_are_not_indexed_by_default(tmp_path, recall_home):
    project, folder = _project_with_prompt_sessions(tmp_path)
    recall(project, "index", "-q")
    recall(project, "query", PROMPT_CANARY, check=False)
    assert stored_titles(recall_home) == {"t1": "Fix invoice rounding"}
    assert _bytes_with(recall_home, "Canaryprompt7Qx9Wv") == []


def test_prompt_titles_opt_in_is_said_in_config_and_masked(tmp_path, recall_home):
    project, folder = _project_with_a_note(tmp_path)
    key = "PGPASSWORD=" + "Zq8vN2mKx7LpR4tW9yBc"
    Transcript(session_id="p1").user(f"connect with {key} and check").assistant("ok").write(folder)
    _opt_in_to_prompt_titles(recall_home)
    shown = recall(project, "config").stdout
    assert "sources.prompt_titles = true" in shown
    recall(project, "index", "-q")
    assert stored_titles(recall_home) == {"p1": "connect with PGPASSWORD=[REDACTED] and check"}
    assert _bytes_with(recall_home, "Zq8vN2mKx7LpR4tW9yBc") == []


def test_titles_from_prompts_stored_by_an_older_recall_are_removed_at_the_next_index(tmp_path, recall_home):
    project, folder = _project_with_prompt_sessions(tmp_path)
    # What an older recall left: prompt titles indexed (opt-in here only to produce them),
    # with no record of where each title came from, and a generation built from them.
    _opt_in_to_prompt_titles(recall_home)
    recall(project, "index", "-q")
    recall(project, "index", "-q")  # a second generation that also holds them
    con = sqlite3.connect(recall_home / "recall.db")
    con.execute("UPDATE notes SET extra = json_remove(extra, '$.source')")
    con.commit()
    con.close()
    assert _bytes_with(recall_home, "Canaryprompt7Qx9Wv")
    (recall_home / "config.toml").unlink()
    (folder / "p1.jsonl").unlink()  # a transcript Claude Code already deleted: its title was kept
    recall(project, "index", "-q")
    assert stored_titles(recall_home) == {"t1": "Fix invoice rounding"}
    assert _bytes_with(recall_home, "Canaryprompt7Qx9Wv") == []


def test_an_index_run_anywhere_removes_prompt_titles_of_every_project(tmp_path, recall_home):
    project, folder = _project_with_prompt_sessions(tmp_path)
    _opt_in_to_prompt_titles(recall_home)
    recall(project, "index", "-q")
    assert "p1" in stored_titles(recall_home)
    (recall_home / "config.toml").unlink()
    other = tmp_path / "elsewhere"
    write_note(other, "x", "Other", "another folder", "text")
    recall(tmp_path, "index", "-q", str(other))  # another folder, from outside the project
    assert stored_titles(recall_home) == {"t1": "Fix invoice rounding"}
    assert _bytes_with(recall_home, "Canaryprompt7Qx9Wv") == []


def test_whatever_claude_codes_own_files_hold_the_projects_notes_are_indexed(tmp_path, recall_home):
    """Files Claude Code writes, read as they come (stop 47, tester T's 01, 05, 06): a
    transcript with a timestamp out of range (valid ISO 8601, before year 1 in UTC), one whose
    name is not UTF-8, and a project settings file whose ``autoMemoryDirectory`` is not a
    path stopped `recall index` with a traceback, every run, before the memory notes were
    embedded. Now each is skipped (the settings' value ignored, in one line) and the notes indexed."""
    project, memory, folder = make_project(tmp_path / "shop")
    write_note(memory, "retry-policy", "Retry policy", "how webhooks retry", "exponential backoff")
    (folder / "bad-time.jsonl").write_text(json.dumps(
        {"type": "summary", "summary": "Old times", "timestamp": "0001-01-01T00:00:00+05:00"}) + "\n")
    (folder / "good.jsonl").write_text(json.dumps(
        {"type": "summary", "summary": "Webhook retries", "timestamp": "2026-11-30T10:00:00Z"}) + "\n")
    with open(bytes(folder) + b"/sess\xff.jsonl", "w") as fh:  # a name that is not UTF-8
        fh.write(json.dumps({"type": "summary", "summary": "Latin"}) + "\n")
    for value in (5, ["notes"], "~nosuchuser-recall/notes"):
        (project / ".claude").mkdir(exist_ok=True)
        (project / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": value}))
        proc = recall(project, "index", check=False)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert "autoMemoryDirectory" in proc.stderr, proc.stderr
        assert "vectors=0" not in recall(project, "status").stdout
        hits = recall(project, "search", "exponential backoff").stdout
        assert "Retry policy" in hits, hits
    assert "Webhook retries" in stored_titles(recall_home).values()


def test_a_cloned_repositorys_settings_cannot_take_other_projects_memory(tmp_path, recall_home):
    """A repository's committed `.claude/settings.json` naming another folder as its
    `autoMemoryDirectory` made `recall index` there (the plugin's, at each session start) take
    every project's memory as its own: handed over in that repository unasked, and gone from its
    owner's (stop 49, an outside tester's AA01). Claude Code reads it only in a folder the user
    trusted; so does recall, and the user's own settings still count."""
    import os

    victim, memory, _ = make_project(tmp_path / "victim")
    write_note(memory, "quokka", "Quokka ledger", "check the quokka ledger before release", "quokkabar ledger")
    recall(victim, "index", "-q")
    evil, _, _ = make_project(tmp_path / "evil")
    (evil / ".claude").mkdir()
    (evil / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(projects_dir())}))
    out = recall(evil, "index")
    assert "passed over" in out.stderr and "trusted" in out.stderr, out.stderr
    assert "Quokka" not in recall(evil, "search", "quokkabar ledger").stdout
    assert "Quokka" in recall(victim, "search", "quokkabar ledger").stdout

    config = Path(os.environ["CLAUDE_CONFIG_DIR"]) / ".claude.json"  # the user trusts it: Claude Code reads it
    config.write_text(json.dumps({"projects": {str(evil.resolve()): {"hasTrustDialogAccepted": True}}}))
    (evil / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(memory)}))
    out = recall(evil, "index")
    assert "passed over" not in out.stderr, out.stderr
    assert "Quokka" in recall(evil, "search", "quokkabar ledger").stdout


def test_a_memory_folder_the_users_settings_give_every_project_is_every_projects(tmp_path, recall_home):
    """An `autoMemoryDirectory` in the user's own `~/.claude/settings.json` gives every project
    one memory folder (Claude Code writes every project's memory there). recall had it belong to
    the project indexed last: a session start in one project took the notes from every other
    (an outside tester's AA04). It is every project's now, whichever indexed it last; a project's
    own folder stays its own."""
    import os

    shared = tmp_path / "all-memory"
    write_note(shared, "mink", "Mink ledger", "check the mink ledger before release", "sharedmink ledger")
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(shared)}))
    one, _, _ = make_project(tmp_path / "one")
    two, _, _ = make_project(tmp_path / "two")
    recall(one, "index", "-q")
    recall(two, "index", "-q")
    for project in (one, two):
        assert "Mink ledger" in recall(project, "search", "sharedmink ledger").stdout, project
        hook = recall(project, "query", "--json", "how do we check the mink ledger before release").stdout
        assert "mink" in {r["id"] for r in json.loads(hook)["ranked"]}, project
    recall(one, "index", "-q")
    assert "Mink ledger" in recall(two, "search", "sharedmink ledger").stdout
    assert "Mink ledger" not in recall(two, "search", "--repo", "nosuchproject", "sharedmink ledger").stdout


def test_a_rules_folder_above_the_agents_projects_leaves_each_projects_memory_its_own(tmp_path, recall_home):
    """`[sources] rules = ["~/.claude"]` (where Claude Code keeps the global CLAUDE.md and
    rules/) read every project's memory folder below it as rules: each project's notes handed
    over in every other project and pushed to the team (stop 49, an outside tester's AA02, AA03).
    The projects folder is left out of every walk from above it, in `recall index` and the
    watcher alike; the memory stays its project's."""
    import os

    from recall.watch import is_note_path

    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    alpha, memory, _ = make_project(tmp_path / "alpha")
    beta, _, _ = make_project(tmp_path / "beta")
    write_note(memory, "zebra", "Zebra ledger", "check the zebra ledger before release", "zebrafoo ledger")
    write_note(claude, "CLAUDE", "Global style", "prefer small commits", "small commits")
    recall_home.mkdir(parents=True, exist_ok=True)
    (recall_home / "config.toml").write_text(f"[sources]\nrules = [{json.dumps(str(claude))}]\n")
    for where in (alpha, beta):
        recall(where, "index", "-q")
    assert "Zebra" not in recall(beta, "search", "zebrafoo ledger").stdout
    found = json.loads(recall(alpha, "search", "--json", "zebrafoo ledger").stdout)["results"]
    assert [(r["id"], r["kind"]) for r in found if r["id"] == "zebra"] == [("zebra", "memory")], found
    assert "Global style" in recall(beta, "search", "small commits").stdout
    assert not is_note_path(claude, memory / "zebra.md") and is_note_path(memory, memory / "zebra.md")


def test_a_git_worktree_gets_its_repositorys_memory_and_a_false_claim_does_not(tmp_path, recall_home):
    """Claude Code keeps one memory folder per repository, under its main worktree's key; recall
    took a linked worktree (`git worktree add`, `claude --worktree`) for a project of its own,
    with none of the repository's memory (stop 49, an outside tester's AA05). A checkout whose
    `.git` file claims a worktree the repository does not list stays a project of its own."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    main = tmp_path / "alpha"
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "x"],
                 ["worktree", "add", "-q", str(tmp_path / "alpha-wt")],
                 ["worktree", "add", "-q", str(main / ".claude" / "worktrees" / "feat")]):
        subprocess.run([*git, *args], cwd=main, check=True, capture_output=True)
    memory = projects_dir() / encode_project_path(main) / "memory"
    write_note(memory, "zebra", "Zebra ledger", "check the zebra ledger before release", "zebrafoo ledger")
    fake = tmp_path / "evil"
    fake.mkdir()
    (fake / ".git").write_text((tmp_path / "alpha-wt" / ".git").read_text())  # claims alpha-wt's entry
    for where in (tmp_path / "alpha-wt", main / ".claude" / "worktrees" / "feat" / "src"):
        where.mkdir(exist_ok=True)
        recall(where, "index", "-q")
        assert "Zebra" in recall(where, "search", "zebrafoo ledger").stdout, where
    recall(fake, "index", "-q")
    assert "Zebra" not in recall(fake, "search", "zebrafoo ledger").stdout
