"""`scripts/test`, the README's test command: `--help` answers at once, and Chromium is
installed only when it is missing, saying so. Run with stand-ins for `python3`, `id` and
`apt-get` first on PATH, so nothing is installed for real."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test"


def stand_ins(folder: Path) -> dict[str, str]:
    """`python3` that records its call and fails (the script stops there), `id -u` that
    says root, `apt-get` that records its calls."""
    calls = folder / "calls"
    for name, body in {
        "python3": f'echo "python3 $*" >> {calls}; exit 3',
        "id": "echo 0",
        "apt-get": f'echo "apt-get $*" >> {calls}',
    }.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_does_nothing_else(tmp_path: Path, flag: str) -> None:
    environ = stand_ins(tmp_path) | {"TURNKEEPER_CHROMIUM": str(tmp_path / "no-chromium")}
    done = subprocess.run(
        ["bash", str(SCRIPT), flag], capture_output=True, text=True, env=environ, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: scripts/test [PYTEST ARGUMENTS]")
    assert "pytest" in done.stdout
    assert "Chromium" in done.stdout
    assert not (tmp_path / "calls").exists(), "nothing installed, nothing run"


def test_chromium_is_installed_only_when_missing_and_it_says_so(tmp_path: Path) -> None:
    environ = stand_ins(tmp_path)
    present = tmp_path / "chromium"
    present.write_text("#!/bin/sh\n")
    present.chmod(0o755)
    missing = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        env=environ | {"TURNKEEPER_CHROMIUM": str(tmp_path / "no-chromium")},
        timeout=30,
    )
    said = (tmp_path / "calls").read_text().splitlines()
    (tmp_path / "calls").unlink()
    there = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        env=environ | {"TURNKEEPER_CHROMIUM": str(present)},
        timeout=30,
    )
    assert "Chromium is missing" in missing.stderr
    assert any(c.startswith("apt-get") and "install" in c and "chromium" in c for c in said)
    assert said[-1].startswith("python3"), "then the suite's own steps"
    assert "Chromium" not in there.stderr
    assert not any(c.startswith("apt-get") for c in (tmp_path / "calls").read_text().splitlines())
