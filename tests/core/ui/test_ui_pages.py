"""What ``recall ui``'s pages show, from the files recall keeps: the store, the real
daemon's injection log, the read tracker's log, negatives, reports and status.
The app runs in-process (Starlette's test client) over a real store and a real daemon."""

from __future__ import annotations

import json
import os
import socket

import pytest
from click.testing import CliRunner

from helpers import ui
from helpers.daemon import index_dirs, write_config
from helpers.notes import write_note
from helpers.ui import write_report
from recall.cli import main
from recall.ipc import client
from recall.ui.security import csrf_value

PORT = 8123


def page_client(**launch):
    return ui.page_client(PORT, **launch)


@pytest.fixture
def notes(tmp_path, recall_home, hash_model):
    folder = tmp_path / "team-notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated behind flags",
               "Ship dark behind Unleash flags; remove them within 30 days.")
    path = write_note(folder, "money", "Money is Decimal, never float", "Monetary amounts in code",
                      "Use Decimal for money, never float.")
    text = path.read_text(encoding="utf-8").replace("type: feedback\n",
                                                    "type: feedback\nquestions: [Can I store prices as floats?]\n")
    path.write_text(text, encoding="utf-8")
    (folder / "negatives.jsonl").write_text(json.dumps({"text": "What is the capital of France?"}) + "\n",
                                            encoding="utf-8")
    write_config(recall_home)
    index_dirs(folder)
    return folder


def test_notes_filter_and_a_notes_page(notes):
    with page_client() as c:
        r = c.get("/notes")
        assert "Feature flags via Unleash" in r.text and "Money is Decimal" in r.text
        r = c.get("/notes", params={"q": "decimal"})
        assert "Money is Decimal" in r.text and "Feature flags via Unleash" not in r.text
        assert "1 match" in r.text
        assert "No note matches" in c.get("/notes", params={"kind": "memory"}).text
        r = c.get("/notes", params={"q": "decimal"})
        pk = r.text.split('href="/notes/')[1].split('"')[0]
        note = c.get(f"/notes/{pk}").text
        assert "Use Decimal for money" in note  # a chunk
        assert "Can I store prices as floats?" in note  # its questions
        assert "What is the capital of France?" in note  # the folder's negatives
        assert "0 times" in note
        assert c.get("/notes/99999").status_code == 404


def test_note_text_is_escaped(tmp_path, recall_home, hash_model):
    folder = tmp_path / "odd"
    write_note(folder, "odd", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "<b>body</b>")
    write_config(recall_home)
    index_dirs(folder)
    with page_client() as c:
        r = c.get("/notes").text
        assert "<script>alert(1)" not in r and "&lt;script&gt;alert(1)&lt;/script&gt;" in r
        assert "<img src=x" not in r
        pk = r.split('href="/notes/')[1].split('"')[0]
        assert "<b>body</b>" not in c.get(f"/notes/{pk}").text


def first_note_page(recall_home, folder) -> str:
    """``folder`` indexed (the hash model), then the page of its first note as the browser gets it."""
    write_config(recall_home)
    index_dirs(folder)
    with page_client() as c:
        pk = c.get("/notes").text.split('href="/notes/')[1].split('"')[0]
        return c.get(f"/notes/{pk}").text


def test_the_page_masks_secrets_in_negatives_and_folder_names(tmp_path, recall_home, hash_model):
    """The page reads the folder's negatives.jsonl from disk (as calibration does), and shows the
    folder's path: a secret in either is masked as it is in the store."""
    token = "xoxb-2048-4096-" + "Qm7Rz3Kp9Lw2Nx5Tb8Vc1Hd6"
    ghp = "ghp_" + "Tk4Lm8Np2Qr6St0Uv3Wx7Yz1Ab5Cd9Ef2Gh6"
    folder = tmp_path / f"proj-{ghp}" / "notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated", "Ship dark behind flags.")
    (folder / "negatives.jsonl").write_text(json.dumps({"text": f"the staging token is {token}"}) + "\n"
                                            + json.dumps({"text": f"export GITHUB_TOKEN={ghp}"}) + "\n",
                                            encoding="utf-8")
    (folder / "questions.jsonl").write_text(json.dumps({"note": "flags", "questions": ["how do flags work?"]}) + "\n",
                                            encoding="utf-8")
    page = first_note_page(recall_home, folder)
    assert "the staging token is" in page and "export GITHUB_TOKEN=" in page  # the negatives are shown
    assert "Qm7Rz3Kp9Lw2" not in page and "Tk4Lm8Np2Qr6" not in page and "[REDACTED]" in page


def test_the_page_shows_the_negatives_calibration_uses_and_no_line_it_skips(tmp_path, recall_home, hash_model):
    """The note page reads negatives.jsonl through the core's reader
    (``recall.ranking.negatives.read_negatives_file``): a line calibration skips (a bare string, a
    list under "negatives", an empty text) or a list in questions.jsonl is not shown as a negative."""
    from recall.ranking.negatives import read_negatives_file

    folder = tmp_path / "notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated", "Ship dark behind flags.")
    lines = [{"text": "What is the capital of France?"}, "a bare string line", {"negatives": ["a listed negative"]},
             {"text": "  "}, {"text": "What   is the capital of France?"}]
    (folder / "negatives.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (folder / "questions.jsonl").write_text(json.dumps({"note": "flags", "questions": ["how do flags work?"],
                                                        "negatives": ["a negative beside the questions"]}) + "\n",
                                            encoding="utf-8")
    found, problems = read_negatives_file(folder / "negatives.jsonl")
    assert [n.text for n in found] == ["What is the capital of France?"] * 2 and len(problems) == 3
    page = first_note_page(recall_home, folder)
    assert page.count("What is the capital of France?") == 1
    for skipped in ("a bare string line", "a listed negative", "a negative beside the questions"):
        assert skipped not in page


def test_a_command_the_page_offers_takes_a_folder_name_others_chose_as_one_word(tmp_path, recall_home, hash_model):
    """An outside tester's cloned folder ``x;touch PWNED;#``: the note page's `recall-eval expand
    --notes DIR`, pasted into a shell, ran their command."""
    import html
    import shlex

    folder = tmp_path / "x;touch PWNED;#" / "notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated", "Ship dark behind flags.")
    page = html.unescape(first_note_page(recall_home, folder))
    command = page.split("<code>recall-eval expand --notes ", 1)[1].split("</code>", 1)[0]
    assert shlex.split(command) == [str(folder)]


def test_the_page_shows_control_and_direction_characters_others_wrote(tmp_path, recall_home, hash_model):
    """An outside tester's agent-written questions kept a raw ESC, a right-to-left override and a
    NUL on the note's page (HTML-escaped, but drawn reversed or hidden)."""
    folder = tmp_path / "notes"
    write_note(folder, "flags", "Feature flags via Unleash", "How features are gated", "Ship dark behind flags.")
    (folder / "questions.jsonl").write_text(json.dumps(
        {"note": "flags", "questions": ["how do flags \x1b[31mwork\u202e?txt.exe", "gate \u200bit\x00"]}) + "\n",
        encoding="utf-8")
    page = first_note_page(recall_home, folder)
    assert "how do flags" in page and "\\u202e" in page and "\\u001b" in page
    assert not any(ch in page for ch in "\x1b\u202e\u200b\x00")

@pytest.mark.process
def test_injections_come_from_the_daemons_log_and_opened_from_the_read_tracker(notes, daemons, recall_home,
                                                                              tmp_path):
    daemons.start()
    asked = "Feature flags via Unleash: how do we add a feature flag?"
    reply = client.request({"cmd": "query", "prompt": asked, "cwd": str(tmp_path)}, timeout=10)
    assert reply["decision"]["decision"] != "nothing"
    client.request({"cmd": "query", "prompt": "hello how are you doing today", "cwd": str(tmp_path)}, timeout=10)
    with page_client() as c:
        r = c.get("/injections")
        assert "2 messages searched: <b>1</b> got notes, <b>1</b> got nothing" in r.text
        assert "Feature flags via Unleash" in r.text and asked not in r.text
        assert "read tracker" in r.text  # no reads log: says where the signal would come from
        from recall.agents import track

        when = next(t for t, n in track.injections(recall_home) if n == "flags")  # as the tracker writes it
        (recall_home / "logs" / "reads.jsonl").write_text(
            json.dumps({"note": "flags", "time": when + 5, "session": "s1", "injected_at": round(when, 3)}) + "\n"
            + json.dumps({"note": "flags", "time": when + 9, "session": "s1", "injected_at": round(when, 3)}) + "\n",
            encoding="utf-8")  # read twice after one injection: opened once
        r = c.get("/injections")
        assert "<th class=\"num\">opened</th>" in r.text
        pk = c.get("/notes", params={"q": "unleash"}).text.split('href="/notes/')[1].split('"')[0]
        note = c.get(f"/notes/{pk}").text
        assert "1 time (from the injection log); opened by the agent 1 time" in note


def test_quality_finds_the_report_of_the_indexed_folder(notes, tmp_path):
    with page_client(reports=tmp_path / "none") as c:
        page = c.get("/quality").text
        assert "No evaluation report found" in page
        # no report: tuning on your own notes, not on the shipped sample into your config (a first-hour
        # tester's, stop 58), and the daemon takes the thresholds at its next question (no `recall stop`)
        assert "recall-eval tune --notes DIR -q QUESTIONS.jsonl --config" in page and "--collection" not in page
        assert "from its next question on" in page and "recall stop" not in page
    write_report(tmp_path / "reports", notes_dir=notes)
    with page_client(reports=tmp_path / "reports") as c:
        r = c.get("/quality").text
        assert "Latest evaluation: sample" in r and "<svg class=\"curve\"" in r
        assert "is not the one indexed here" not in r
        assert "recall-eval tune --collection sample --config" in r
        assert 'href="/quality/report"' not in r and c.get("/quality/report").status_code == 404
    run = write_report(tmp_path / "reports", notes_dir=notes)
    (run / "report.html").write_text("<html><style>h1{color:red}</style><h1>the harness's report</h1></html>",
                                     encoding="utf-8")
    with page_client(reports=tmp_path / "reports") as c:
        assert 'href="/quality/report"' in c.get("/quality").text
        r = c.get("/quality/report")
        assert r.status_code == 200 and "the harness's report" in r.text
        policies = r.headers.get_list("content-security-policy")
        assert len(policies) == 1 and "sandbox" in policies[0] and "default-src 'none'" in policies[0]
        assert "script" not in policies[0]


@pytest.mark.process
def test_status_in_words(notes, daemons):
    with page_client() as c:
        r = c.get("/status").text
        assert "The search daemon is <b>down</b>" in r and "The index holds <b>2</b> notes" in r
        assert "The watcher is <b>off</b>" in r
    proc = daemons.start()
    with page_client() as c:
        r = c.get("/status").text
        assert "The search daemon is <b>up</b>" in r and "running on" in r
    # stopped (a debugger, a wedged process): not "up", and the repair said, on the page and on "Try"
    import signal

    os.kill(proc.pid, signal.SIGSTOP)
    try:
        with page_client() as c:
            r = c.get("/status").text
            assert "is <b>not answering</b>" in r and "recall stop" in r and "<b>up</b>" not in r
    finally:
        os.kill(proc.pid, signal.SIGCONT)


@pytest.mark.process
def test_try_a_message_asks_the_daemon_and_explains(notes, daemons):
    daemons.start()
    with page_client() as c:
        r = c.post("/try", data={"message": "Feature flags via Unleash: how do we add a feature flag?",
                                 "csrf": csrf_value("t0ken")}, headers={"origin": f"http://127.0.0.1:{PORT}"})
        assert r.status_code == 200
        assert "injected" in r.text and "The exact block" in r.text and "gap_floor" in r.text
        assert "config.toml" in r.text  # where the thresholds came from
    e = client.request({"cmd": "explain", "prompt": "Feature flags via Unleash: how do we add a feature flag?",
                        "cwd": str(notes)}, timeout=10)
    text = e["decision"]["text"]
    assert f'The exact block <span class="muted">{len(text.encode())} bytes' in r.text
    assert f"one JSON line of {e['decision']['bytes']} bytes" in r.text


@pytest.mark.process
def test_try_a_message_writes_the_message_back_as_typed(notes, daemons):
    """An outside tester's F3: the box came back as ``ｎｐｍ\\u3000ｉｎｓｔａｌｌ``, and Ask again
    searched for that backslash text. An ideographic space is written back as it is."""
    import html

    daemons.start()
    message = "ｎｐｍ\u3000ｉｎｓｔａｌｌ\u3000して feature flags"
    with page_client() as c:
        r = c.post("/try", data={"message": message, "csrf": csrf_value("t0ken")},
                   headers={"origin": f"http://127.0.0.1:{PORT}"})
    assert r.status_code == 200
    box = html.unescape(r.text.split("<textarea", 1)[1].split(">", 1)[1].split("</textarea>", 1)[0])
    assert box == message, box


def test_a_taken_port_is_one_clear_line(recall_home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["ui", "--no-open", "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot serve on 127.0.0.1:{port}" in result.output and "--port" in result.output
    assert "Traceback" not in result.output
    for port in ("99999", "-1"):  # stop 41: an OverflowError's traceback from bind()
        result = CliRunner().invoke(main, ["ui", "--no-open", "--port", port])
        assert result.exit_code == 2 and "0<=x<=65535" in result.output and result.exception is not None


def test_status_asks_once_whether_an_agent_writes_the_questions(notes, tmp_path, recall_home, monkeypatch):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "claude").write_text("#!/bin/sh\nexit 3\n")  # found on PATH, never run by the page
    (fake_bin / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    with page_client() as c:
        r = c.get("/status").text
        assert "Questions: not allowed yet" in r and "2 new or changed note(s): claude would be asked" in r
        assert "tokens" in r and 'action="/questions"' not in r  # read-only: no button
    with page_client(allow_writes=True) as c:
        assert 'value="claude">Allow claude to write them' in c.get("/status").text
        origin = {"origin": f"http://127.0.0.1:{PORT}"}
        assert c.post("/questions", data={"generate": "claude", "csrf": "nope"}, headers=origin).status_code == 403
        r = c.post("/questions", data={"generate": "claude", "csrf": csrf_value("t0ken")}, headers=origin)
        assert r.status_code == 200 and "Questions: <b>claude</b> writes" in r.text
    assert 'generate = "claude"' in (recall_home / "config.toml").read_text()


DAMAGED_LOG = [  # query lines of every shape a damaged or hand-edited daemon log can hold
    '{"chosen": 5}', '{"chosen": {"id": "flags"}}', '{"chosen": [5, "x", {"id": 7}, null]}', '{"chosen": "flags"',
    '{"decision": ["short"], "chosen": [{"id": "flags", "score": "high"}], "project": 5, "bytes": {}}',
    '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"chosen": [{"id": "flags"}], "decision": "short"}',
]


def test_a_damaged_daemon_log_costs_its_lines_not_the_page_or_the_stats(notes, recall_home):
    """stop 41: one query line whose "chosen" was a number made `recall log --stats` end in a
    traceback and /injections and every note's page answer 500."""
    logs = recall_home / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "daemon.log").write_text("".join(f"2026-12-04 20:15:4{i % 10},623 INFO query {line}\n"
                                             for i, line in enumerate(DAMAGED_LOG)), encoding="utf-8")
    with page_client() as c:
        r = c.get("/injections")
        assert r.status_code == 200 and "got notes" in r.text, r.text[:300]
        pk = c.get("/notes", params={"q": "unleash"}).text.split('href="/notes/')[1].split('"')[0]
        assert c.get(f"/notes/{pk}").status_code == 200
    out = CliRunner().invoke(main, ["log", "--stats"])
    assert out.exit_code == 0 and out.exception is None, out.output
    row = next(r for r in out.output.splitlines() if r.startswith("flags"))
    assert row.split()[1] == "2", out.output  # the two lines that name it in a list of records


def test_a_pipe_in_a_notes_folder_leaves_the_status_page_whole(notes):
    """An outside tester's named pipe, skipped by `recall index`, made /status a bare 500 on
    every load (the questions' cost read it)."""
    os.mkfifo(notes / "pipe.md")
    with page_client() as c:
        r = c.get("/status")
    assert r.status_code == 200 and "Questions" in r.text


def test_the_status_page_says_what_recall_status_says_of_a_damaged_index(notes, recall_home):
    """The page starts from ``Recall.status()``: an index that cannot be loaded is said there,
    with its repair, as `recall status` says it (the page once rebuilt the status by hand and
    left it out)."""
    import shutil

    from recall.api import Recall
    from recall.store.vectors import index_dir

    with page_client() as c:
        assert 'class="off problem"' not in c.get("/status").text
    root = index_dir("hash-256", recall_home)
    shutil.rmtree(root / (root / "current").read_text().strip())
    problems = Recall(home=recall_home).status().problems
    assert problems and any("recall index --rebuild" in p for p in problems)
    with page_client() as c:
        r = c.get("/status")
    assert r.status_code == 200
    from markupsafe import escape

    for problem in problems:
        assert f'<li class="off problem">{escape(problem)}</li>' in r.text
