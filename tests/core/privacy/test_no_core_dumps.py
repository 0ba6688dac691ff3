"""No core dump of any process recall or its harness starts from a terminal or an agent: each
holds notes' text before masking, questions or what the user typed (stop 49, an outside tester's
AB01: a crashed `recall-eval` wrote a 150 MB core into the current folder, secrets unmasked)."""

from __future__ import annotations

import signal
import subprocess

import pytest

from helpers.cores import allow_cores, crashes_without_core
from helpers.env import env_with
from helpers.paths import PY

# Entry points a shell or an agent starts directly (the others are started by one of these and
# inherit the limit: the converter, the page's re-index, an agent CLI writing questions).
ENTRIES = {
    "recall-eval": [PY, "-P", "-c", "from recall_eval.cli import run; run()", "run", "--collection", "sample"],
    "read tracker": [PY, "-P", "-m", "recall.agents.track"],
}


@pytest.mark.process
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_crash_of_any_entry_point_writes_no_core(entry, recall_home, tmp_path):
    proc = subprocess.Popen(ENTRIES[entry], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env_with(), preexec_fn=allow_cores)
    try:
        crashes_without_core(proc, signal.SIGSEGV, tmp_path)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stdin is not None
        proc.stdin.close()


@pytest.mark.process
def test_the_plugins_stand_in_server_writes_no_core(tmp_path):
    """Before the plugin's first setup finishes, its launcher serves a stand-in MCP server that
    Claude Code hands every message (the `mcp_tool` hook); it never forbade core dumps, and a
    SIGABRT left the message in a core file in the project folder (an outside tester's, stop 60)."""
    from helpers.paths import ROOT

    data = tmp_path / "plugin-data"
    data.mkdir()
    env = env_with(CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PLUGIN_DATA=str(data),
                   RECALL_PLUGIN_PYTHON=str(data / "no-such-python"))  # a setup that cannot finish
    proc = subprocess.Popen([PY, str(ROOT / "scripts" / "recall_plugin.py"), "mcp"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=allow_cores)
    try:
        crashes_without_core(proc, signal.SIGABRT, tmp_path)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stdin is not None
        proc.stdin.close()
