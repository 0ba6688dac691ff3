"""What writing a folder's questions costs in tokens, and what each agent request carries
besides recall's prompt (``python -m bench.bench_questions [--json] [FOLDER ...]``).

* **Per request**: the real agent CLIs (pinned npm versions, tests/e2e/agents.py: Claude Code,
  Codex, Gemini CLI) run by ``recall.authoring.agentcli.complete`` exactly as recall runs them,
  each against its fake model API on 127.0.0.1 (the end-to-end tests' fakes: Anthropic Messages,
  OpenAI Responses, Gemini), with one short prompt. Every model request the fake sees for
  that one prompt is counted; per request, the body's tokens (``estimate_tokens`` of its JSON)
  minus the prompt's when the body carries it (the prompt has no character JSON escapes, so
  its tokens in the body are its own): the agent's own instructions, tool schemas and
  envelope. Claude Code also runs once as ``claude -p --output-format json`` alone (its own
  system prompt and tools: what recall's flags remove); Gemini CLI once more with a model named
  (``[questions] model``: ``-m``), which skips the router request its default ``auto`` makes.
  These figures, rounded up, are ``agentcli.REQUEST_OVERHEAD``.
* **Per folder**: ``recall.authoring.notegen.cost`` on every note of the folder (as if all were
  new), the estimate `recall questions` and `recall index` show before anything is sent: recall's
  prompts alone, then per agent with ``agentcli.REQUEST_OVERHEAD`` (``agentcli.agent_cost``).

A CLI that cannot be installed (no node or npm, or npm fails) is reported as skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

DEFAULT_FOLDERS = [ROOT / "datasets" / "sample" / "notes",
                   ROOT.parent / "shared" / "benchmarks" / "rules-120" / "notes"]
PROMPT = "Answer ok. " * 40  # nothing JSON escapes: its tokens in a request body are its own
TIMEOUT_S = 180


def folder_cost(folder: Path, batch_notes: int = 20) -> dict:
    from recall.authoring import agentcli, notegen

    state = notegen.folder_state(folder)
    state.pending = state.notes
    state.has_negatives = False
    c = notegen.cost(state, batch_notes)
    n = max(1, len(state.notes))
    per_agent = {name: agentcli.agent_cost(c, agentcli.Agent(name, name)) for name in agentcli.AGENTS}
    return {"folder": str(folder), "notes": len(state.notes), "requests": c.requests, "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens, "per_note": round(c.total / n),
            "per_note_with": {name: round(a.total / n) for name, a in per_agent.items()},
            "model_requests": {name: a.requests for name, a in per_agent.items()}}


# --- per request -----------------------------------------------------------------------------


@contextlib.contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` meanwhile (``complete`` passes it to the CLI)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def tool_names(body: dict) -> list[str]:
    """The tools a request offers the model, whatever the wire format (Messages, Responses, Gemini)."""
    out = []
    for tool in body.get("tools") or []:
        declared = tool.get("functionDeclarations")
        out += [str(f.get("name")) for f in declared] if declared is not None else [
            str(tool.get("name") or tool.get("type"))]
    return out


def model_of(path: str) -> str:
    """The model a Gemini API path names (``/v1beta/models/<model>:generateContent``)."""
    return path.split("/models/", 1)[-1].split(":", 1)[0]


def measure(agent, api, label: str) -> dict:
    """One prompt through ``complete``: each model request it made and what it carried besides the prompt."""
    from recall.authoring.agentcli import complete
    from recall.authoring.notegen import estimate_tokens

    before = len(api.requests)
    complete(agent, PROMPT, TIMEOUT_S)
    seen = api.requests[before:]
    wanted = {id(b) for b in api.bodies()}  # the fake's model requests (not token counts)
    requests = [r for r in seen if id(r["body"]) in wanted]
    per = []
    for r in requests:
        raw = json.dumps(r["body"], ensure_ascii=False)
        per.append(estimate_tokens(raw) - (estimate_tokens(PROMPT) if PROMPT.strip() in raw else 0))
    return {"agent": agent.name, "how": label, "requests": len(requests), "other_requests": len(seen) - len(requests),
            "tokens_besides_prompt": per, "per_prompt": sum(per),
            "tools": max((len(tool_names(r["body"])) for r in requests), default=0),
            "models": [model_of(r["path"]) if "/models/" in r["path"] else r["body"].get("model", "")
                       for r in requests]}


@dataclass(frozen=True)
class Cli:
    """One agent CLI: its pin, its fake model API, and the environment that points it there."""

    name: str
    fake: Callable[[], AbstractContextManager]
    env: Callable[[object, str], dict[str, str]]


def _clis() -> list[Cli]:
    import fake_gemini
    import fake_responses
    from agents import claude_env, codex_env, gemini_env, write_codex_config, write_gemini_settings

    from helpers import fake_messages

    def codex(scratch, url: str) -> dict[str, str]:
        write_codex_config(scratch, url)
        return codex_env(scratch)

    def gemini(scratch, url: str) -> dict[str, str]:
        write_gemini_settings(scratch, command=None)
        return gemini_env(scratch, url)

    return [Cli("claude", lambda: fake_messages.start(answer=lambda _b: [fake_messages.text("ok")]), claude_env),
            Cli("codex", lambda: fake_responses.start(lambda _b: "ok"), codex),
            Cli("gemini", lambda: fake_gemini.start(lambda _b: "ok"), gemini)]


def request_overhead(names: tuple[str, ...] = ("claude", "codex", "gemini")) -> list[dict]:
    from agents import AGENTS, NotAvailable, Scratch, install

    from recall.authoring.agentcli import Agent, AgentError

    class Plain(Agent):
        def command(self, out_file, prompt):  # claude -p alone: what recall's flags remove
            return [self.exe, "-p", "--output-format", "json"], prompt

    out: list[dict] = []
    for cli in [c for c in _clis() if c.name in names]:
        pin = AGENTS[cli.name]
        version = f"{pin.package}@{pin.version}"
        try:
            exe = str(install(pin))
        except (NotAvailable, RuntimeError, OSError, TimeoutError) as exc:
            out.append({"agent": cli.name, "version": version, "skipped": str(exc).strip().splitlines()[0]})
            continue
        with tempfile.TemporaryDirectory(prefix="recall-bench-questions-") as tmp, cli.fake() as api:
            scratch = Scratch(Path(tmp) / "s")
            with environ(cli.env(scratch, api.url)):
                runs = [("as recall runs it", Agent(cli.name, exe))]
                if cli.name == "claude":
                    runs.insert(0, ("claude -p alone", Plain(cli.name, exe)))
                try:
                    for label, agent in runs:
                        out.append({**measure(agent, api, label), "version": version})
                    if cli.name == "gemini":  # the model `auto` picked, named: no router request
                        named = out[-1]["models"][-1]
                        out.append({**measure(Agent(cli.name, exe, named), api, f"-m {named}"), "version": version})
                except AgentError as exc:
                    out.append({"agent": cli.name, "version": version, "error": str(exc)})
    return out


# --- output -----------------------------------------------------------------------------------


def print_tables(folders: list[dict], requests: list[dict]) -> None:
    from recall.authoring.agentcli import AGENTS

    print("what each agent CLI sends per prompt of recall's, besides the prompt (tokens, estimate_tokens of "
          "each request body's JSON; fake model APIs on 127.0.0.1)")
    print(f"{'agent':<8} {'how':<26} {'version':<34} {'requests':>8} {'tools':>5} {'per request':>16} "
          f"{'per prompt':>10}")
    for r in requests:
        if "skipped" in r or "error" in r:
            why = f"skipped: {r['skipped']}" if "skipped" in r else f"error: {r['error']}"
            print(f"{r['agent']:<8} {'':<26} {r['version']:<34} {why}")
            continue
        per = " + ".join(f"{t:,}" for t in r["tokens_besides_prompt"])
        print(f"{r['agent']:<8} {r['how']:<26} {r['version']:<34} {r['requests']:>8} {r['tools']:>5} {per:>16} "
              f"{r['per_prompt']:>10,}")
    print("\nwhat writing every note's questions would cost (tokens per note, as `recall questions` shows it: "
          "recall's prompts, then with each agent's REQUEST_OVERHEAD)")
    print(f"{'folder':<40} {'notes':>5} {'prompts':>7} {'prompts only':>12} "
          + " ".join(f"{name:>8}" for name in AGENTS))
    for f in folders:
        print(f"{Path(f['folder']).parent.name + '/' + Path(f['folder']).name:<40} {f['notes']:>5} {f['requests']:>7} "
              f"{f['per_note']:>12,} " + " ".join(f"{f['per_note_with'][name]:>8,}" for name in AGENTS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="note folders (default: the sample notes, rules-120)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of tables")
    parser.add_argument("--agents", nargs="*", default=["claude", "codex", "gemini"],
                        choices=["claude", "codex", "gemini"], help="the agent CLIs to run")
    args = parser.parse_args(argv)
    folders = [folder_cost(f) for f in args.folders or [f for f in DEFAULT_FOLDERS if f.is_dir()]]
    requests = request_overhead(tuple(args.agents))
    if args.json:
        for row in [*folders, *requests]:
            print(json.dumps(row))
    else:
        print_tables(folders, requests)
    return 1 if any("error" in r for r in requests) else 0


if __name__ == "__main__":
    sys.exit(main())
