"""The documents a newcomer reads: one design document, and a docstring on every public name."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = (ROOT / "docs" / "design.md").read_text("utf-8")

PUBLIC_MODULES = [
    "turnkeeper",
    "turnkeeper.tools",
    "turnkeeper.tools.files",
    "turnkeeper.tools.functions",
    "turnkeeper.tools.mcp",
    "turnkeeper.providers",
    "turnkeeper.providers.scripted",
    "turnkeeper.store",
    "turnkeeper.api",
]
"""What a user imports from: the package and the subpackages behind one interface."""


def public_names(module: ModuleType) -> list[str]:
    """`__all__`, else the classes and functions the module defines itself."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    ]


def own_docstring(value: object) -> str | None:
    """The docstring written for `value`: not one inherited, nor the signature a dataclass
    makes up for a class without one (`Name(field: type, ...)`)."""
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__")
        if doc and re.match(rf"{re.escape(value.__name__)}\(", doc):
            return None
        return doc if isinstance(doc, str) else None
    return getattr(value, "__doc__", None)


PUBLIC = [
    pytest.param(module, name, id=f"{module}.{name}")
    for module in PUBLIC_MODULES
    for name in public_names(importlib.import_module(module))
    if callable(getattr(importlib.import_module(module), name))
]
"""Every public class and function (values such as `DEFAULT_URL` carry their type's doc)."""


@pytest.mark.parametrize(("module", "name"), PUBLIC)
def test_every_public_name_says_what_it_is_for(module: str, name: str) -> None:
    doc = own_docstring(getattr(importlib.import_module(module), name))
    assert (doc or "").strip(), f"{module}.{name} has no docstring of its own"


def test_the_check_rejects_what_a_dataclass_makes_up() -> None:
    from dataclasses import dataclass

    @dataclass
    class Bare:
        field: int

    @dataclass
    class Told:
        """What it is for."""

        field: int

    assert own_docstring(Bare) is None
    assert own_docstring(Told) == "What it is for."


def test_the_design_is_one_document() -> None:
    """The design is docs/design.md alone (what names another document is held by
    tests/test_repository.py)."""
    assert sorted(p.name for p in (ROOT / "docs").glob("*.md")) == ["capacity.md", "design.md"]


@pytest.mark.parametrize(
    "word", ["Turn", "Iteration", "Published state", "Checkpoint", "Lease", "Fence"]
)
def test_the_design_defines_its_words_before_it_uses_them(word: str) -> None:
    glossary = DESIGN.split("## Words used here", 1)[1].split("\n## ", 1)[0]
    assert DESIGN.index("## Words used here") < DESIGN.index("## 1. ")
    assert f"- **{word}**:" in glossary


def test_the_design_describes_what_is_not_a_change() -> None:
    assert not re.search(r"(?i)before this change|no longer|this note", DESIGN)


PACKAGE = ROOT / "src" / "turnkeeper"


def missing_files(text: str) -> list[str]:
    """The file paths `text` names in backticks (`turn/loop.py`, `providers/`) that are
    neither the package's (under src/turnkeeper/) nor the repository's: a module named
    bare (`loop.py`) or by a name it no longer has."""
    named = re.findall(r"`([\w./-]+\.py|[\w./-]+/)`", text)
    return sorted({p for p in named if not (PACKAGE / p).exists() and not (ROOT / p).exists()})


def test_the_path_check_refuses_a_bare_or_old_name() -> None:
    text = "`turn/loop.py`, `loop.py`, `instruments.py`, `store/`, `api/mounted.py`, `tests/`"
    assert missing_files(text) == ["api/mounted.py", "instruments.py", "loop.py"]


def test_every_file_the_design_names_is_there() -> None:
    assert missing_files(DESIGN) == []


def test_the_design_maps_every_room() -> None:
    """Its map of the rooms names each subpackage and each top-level module."""
    rooms = DESIGN.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    subpackages = [f"`{p.parent.name}/`" for p in PACKAGE.glob("*/__init__.py")]
    modules = [f"`{p.name}`" for p in PACKAGE.glob("*.py")]
    assert [name for name in subpackages + modules if name not in rooms] == []
