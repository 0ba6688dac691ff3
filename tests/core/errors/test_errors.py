"""One root: every exception class recall defines derives from ``recall.errors.RecallError``,
so a front end catches one class and prints its one line (``recall.cli.common.clean_errors``)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import recall
from recall.errors import RecallError

ROOT = Path(recall.__file__).parent
# Signals caught where they are raised, never reaching a front end: a question whose asker
# gave up (the daemon answers "expired"), a file a reader skips with a warning, an upload the
# page refuses in its own words, the CLI's click exceptions (what a RecallError and Ctrl-C become).
INTERNAL = {"Expired", "Unreadable", "Refused", "UserError", "Interrupted", "NotAFile", "LeftTheFolder"}
BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "OSError", "LookupError", "KeyError"}


def _exception_classes() -> list[tuple[str, str]]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
            if bases & BUILTIN_BASES or any(b.endswith(("Error", "Damaged", "Full", "Unusable")) for b in bases):
                module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
                found.append((module.removesuffix(".__init__"), node.name))
    return found


def test_the_scan_finds_the_known_errors():
    names = {name for _, name in _exception_classes()}
    assert {"ConfigError", "InstallError", "PgStoreError", "EmbedderError", "AgentError", "DaemonError",
            "NoteRejected", "IndexDamaged", "GeminiError"} <= names


@pytest.mark.parametrize(("module", "name"), [m for m in _exception_classes() if m[1] not in INTERNAL])
def test_every_error_has_one_root(module, name):
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, RecallError), f"{module}.{name} does not derive from recall.errors.RecallError"


def test_errors_caught_as_builtins_keep_their_builtin_base():
    # Code catches ValueError around settings and a rejected note: those stay ValueErrors.
    from recall.config.settings import ConfigError
    from recall.store.records import NoteRejected

    assert issubclass(ConfigError, ValueError) and issubclass(NoteRejected, ValueError)
