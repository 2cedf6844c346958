"""A tool's description and its parameters' descriptions, read from a docstring.

Two common styles are understood:

    Google:  Args:                      Sphinx:  :param city: the city
                 city: the city                  :param days: how many days
                 days (int): how many
                     days, continued

The description is the docstring up to its first section ("Args:",
"Returns:", ":param …", …), paragraphs kept.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

ARGS_HEADERS = {"args:", "arguments:", "parameters:", "params:"}
SECTION = re.compile(r"^(\w[\w ]*):$")
GOOGLE_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a tool function's docstring says: its description, and each parameter's (Google or
    Sphinx style)."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse(doc: str | None) -> Docstring:
    """The description and per-parameter descriptions of `doc`."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    in_sections = False
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.lower() in ARGS_HEADERS:
            in_sections, i = True, _google_args(lines, i + 1, params)
        elif stripped.startswith(":"):
            in_sections, i = True, _sphinx_field(lines, i, params)
        elif SECTION.match(stripped) and _indented(lines, i + 1):
            in_sections, i = True, _skip_section(lines, i + 1)
        else:
            if not in_sections:
                description.append(lines[i])
            i += 1
    return Docstring("\n".join(description).strip(), params)


def _indented(lines: list[str], i: int) -> bool:
    return i < len(lines) and lines[i].startswith((" ", "\t"))


def _skip_section(lines: list[str], i: int) -> int:
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
        i += 1
    return i


def _google_args(lines: list[str], i: int, params: dict[str, str]) -> int:
    """Read an indented `name: description` block; continuation lines are indented deeper."""
    current: str | None = None
    indent: int | None = None
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
        line = lines[i]
        depth = len(line) - len(line.lstrip())
        match = GOOGLE_PARAM.match(line.strip())
        if line.strip() and (indent is None or depth <= indent) and match:
            indent = depth
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif line.strip() and current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
        i += 1
    return i


def _sphinx_field(lines: list[str], i: int, params: dict[str, str]) -> int:
    """Read one `:param name: description` field (other fields are skipped) and its continuation."""
    match = SPHINX_PARAM.match(lines[i].strip())
    text = match.group(2).strip() if match else ""
    i += 1
    while i < len(lines) and lines[i].startswith((" ", "\t")) and lines[i].strip():
        text = f"{text} {lines[i].strip()}".strip()
        i += 1
    if match:
        params[match.group(1)] = text
    return i
