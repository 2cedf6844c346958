"""Fail if any function in src/ is longer than 50 lines, any module longer than 500, the
turn loop (turn/loop.py) longer than 400, or any of the widget's JavaScript files
(web/widget.js and its modules, web/widget/) longer than 400.

Run by ./scripts/test; `python scripts/lengths.py` prints what is too long.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "turnkeeper"
MOST_LINES = 50
MODULE_LINES = 500
LOOP = Path("turn") / "loop.py"
LOOP_LINES = 400
WIDGET_LINES = 400


def too_long() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        lines = len(path.read_text("utf-8").splitlines())
        if lines > MODULE_LINES:
            found.append(f"{path.relative_to(SRC)}: {lines} lines")
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MOST_LINES:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {lines}")
    loop = len((SRC / LOOP).read_text("utf-8").splitlines())
    if loop > LOOP_LINES:
        found.append(f"{LOOP}: {loop} lines")
    return found + widget_too_long()


def widget_too_long() -> list[str]:
    """The widget's own JavaScript files over WIDGET_LINES lines (the vendored code is not
    the widget's)."""
    web = SRC / "web"
    files = [web / "widget.js", *sorted((web / "widget").glob("*.js"))]
    return [
        f"{path.relative_to(SRC)}: {lines} lines"
        for path in files
        if (lines := len(path.read_text("utf-8").splitlines())) > WIDGET_LINES
    ]


if __name__ == "__main__":
    long = too_long()
    print(
        "\n".join(long)
        or f"no function over {MOST_LINES} lines, no module over {MODULE_LINES}, "
        f"{LOOP} within {LOOP_LINES}"
    )
    sys.exit(1 if long else 0)
