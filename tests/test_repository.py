"""The repository stands alone and its documents are true: what a newcomer reads exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from turnkeeper import Outcome, i18n

ROOT = Path(__file__).resolve().parents[1]
DESIGN = (ROOT / "docs" / "design.md").read_text("utf-8")
RECORDINGS = ROOT / "tests" / "recordings"
NOT_OURS = ("__pycache__", "node_modules", "dist")
"""Folders of files made or installed, not written here (npm's packages, a vite build)."""
OWN_FILES = [
    p
    for folder in ("src", "tests", "docs", "examples", "bench", "scripts", ".ci")
    for p in (ROOT / folder).rglob("*")
    if p.is_file()
    and not any(part in NOT_OURS or part.endswith(".egg-info") for part in p.parts)
    and p.suffix not in (".pyc", ".db")
] + [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "pyproject.toml"]


def test_nothing_reads_from_beside_the_checkout() -> None:
    outside = re.compile(r"\.\./shared|parents\[\d\] / \"\.\.\"")
    offenders = [
        str(p.relative_to(ROOT))
        for p in OWN_FILES
        if p.suffix in (".py", ".md", ".toml", ".sh", "") and outside.search(p.read_text("utf-8"))
    ]
    assert offenders == []


def test_every_document_a_file_names_is_in_the_repository() -> None:
    """A Markdown document named in the code, the docs or the examples is one a clone has:
    the design is cited as docs/design.md, never as a document kept beside the checkout
    or one since folded into it. (The tests name files they make, so they are not read.)"""
    have = {p.name for p in OWN_FILES if p.suffix == ".md"}
    named = re.compile(r"\b([A-Za-z][\w-]*\.md)\b")
    missing = sorted(
        f"{p.relative_to(ROOT)}: {name}"
        for p in OWN_FILES
        if p.suffix in (".py", ".md", ".js", ".toml") and ROOT / "tests" not in p.parents
        for name in set(named.findall(p.read_text("utf-8")))
        if name not in have
    )
    assert missing == []


def test_the_recordings_are_whole_small_and_attributed() -> None:
    index = json.loads((RECORDINGS / "index.json").read_text("utf-8"))
    readme = (RECORDINGS / "README.md").read_text("utf-8")
    size = sum(p.stat().st_size for p in RECORDINGS.rglob("*") if p.is_file())
    assert size < 2_000_000
    for row in index["interactions"]:
        assert (RECORDINGS / row["file"]).is_file(), row["file"]
        assert row["suspect_synthetic"] is False
    for group, source in index["sources"].items():
        assert f"`{group}/`" in readme
        assert source["repo"] in readme
    assert readme.count("Apache-2.0") >= len(index["sources"])


@pytest.mark.parametrize("outcome", list(Outcome))
def test_the_design_names_every_outcome(outcome: Outcome) -> None:
    assert f"`{outcome.value}`" in DESIGN


@pytest.mark.parametrize(
    "key", [k for k in i18n.catalog("en") if k.startswith(("errors.", "notices."))]
)
def test_the_design_names_every_message_key(key: str) -> None:
    assert f"`{key}`" in DESIGN


@pytest.mark.parametrize(
    "route",
    [
        "POST /api/conversations`",
        "POST /api/conversations/{id}/turns`",
        "GET /api/turns/{turn_id}[?after=N]`",
        "POST /api/turns/{turn_id}/cancel`",
        "POST /api/turns/{turn_id}/approvals`",
        "GET /api/conversations/{id}`",
    ],
)
def test_the_design_names_every_api_route(route: str) -> None:
    assert f"`{route}" in DESIGN


def test_every_link_in_the_readme_and_the_design_exists() -> None:
    for document in (ROOT / "README.md", ROOT / "docs" / "design.md"):
        text = document.read_text("utf-8")
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if not target.startswith("http"):
                assert (document.parent / target).exists(), f"{document.name}: {target}"


def test_the_license_is_the_apache_text_pyproject_names() -> None:
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text("utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in (
        ROOT / "LICENSE"
    ).read_text("utf-8")
