"""Every command line the README and docs/ give names a command and flags that exist.

An outside tester ran each synopsis as written (stop 48): the README gave `recall uninstall`
the flags `--form` and `--track-reads` (`No such option`), and `recall-eval expand --help`
offered `--batch-size 0` ("all in one") that its range refused. Both are checked here for
every command, not for those two.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from recall.cli import main
from recall_eval.cli import main as eval_main

ROOT = Path(__file__).resolve().parents[2]
SPAN = re.compile(r"`([^`\n]+)`")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
PROGRAMS = {"recall": main, "recall-eval": eval_main}


WORD = re.compile(r"[a-z][a-z0-9-]*")


def _resolve(text: str) -> tuple[click.Command, str]:
    """The command ``text`` (``recall team search WORDS --json``) names, and its name."""
    words = text.split()
    cmd: click.Command = PROGRAMS[words[0]]
    name = words[0]
    for word in words[1:]:
        group = isinstance(cmd, click.Group) and WORD.fullmatch(word)
        sub = cmd.get_command(click.Context(cmd), word) if group else None  # type: ignore[attr-defined]
        if sub is None:
            break
        cmd, name = sub, f"{name} {word}"
    return cmd, name


def _options(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}


def _lines() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [(f"{f.name}:{i}", line) for f in files for i, line in enumerate(f.read_text("utf-8").splitlines(), 1)]


def _synopses():
    """(where, command span, flags) for each command in backticks, with the flags of a span
    right after it that holds only flags (``recall install`` / ``recall uninstall`` ``[--agent
    …]`` gives the flags to both)."""
    for where, line in _lines():
        shell = re.sub(r"^\s*(?:\$ )?(?:[A-Z_]+=\S* )*", "", line)  # a line of a shell block: `$ X=1 recall …`
        if shell.split(" ", 1)[0] in PROGRAMS and "`" not in shell:
            command = re.split(r"\s(?:#|\||&&|;|>)", shell)[0]
            yield where, command, FLAG.findall(command)
            continue
        pending: list[str] = []
        for m in SPAN.finditer(line):
            text = m.group(1)
            if text.split()[0] in PROGRAMS:
                pending.append(text)
                yield where, text, FLAG.findall(text)
            elif text.lstrip().startswith("[--"):
                for cmd in pending:
                    yield where, cmd, FLAG.findall(text)
                pending = []
            else:
                pending = []


def test_every_flag_a_doc_gives_a_command_exists():
    wrong = []
    for where, text, flags in _synopses():
        cmd, name = _resolve(text)
        missing = [f for f in flags if f not in _options(cmd)]
        if missing:
            wrong.append(f"{where}: `{name}` has no {', '.join(missing)} (in `{text}`)")
    assert wrong == []


def test_a_special_value_the_help_names_is_in_the_range():
    """"(0: all in one)" in an option's help means 0 must be accepted."""
    wrong = []
    for prog, group in PROGRAMS.items():
        stack: list[tuple[str, click.Command]] = [(prog, group)]
        while stack:
            name, cmd = stack.pop()
            if isinstance(cmd, click.Group):
                ctx = click.Context(cmd)
                stack += [(f"{name} {n}", cmd.get_command(ctx, n)) for n in cmd.list_commands(ctx)]
            for p in cmd.params:
                t, help_text = p.type, getattr(p, "help", None) or ""
                for m in re.finditer(r"(?<![\w.])(-?\d+(?:\.\d+)?): ", help_text):
                    value = float(m.group(1))
                    low, high = getattr(t, "min", None), getattr(t, "max", None)
                    if (low is not None and value < low) or (high is not None and value > high):
                        wrong.append(f"{name} {p.opts[0]}: the help names {m.group(1)}, outside {low}..{high}")
    assert wrong == []
