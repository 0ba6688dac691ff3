"""The size rule: modules over 400 lines, functions over 60 lines without a stated reason.

    python scripts/sizes.py recall/cli/*.py recall/daemon/*.py ...

Prints one line per breach (none: silent, exit 0); a function whose first lines say
``# Long because: ...`` is listed as such and not counted.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_MODULE, MAX_FUNCTION = 400, 60


def breaches(path: Path) -> list[str]:
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    out = [f"{path}: module {len(lines)} lines"] if len(lines) > MAX_MODULE else []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION:
                said = any("Long because" in line for line in lines[node.lineno - 1: node.lineno + 12])
                out.append(f"{path}:{node.lineno} {node.name} {length} lines" + (" (reason given)" if said else ""))
    return out


def main(paths: list[str]) -> int:
    found = [line for p in paths for line in breaches(Path(p))]
    for line in found:
        print(line)
    return 1 if any("reason given" not in line for line in found) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
