"""The MCP server in a real stdio session, driven by the SDK's own client."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from conftest import ROOT, write_note

from recall.config import load_config
from recall.embedders import get_embedder
from recall.indexer import SourceSpec
from recall.service import Recall, project_key

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402


@pytest.fixture
def indexed(tmp_path, recall_home) -> dict[str, Path]:
    """A shared notes folder, this project's memory and another project's memory."""
    project = tmp_path / "work" / "myproj"
    (project / ".git").mkdir(parents=True)
    other = tmp_path / "work" / "otherrepo"
    (other / ".git").mkdir(parents=True)
    shared = tmp_path / "notes"
    write_note(shared, "celery-retry", "Celery retry policy", "retry with exponential backoff",
               "Tasks retry 5 times with exponential backoff and jitter.")
    write_note(shared, "lint", "Lint settings", "ruff, line length 110", "Run ruff check before pushing.")
    mine = tmp_path / "mem-mine"
    write_note(mine, "deploy-freeze", "Deploy freeze on Fridays", "no deploys after Friday noon",
               "The team does not deploy on Friday afternoons.", "project")
    theirs = tmp_path / "mem-other"
    write_note(theirs, "other-secret-sauce", "Other repo grpc deadlines", "grpc deadline of 2 s",
               "Every grpc call in otherrepo sets a 2 second deadline.", "project")
    app = Recall(home=recall_home, config=load_config(), embedder=get_embedder("hash"))
    app.index([SourceSpec("dir", shared), SourceSpec("memory", mine, project_key(project)),
               SourceSpec("memory", theirs, project_key(other))])
    app.store.close()
    return {"project": project, "home": recall_home}


def server_params(indexed: dict[str, Path]) -> StdioServerParameters:
    env = {
        "RECALL_HOME": str(indexed["home"]),
        "RECALL_MODEL": "hash",
        "CLAUDE_CONFIG_DIR": str(indexed["home"].parent / "claude"),
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "recall.mcp"], env=env,
                                 cwd=str(indexed["project"]))


async def _session_calls(params: StdioServerParameters, errlog_path: Path) -> dict:
    out: dict = {}
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out["server"] = init.server_info.name
                out["tools"] = {t.name: t for t in (await session.list_tools()).tools}
                out["search"] = await session.call_tool("recall_search",
                                                        {"query": "celery task retry backoff"})
                out["mine"] = await session.call_tool("recall_search", {"query": "deploy on friday", "k": 10})
                out["repo"] = await session.call_tool("recall_search",
                                                      {"query": "grpc deadline", "k": 3, "repo": "otherrepo"})
                out["status"] = await session.call_tool("recall_status", {})
    return out


def payload(result) -> dict:
    assert not result.is_error, result.content
    data = result.structured_content
    # The same JSON travels as text content for clients without structured output.
    assert json.loads(result.content[0].text) == data
    return data


def test_stdio_session(indexed, tmp_path):
    errlog = tmp_path / "server-stderr.log"
    try:
        out = anyio.run(_session_calls, server_params(indexed), errlog)
    except BaseException:
        print(errlog.read_text())  # the server's stderr, shown by pytest on failure
        raise
    assert out["server"] == "recall"
    assert set(out["tools"]) == {"recall_search", "recall_status"}
    schema = out["tools"]["recall_search"].input_schema
    assert schema["required"] == ["query"] and {"k", "repo"} <= set(schema["properties"])

    found = payload(out["search"])
    assert found["model"] == "hash-256"
    top = found["results"][0]
    assert top["id"] == "celery-retry" and top["rank"] == 1
    assert top["description"] == "retry with exponential backoff"
    assert top["path"].endswith("celery-retry.md") and 0 < top["score"] <= 1
    assert len(found["results"]) <= 5
    assert {"decision", "reason", "top", "gap", "text"} <= set(found["selector"])

    # Default scope: this project's memory and the shared notes, not other projects'.
    mine = payload(out["mine"])
    ids = [r["id"] for r in mine["results"]]
    assert ids[0] == "deploy-freeze"
    assert "other-secret-sauce" not in ids
    assert mine["scope"]["project"] == project_key(indexed["project"])

    # repo=...: that project's notes only, no shared ones.
    repo = payload(out["repo"])
    assert [r["id"] for r in repo["results"]] == ["other-secret-sauce"]

    status = payload(out["status"])
    assert status["model"]["model_id"] == "hash-256"
    assert status["counts"]["notes"] == 4
    assert status["index"]["generation"] == 1


def test_tools_in_process_clamp_k_and_search_short_queries(indexed):
    from recall.mcp_server import MAX_K, RecallTools

    app = Recall(home=indexed["home"], config=load_config(), embedder=get_embedder("hash"))
    tools = RecallTools(app, cwd=indexed["project"])
    assert len(tools.search("notes", k=0)["results"]) == 1
    assert len(tools.search("notes", k=10_000)["results"]) <= MAX_K
    # An explicit question is searched even when shorter than the hook's minimum.
    short = tools.search("lint")
    assert short["results"][0]["id"] == "lint"
    assert short["selector"]["decision"] == "nothing"
