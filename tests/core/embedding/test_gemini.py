"""The optional Gemini Embedding backend (recall/embedding/gemini.py), against a fake API on loopback
that checks every request's shape (tests/helpers/fake_gemini_embed.py): off by default,
the key from the environment, what is sent said before the first request, the user's
messages never sent unless they opt in, images and recording pieces sent with their text."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from helpers.cli import run_cli, run_cli_process
from helpers.documents import latin_font, make_screenshot
from helpers.fake_gemini_embed import KEY, fake_gemini, gemini_config
from recall.embedding.gemini import GeminiError

NOTE = """---
name: Postgres failover runbook
description: how to promote the replica when the primary dies
---
Run pg_ctl promote on the replica, then point pgbouncer at it.
"""


@pytest.fixture
def gemini_home(recall_home, monkeypatch):
    """A home whose config points model = gemini at a fake API; yields (home, api)."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with fake_gemini() as api:
        set_config(recall_home, gemini_config(api))
        yield recall_home, api
    assert api.errors == [], api.errors


def set_config(home, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def notes_folder(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "failover.md").write_text(NOTE)
    return folder


def test_off_by_default_nothing_is_sent(recall_home, tmp_path, monkeypatch, hash_model):
    from recall.config.load import packaged_settings

    assert packaged_settings().model != "gemini" and not packaged_settings().gemini.send_messages
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with fake_gemini() as api:
        run_cli("index", notes_folder(tmp_path), check=True)
        run_cli("search", "promote", "the", "replica", check=True)
    assert api.requests == []


def test_index_and_search_send_masked_text_in_the_checked_shape(gemini_home, tmp_path):
    home, api = gemini_home
    folder = notes_folder(tmp_path)
    (folder / "creds.md").write_text("---\nname: deploy creds\ndescription: where the token is\n---\n"
                                     "token = ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    run_cli("index", folder, check=True)
    assert api.inputs() and all(r["output_dimensionality"] == 256 for r in api.inputs())
    assert api.saw("pg_ctl promote")
    assert not api.saw("ghp_abcdefghijklmnopqrstuvwxyz0123456789")  # masked before it is sent
    sent = len(api.inputs())
    out = json.loads(run_cli("search", "--json", "promote", "the", "replica", check=True).stdout)
    assert out["model"] == "google/gemini-embedding-2@256"
    assert out["results"][0]["name"] == "Postgres failover runbook"
    asked = api.inputs()[sent:]
    assert [p["text"] for r in asked for p in r["content"]["parts"]] == [
        "task: search result | query: promote the replica"]  # typed on purpose: sent, as a query
    run_cli("index", folder, check=True)
    assert len(api.inputs()) == sent + 1  # unchanged notes: nothing embedded again


def test_the_users_messages_are_not_sent_unless_they_opt_in(gemini_home, tmp_path):
    from recall.api import Recall

    home, api = gemini_home
    run_cli("index", notes_folder(tmp_path), check=True)
    message = "how do I promote the postgres replica after failover?"
    app = Recall()
    res = app.query(message)  # what the hook and an agent's MCP search ask
    assert res.hits == [] and res.decision.text == "" and "withheld" in res.timings
    assert not api.saw("promote the postgres replica")
    set_config(home, gemini_config(api, send_messages=True))
    res = Recall().query(message)
    assert res.hits and res.hits[0].note["name"] == "Postgres failover runbook"
    assert api.saw("task: search result | query: " + message)


def test_the_mcp_tool_says_it_withheld_the_query(gemini_home, tmp_path):
    from recall.mcp.tools import RecallTools

    _, api = gemini_home
    run_cli("index", notes_folder(tmp_path), check=True)
    out = RecallTools(cwd=tmp_path).search("promote the postgres replica")
    assert out["results"] == [] and "send_messages" in out["withheld"]
    assert not api.saw("promote the postgres replica")


def test_what_is_sent_is_said_before_the_first_request(recall_home, tmp_path):
    with fake_gemini(status_plan=[400]) as api:
        set_config(recall_home, gemini_config(api))
        proc = run_cli_process("index", notes_folder(tmp_path), env={"GEMINI_API_KEY": KEY, "RECALL_MODEL": ""})
    assert proc.returncode != 0 and len(api.requests) == 1
    told = proc.stderr.index("recall: model = gemini sends to " + api.url)
    assert told < proc.stderr.index("Gemini API answered 400: planned failure")
    assert "your messages to the agent are not sent" in proc.stderr
    assert "Traceback" not in proc.stderr and KEY not in proc.stderr + proc.stdout


def test_the_line_said_before_the_first_request_masks_the_endpoints_credentials(recall_home, tmp_path):
    """An outside tester's endpoint held a user's password and a ?key=: this line printed both."""
    with fake_gemini(status_plan=[400]) as api:
        host = api.url.split("://", 1)[1]
        set_config(recall_home, gemini_config(api).replace(api.url, f"http://admin:Sup3rS3cretPw9@{host}?key={KEY}"))
        proc = run_cli_process("index", notes_folder(tmp_path), env={"GEMINI_API_KEY": KEY, "RECALL_MODEL": ""})
    assert "recall: model = gemini sends to" in proc.stderr
    assert "Sup3rS3cretPw9" not in proc.stderr + proc.stdout and KEY not in proc.stderr + proc.stdout


def test_a_missing_key_or_a_plain_http_endpoint_is_one_line(recall_home, tmp_path, monkeypatch):
    from recall.config.load import load_config
    from recall.embedding.gemini import GeminiEmbedder

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    set_config(recall_home, 'model = "gemini"\n')
    proc = run_cli("index", notes_folder(tmp_path))
    assert proc.returncode != 0 and "GEMINI_API_KEY" in proc.stderr and "Traceback" not in proc.stderr
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    set_config(recall_home, '[gemini]\nendpoint = "http://example.com/v1beta"\n')
    with pytest.raises(GeminiError, match="must be https"):
        GeminiEmbedder("gemini", load_config().gemini)


def test_rate_limits_are_retried_and_errors_are_one_line(recall_home, monkeypatch):
    from recall.config.load import load_config
    from recall.embedding.gemini import GeminiEmbedder

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with fake_gemini(status_plan=[429, 503]) as api:
        set_config(recall_home, gemini_config(api))
        emb = GeminiEmbedder("gemini", load_config().gemini)
        rows = emb.embed_passages(["one", "two"])
        assert rows.shape == (2, 256) and len(api.requests) == 3
    with fake_gemini(model="other-model") as api:
        set_config(recall_home, gemini_config(api))
        emb = GeminiEmbedder("gemini", load_config().gemini)
        with pytest.raises(GeminiError, match=r"^Gemini API answered 400: unexpected path"):
            emb.embed_queries(["x"])


def test_gemini_embedding_001_takes_its_task_as_task_type(recall_home, monkeypatch):
    from recall.config.load import load_config
    from recall.embedding.gemini import GeminiEmbedder

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with fake_gemini(model="gemini-embedding-001") as api:
        set_config(recall_home, gemini_config(api))
        GeminiEmbedder("gemini:gemini-embedding-001", load_config().gemini).embed_queries(["where is it"])
    assert api.errors == [] and api.inputs()[0]["taskType"] == "RETRIEVAL_QUERY"
    assert api.inputs()[0]["content"]["parts"] == [{"text": "where is it"}]


@pytest.mark.slow
def test_a_screenshot_is_sent_with_its_text_and_not_when_it_shows_a_secret(gemini_home, tmp_path):
    pytest.importorskip("rapidocr", reason="the ocr extra")
    from PIL import Image

    _, api = gemini_home
    folder = tmp_path / "shots"
    folder.mkdir()
    make_screenshot(folder / "deploy.png", ["Deploy failed: disk quota exceeded on build-07"], latin_font())
    Image.open(make_screenshot(tmp_path / "x.png", ["Release checklist signed off"], latin_font())).save(
        folder / "release.webp")
    make_screenshot(folder / "leak.png", ["token: ghp_abcdefghijklmnopqrstuvwxyz0123456789"], latin_font(),
                    font_px=30)
    run_cli("index", folder, check=True)
    media = api.media()
    assert sorted(m for m, _ in media) == ["image/png", "image/png"]  # the .webp went as PNG; not leak.png
    assert (folder / "deploy.png").read_bytes() in [b for _, b in media]
    assert not api.saw("ghp_abcdefghijklmnopqrstuvwxyz") and api.saw("token: [REDACTED]")
    top = json.loads(run_cli("search", "--json", "disk", "quota", "exceeded", check=True).stdout)["results"][0]
    assert top["id"] == "deploy.png" and top["type"] == "image"
    before = len(api.inputs())
    run_cli("index", folder, check=True)
    assert len(api.inputs()) == before  # unchanged: not sent again


@pytest.mark.slow
def test_a_recording_is_sent_in_silent_pieces_of_at_most_120_seconds(gemini_home, tmp_path):
    pytest.importorskip("rapidocr", reason="the ocr extra")
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (apt install ffmpeg)")
    _, api = gemini_home
    shot = make_screenshot(tmp_path / "frame.png", ["Error: connection refused on port 5432"], latin_font())
    (tmp_path / "videos").mkdir()
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-loop", "1", "-t", "130", "-i", str(shot), "-f", "lavfi",
                    "-t", "130", "-i", "sine=frequency=440", "-vf", "format=yuv420p,scale=640:-2", "-r", "1",
                    "-shortest", str(tmp_path / "videos" / "demo.mp4")], check=True)
    run_cli("index", tmp_path / "videos", check=True)
    videos = [b for m, b in api.media() if m == "video/mp4"]
    assert videos
    for i, data in enumerate(videos):
        piece = tmp_path / f"piece-{i}.mp4"
        piece.write_bytes(data)
        probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json",
                                           str(piece)], capture_output=True, text=True, check=True).stdout)
        assert [s["codec_type"] for s in probe["streams"]] == ["video"]  # no sound
        assert float(probe["format"]["duration"]) <= 120
    top = json.loads(run_cli("search", "--json", "connection", "refused", check=True).stdout)["results"][0]
    assert top["type"] == "recording" and top["location"].startswith("00:00:00–00:01:37")


@pytest.mark.process
def test_the_hook_through_a_real_daemon_sends_no_message_and_says_nothing(gemini_home, tmp_path):
    """The per-message path end to end: hook process -> daemon over its socket -> Recall.query."""
    from helpers.daemon import Daemons, index_dirs, wait_for
    from helpers.env import env_with
    from helpers.paths import PY

    _, api = gemini_home
    index_dirs(notes_folder(tmp_path))
    daemons = Daemons(gemini_home[0], tmp_path)
    try:
        daemons.start(wait_s=30)
        message = "how do I promote the postgres replica after failover?"
        stdin = json.dumps({"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": "/",
                            "hook_event_name": "UserPromptSubmit", "prompt": message}).encode()
        proc = subprocess.run([PY, "-P", "-m", "recall.agents.hook"], input=stdin, capture_output=True,
                              env=env_with(), timeout=30)
        assert proc.returncode == 0 and proc.stdout == b""
        # the daemon answers after the hook gives up, too: give it time to send, if it would
        assert not wait_for(lambda: api.saw("promote the postgres replica"), 3.0)
        assert api.inputs()  # the daemon's model is the cloud one (indexing went through it)
    finally:
        daemons.kill_all()
