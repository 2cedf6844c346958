"""The package's modules import each other without a cycle, at the top or inside a function."""

from __future__ import annotations

import ast
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
    assert edges.get("turnkeeper.loop"), "the graph was read"
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


ABOVE_THE_STORE = (
    "turnkeeper.hooks",
    "turnkeeper.trace",
    "turnkeeper.calls",
    "turnkeeper.loop",
    "turnkeeper.job",
    "turnkeeper.providers",
    "turnkeeper.instruments",
    "turnkeeper.telemetry",
)


def test_the_store_imports_nothing_of_the_loops_side() -> None:
    """The store sits below the loop: no module under `store/` reaches the hooks, the
    trace, the call room, the loop, the job, a provider or the instruments, directly or
    through another module. (Python runs a package's `__init__` before any of its modules;
    the package's gathering of its public names is not counted, as in the cycle test
    above.)"""
    edges = graph()
    for name in edges:
        edges[name] = {m for m in edges[name] if not name.startswith(m + ".")}
    stores = sorted(n for n in edges if n.split(".")[:2] == ["turnkeeper", "store"])
    assert "turnkeeper.store.sqlite" in stores
    assert "turnkeeper.store.postgres" in stores
    for store in stores:
        above = sorted(
            m
            for m in reached_from(edges, store)
            if any(m == a or m.startswith(a + ".") for a in ABOVE_THE_STORE)
        )
        assert not above, f"{store} reaches {', '.join(above)}"


def test_the_records_import_only_the_state_usage_and_wire_types() -> None:
    edges = graph()
    assert edges["turnkeeper.records"] <= {
        "turnkeeper.state",
        "turnkeeper.usage",
        "turnkeeper.wire",
    }
