"""Environments for subprocesses."""

from __future__ import annotations

import os


def env_with(**extra: str) -> dict[str, str]:
    """This process's environment (as the test's fixtures set it) plus ``extra``."""
    env = dict(os.environ)
    env.update(extra)
    return env
