"""How recall hands one prompt to each agent CLI (recall.authoring.agentcli.complete), checked
at the process boundary: a stand-in executable records its argv, stdin, folder and environment.
The real CLIs run the same route end to end in tests/e2e/test_agent_questions.py."""

from __future__ import annotations

import json
import os
import sys

import pytest

from recall.authoring import agentcli

RECORDER = """#!{python}
import json, os, sys
prompt = sys.stdin.read()
with open({record!r}, "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "stdin": prompt, "cwd": os.getcwd(),
                          "trust": os.environ.get("GEMINI_CLI_TRUST_WORKSPACE")}}) + "\\n")
if "--output-last-message" in sys.argv:
    open(sys.argv[sys.argv.index("--output-last-message") + 1], "w").write("answer of " + str(len(prompt)))
else:
    print("answer of " + str(len(prompt)))
"""

# Over Linux's limit on one argument (MAX_ARG_STRLEN, 128 KiB): a batch of 20 long notes.
BIG = "### note.md\n" + "a decision record line that goes on. " * 5000


@pytest.mark.parametrize("name", ["codex", "gemini"])
def test_a_prompt_over_the_argv_limit_goes_on_stdin(name, tmp_path):
    record = tmp_path / "record.jsonl"
    exe = tmp_path / name
    exe.write_text(RECORDER.format(python=sys.executable, record=str(record)))
    exe.chmod(0o755)
    assert len(BIG.encode()) > 128 * 1024
    got = agentcli.complete(agentcli.Agent(name, str(exe)), BIG, timeout_s=60)
    assert got.strip() == f"answer of {len(BIG)}"
    call = json.loads(record.read_text())
    assert call["stdin"] == BIG and all(len(a) < 1000 for a in call["argv"])
    assert os.path.basename(call["cwd"]).startswith("recall-gen-")
    # Gemini CLI refuses, headless, a folder the user never trusted: the empty one is trusted for the run.
    assert call["trust"] == ("true" if name == "gemini" else None)
