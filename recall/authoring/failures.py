"""How an agent CLI's failure is said: what it printed about its end, as one safe line, and,
when nobody is logged in to it, the repair (logging in), not trying again."""

from __future__ import annotations

import contextlib
import json
import re

from recall.authoring.runner import Finished
from recall.errors import RecallError
from recall.privacy.masking import mask_secrets
from recall.privacy.safetext import one_line, shortened

# What an agent CLI says when nobody is logged in to it (Claude Code: "Not logged in · Please run
# /login", "Invalid API key · Please run /login"; Codex: "codex login"; Gemini CLI: no auth method or key).
LOGGED_OUT = re.compile(r"not logged in|please run /login|/login\b|please (log|sign) ?in|invalid api key|"
                        r"\bunauthori[sz]ed\b|codex login|auth(entication)? method|GEMINI_API_KEY", re.I)
LOGIN = {"claude": "log in to Claude Code (run `claude`, then /login)", "codex": "log in to Codex (`codex login`)",
         "gemini": "sign in to Gemini CLI (run `gemini` and choose how to sign in)"}


class AgentError(RecallError):
    """The agent CLI could not answer; the message says what to fix. ``transient``: it did not
    get to answer (it exited with an error, as when rate-limited or logged out, or could not
    start): not counted against the notes (``tries``), only waited out. ``repair``: what to do
    when trying again would not help (nobody logged in to the agent), else ""."""

    def __init__(self, message: str, transient: bool = False, repair: str = "") -> None:
        super().__init__(message)
        self.transient = transient
        self.repair = repair


class TimedOut(AgentError):
    """The agent CLI did not end within ``[questions] timeout_s``: a batch of several notes that
    times out costs none of them a try and is asked again in halves (``agentcli``); a note that
    times out alone loses its try."""


class ConsentWithdrawn(AgentError):
    """`recall questions off` (or another agent chosen) while a run was under way: it stopped as
    the user chose; in the background, no failure to report."""


def said_by(proc: Finished) -> str:
    """What the CLI said about its end, as one safe line: its stderr, else the last line of its
    stdout (Claude Code prints "Not logged in · Please run /login" there, the result of its JSON
    when it printed JSON), secrets masked; "" when it printed nothing."""
    text = proc.stderr
    if not text.strip():
        lines = [line for line in proc.stdout.splitlines() if line.strip()]
        text = lines[-1] if lines else ""
        with contextlib.suppress(ValueError, RecursionError):
            data = json.loads(text)
            if isinstance(data, dict) and isinstance(data.get("result"), str):
                text = data["result"]
    return shortened(one_line(mask_secrets(text)), 400)  # its first words (the cause) and its last kept


def login_error(agent: str, message: str, said: str) -> AgentError | None:
    """``AgentError`` with the repair when ``said`` is the agent saying nobody is logged in to it."""
    if not LOGGED_OUT.search(said):
        return None
    return AgentError(message, transient=True, repair=f"{LOGIN.get(agent, 'log in to ' + agent)}, then "
                                                      "`recall questions run`")


def claude_result(stdout: str) -> str:
    """The answer in what ``claude -p --output-format json`` printed; ``AgentError`` when it
    printed no JSON or reports an error (also read by the harness's claude-cli backend)."""
    try:
        data = json.loads(stdout)
    except (ValueError, RecursionError) as exc:
        raise AgentError(f"claude -p did not print JSON: {stdout[:200]!r}") from exc
    if not isinstance(data, dict):  # a list, a string: what an agent prints is read, never trusted (stop 48)
        raise AgentError(f"claude -p printed JSON that is no result object: {stdout[:200]!r}")
    if data.get("is_error") or data.get("subtype", "success") != "success":
        said = shortened(one_line(mask_secrets(str(data.get("result")))), 300)
        message = f"claude -p reported an error: {said}"
        raise login_error("claude", message, said) or AgentError(message)
    return str(data.get("result", ""))
