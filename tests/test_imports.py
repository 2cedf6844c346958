"""The package's modules import each other without a cycle, at the top or inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "turnkeeper"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports anywhere in it (lazy imports included; imports
    only for type checkers are not imports)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in checking_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imported(path, modules) for name, path in paths.items()}


def cycle_in(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `edges`, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_one_that_imports_it_back() -> None:
    edges = graph()
    assert edges.get("turnkeeper.turn.loop"), "the graph was read"
    # A package's `__init__` gathering its modules is not a cycle of the modules themselves.
    for name in edges:
        edges[name] = {m for m in edges[name] if not name.startswith(m + ".")}
    assert cycle_in(edges) is None


def reached_from(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through another module."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


FLOORS = (
    (
        "the ground floor",
        {"errors", "credentials", "usage", "outcomes", "cards", "wire", "state", "budget", "i18n"},
    ),
    ("the store", {"store"}),
    ("the providers", {"providers"}),
    ("the tools", {"tools"}),
    ("observing", {"observe"}),
    ("the turn", {"turn"}),
    ("the service", {"service"}),
    ("the assistant", {"assistant"}),
    ("the API", {"api"}),
    ("serving", {"serving"}),
    ("the command line", {"cli", "__main__"}),
)
"""The package's floors, lowest first: a module imports its own floor and those below."""

DOORS_UP = {("turnkeeper.assistant", "turnkeeper.serving.mounted")}
"""The imports that go up a floor, each on purpose: `Assistant.asgi()` (a public method
since the first mounted app) builds the mounted app, imported only when it is called, so
importing the assistant never loads the HTTP layer."""


def floor(module: str) -> int:
    """The index in FLOORS of the floor `module` lives on (-1: the package front)."""
    parts = module.split(".")
    if len(parts) == 1:
        return -1
    for index, (_, rooms) in enumerate(FLOORS):
        if parts[1] in rooms:
            return index
    raise AssertionError(f"{module} is on no floor: add its room to FLOORS")


def test_no_module_imports_a_floor_above_its_own() -> None:
    edges = graph()
    up = sorted(
        (name, target)
        for name, targets in edges.items()
        for target in targets
        if not name.startswith(target + ".") and floor(target) > floor(name)
    )
    assert set(up) == DOORS_UP, up


def test_the_floor_check_sees_an_import_up() -> None:
    assert floor("turnkeeper.store.sqlite") < floor("turnkeeper.turn.loop")
    assert floor("turnkeeper.turn.loop") < floor("turnkeeper.serving.server")
    assert floor("turnkeeper") == -1


def test_the_top_level_holds_a_dozen_modules_at_most() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_every_subpackage_says_what_it_owns_and_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "import" in doc.lower(), (
            f"{init.parent.name}/__init__.py does not say what it may import"
        )


def test_importing_the_store_loads_no_provider_and_not_the_loop() -> None:
    code = (
        "import sys, turnkeeper.store; "
        "print(' '.join(m for m in sys.modules if m.startswith('turnkeeper')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "turnkeeper.store" in loaded
    above = [m for m in loaded if floor(m) > floor("turnkeeper.store.base")]
    assert not [m for m in loaded if m.startswith(("turnkeeper.providers", "turnkeeper.turn"))]
    assert not above, above


def test_the_records_import_only_the_state_usage_and_wire_types() -> None:
    edges = graph()
    assert edges["turnkeeper.store.records"] <= {
        "turnkeeper.state",
        "turnkeeper.usage",
        "turnkeeper.wire",
    }
