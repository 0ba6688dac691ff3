"""What writing a folder's questions costs in tokens, and what each agent request carries
besides recall's prompt (``python -m bench.bench_questions [FOLDER ...]``).

* **Per folder**: ``recall.authoring.notegen.cost`` on every note of the folder (as if all were new),
  the estimate `recall questions` and `recall index` show before anything is sent.
* **Per request**: the real Claude Code CLI (pinned, tests/e2e/agents.py) run by
  ``recall.authoring.agentcli.complete`` against the fake Messages API on 127.0.0.1, once as
  ``claude -p --output-format json`` alone (Claude Code's own system prompt and tools) and
  once with the flags recall passes; the request body's tokens (``estimate_tokens`` of its
  JSON) minus the prompt's.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]

DEFAULT_FOLDERS = [ROOT / "datasets" / "sample" / "notes",
                   ROOT.parent / "shared" / "benchmarks" / "rules-120" / "notes"]


def folder_cost(folder: Path, batch_notes: int = 20) -> dict:
    from recall.authoring import notegen

    state = notegen.folder_state(folder)
    state.pending = state.notes
    state.has_negatives = False
    c = notegen.cost(state, batch_notes)
    return {"folder": str(folder), "notes": len(state.notes), "requests": c.requests, "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens, "per_note": round(c.total / max(1, len(state.notes)))}


def request_overhead() -> list[dict]:
    import tempfile

    from agents import CLAUDE, install

    from helpers.fake_messages import start, text
    from recall.authoring.agentcli import Agent, complete
    from recall.authoring.notegen import estimate_tokens

    exe = str(install(CLAUDE))
    prompt = "Answer ok. " * 40
    out = []
    with start(answer=lambda _b: [text("ok")]) as api, tempfile.TemporaryDirectory() as home:
        os.environ.update(HOME=home, CLAUDE_CONFIG_DIR=f"{home}/.claude", ANTHROPIC_BASE_URL=api.url,
                          ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key", DISABLE_AUTOUPDATER="1",
                          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1")

        class Plain(Agent):
            def command(self, out_file, prompt):  # claude -p alone: what recall's flags remove
                return [self.exe, "-p", "--output-format", "json"], prompt

        for label, agent in (("claude -p alone", Plain("claude", exe)), ("as recall runs it", Agent("claude", exe))):
            before = len(api.bodies())
            complete(agent, prompt, 120)
            body = api.bodies()[before:][-1]
            out.append({"how": label, "tools": len(body.get("tools") or []),
                        "tokens_besides_prompt": estimate_tokens(json.dumps(body, ensure_ascii=False))
                        - estimate_tokens(prompt)})
    return out


def main(argv: list[str]) -> int:
    for folder in [Path(a) for a in argv] or [f for f in DEFAULT_FOLDERS if f.is_dir()]:
        print(json.dumps(folder_cost(folder)))
    for row in request_overhead():
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
