"""The tests' own layout (issue #12): shared helpers live in tests/helpers/, fixtures in
conftest.py files; no module imports conftest or a test module, and the helpers never
import a test module, so nothing depends on collection order or on pytest's sys.path tricks."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (also inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_imports_conftest_or_a_test_module():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        bad = sorted(n for n in _imported_modules(path) if n == "conftest" or n.startswith("test_"))
        if bad:
            offenders.append(f"{path.relative_to(TESTS)}: {', '.join(bad)}")
    assert not offenders, "import helpers from tests/helpers/ instead: " + "; ".join(offenders)


def test_helpers_are_modules_not_fixtures():
    """Fixtures belong in conftest.py; a helper module that defined one would need a
    ``from helpers.x import fixture`` that pytest cannot see."""
    offenders = []
    for path in sorted((TESTS / "helpers").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
                offenders.append(f"{path.name}:{node.lineno} {node.name}")
    assert not offenders, offenders


def test_the_old_helper_files_are_gone():
    leftovers = [p.name for p in TESTS.glob("*.py")
                 if p.name.endswith("_helpers.py") or p.name in ("fake_http.py", "fake_messages.py", "leaks.py")]
    assert not leftovers, f"move these into tests/helpers/: {leftovers}"
