"""The agents' CLIs the suite drives are the pinned versions (README names them)."""

from __future__ import annotations

import pytest
from agents import CLAUDE, CODEX, GEMINI, version_of

pytestmark = pytest.mark.e2e


def test_the_pinned_versions_run(claude_exe, codex_exe, gemini_exe):
    assert version_of(claude_exe).startswith(f"{CLAUDE.version} ")  # "2.1.332 (Claude Code)"
    assert version_of(codex_exe) == f"codex-cli {CODEX.version}"
    assert version_of(gemini_exe) == GEMINI.version
