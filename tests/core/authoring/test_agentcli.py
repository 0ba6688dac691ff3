"""How recall hands one prompt to each agent CLI (recall.authoring.agentcli.complete), checked
at the process boundary: a stand-in executable records its argv, stdin, folder and environment.
The real CLIs run the same route end to end in tests/e2e/test_agent_questions.py."""

from __future__ import annotations

import json
import os
import sys
import time

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
    assert os.path.basename(call["cwd"]).startswith("gen-")
    # Gemini CLI refuses, headless, a folder the user never trusted: the empty one is trusted for the run.
    assert call["trust"] == ("true" if name == "gemini" else None)


def _cli(tmp_path, name: str, body: str):
    exe = tmp_path / name
    exe.write_text(f"#!{sys.executable}\nimport os, subprocess, sys, time\nsys.stdin.read()\n{body}\n")
    exe.chmod(0o755)
    return agentcli.Agent("gemini", str(exe))  # gemini: the answer is stdout as printed


def test_an_answer_past_the_cap_stops_the_cli_and_is_not_read_into_memory(tmp_path):
    """An outside tester's CLI printed without end: recall read gigabytes before it died."""
    agent = _cli(tmp_path, "endless", "chunk = b'A' * (1 << 20)\nwhile True:\n    os.write(1, chunk)")
    t0 = time.monotonic()
    with pytest.raises(agentcli.AgentError, match="printed more than 16 MB; it was stopped"):
        agentcli.complete(agent, "x", timeout_s=60)
    assert time.monotonic() - t0 < 30


def test_a_child_left_holding_stdout_neither_holds_the_run_nor_outlives_it(tmp_path):
    """The CLI exits at once but a child keeps its stdout: recall waited its whole time limit,
    then threw the finished answer away, and the child kept running."""
    pidfile = tmp_path / "child.pid"
    agent = _cli(tmp_path, "leaves-a-child",
                 f"p = subprocess.Popen(['sleep', '600'])\nopen({str(pidfile)!r}, 'w').write(str(p.pid))\n"
                 "print('the answer', flush=True)")
    t0 = time.monotonic()
    assert agentcli.complete(agent, "x", timeout_s=120).strip() == "the answer"
    assert time.monotonic() - t0 < 30
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]


def test_bytes_that_are_not_utf8_are_replaced_and_the_cause_of_a_failure_is_kept(tmp_path):
    odd = _cli(tmp_path, "odd", "os.write(1, b'\\xff\\xfe answer')")
    assert "answer" in agentcli.complete(odd, "x", timeout_s=60)
    stack = "\\n".join(f"    at frame{i} (node:internal/{i}:1:1)" for i in range(40))
    crash = _cli(tmp_path, "crash",
                 f"sys.stderr.write('Invalid API key · Please run /login\\n{stack}\\n')\nsys.exit(1)")
    with pytest.raises(agentcli.AgentError) as err:
        agentcli.complete(crash, "x", timeout_s=60)
    assert "Invalid API key" in str(err.value) and "\n" not in str(err.value)
    quiet = _cli(tmp_path, "quiet", "sys.stderr.write('rate limited, try later')")
    with pytest.raises(agentcli.AgentError, match="printed no answer; it said: rate limited"):
        agentcli.complete(quiet, "x", timeout_s=60)
