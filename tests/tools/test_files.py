"""`read_file` reads text inside its root and refuses everything else without leaking."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import answer, asks, tool_use
from turnkeeper.outcomes import Outcome
from turnkeeper.tools.files import read_confined, read_file_tool
from turnkeeper.tools.functions import FunctionToolset, ToolRefused
from turnkeeper.wire import ToolResult, ToolUse

from .turns import scripted_turn, tool_results

SECRET = "the secret outside the root"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A root holding a few files, next to a secret outside it; returns the root."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "todo.txt").write_text("write tests", encoding="utf-8")
    (root / "notes" / "plan.md").write_text("# plan\nship it ✓\n", encoding="utf-8")
    return root


async def read(root: Path, path: Any, max_bytes: int = 1024) -> ToolResult:
    toolset = FunctionToolset([read_file_tool(root, max_bytes=max_bytes)])
    return await toolset.call(ToolUse("toolu_r", "read_file", {"path": path}), 10)


async def refused(root: Path, path: Any, because: str, max_bytes: int = 1024) -> str:
    """The refusal for `path`, checked to say `because` and to leak nothing from outside."""
    result = await read(root, path, max_bytes)
    assert result.is_error, result
    assert because in result.content
    assert SECRET not in result.content
    assert str(root.parent) not in result.content
    return result.content


async def test_reads_text_files_inside_the_root(tree: Path) -> None:
    assert await read(tree, "todo.txt") == ToolResult("toolu_r", "write tests")
    assert (await read(tree, "notes/plan.md")).content == "# plan\nship it ✓\n"
    assert (await read(tree, "./notes//plan.md")).content == "# plan\nship it ✓\n"


async def test_follows_symlinks_that_stay_inside_the_root(tree: Path) -> None:
    (tree / "latest").symlink_to("notes/plan.md")
    (tree / "docs").symlink_to("notes", target_is_directory=True)
    assert (await read(tree, "latest")).content == "# plan\nship it ✓\n"
    assert (await read(tree, "docs/plan.md")).content == "# plan\nship it ✓\n"


@pytest.mark.parametrize("path", ["/etc/passwd", "/", "~/.ssh/id_rsa"])
async def test_refuses_absolute_paths(tree: Path, path: str) -> None:
    await refused(tree, path, "absolute paths are not allowed")


@pytest.mark.parametrize("path", ["../../etc/passwd", "../outside/secret.txt", "notes/../todo.txt"])
async def test_refuses_dot_dot(tree: Path, path: str) -> None:
    message = await refused(tree, path, "'..' is not allowed")
    assert message.startswith(path)


async def test_refuses_a_file_symlink_that_escapes(tree: Path) -> None:
    (tree / "innocent.txt").symlink_to(tree.parent / "outside" / "secret.txt")
    await refused(tree, "innocent.txt", "resolves outside the root")


async def test_refuses_a_directory_symlink_that_escapes(tree: Path) -> None:
    (tree / "notes" / "shared").symlink_to(tree.parent / "outside", target_is_directory=True)
    await refused(tree, "notes/shared/secret.txt", "resolves outside the root")


async def test_an_escaping_symlink_to_nothing_does_not_reveal_what_exists(tree: Path) -> None:
    (tree / "a").symlink_to(tree.parent / "outside" / "secret.txt")
    (tree / "b").symlink_to(tree.parent / "outside" / "missing.txt")
    assert (await read(tree, "a")).content == (await read(tree, "b")).content.replace("b:", "a:")


async def test_refuses_a_symlink_to_dev_null(tree: Path) -> None:
    (tree / "null").symlink_to("/dev/null")
    await refused(tree, "null", "resolves outside the root")


async def test_refuses_a_fifo_without_blocking(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    await refused(tree, "pipe", "is not a regular file")


async def test_refuses_a_device_inside_the_root(tree: Path) -> None:
    try:
        os.mknod(tree / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs privileges this machine does not give")
    await refused(tree, "zero", "is not a regular file")


async def test_refuses_a_socket(tree: Path) -> None:
    import socket

    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tree / "sock"))
        await refused(tree, "sock", "is not a regular file")


@pytest.mark.parametrize("path", ["notes", ".", "notes/"])
async def test_refuses_directories(tree: Path, path: str) -> None:
    await refused(tree, path, "is a directory")


async def test_refuses_files_over_the_size_cap(tree: Path) -> None:
    (tree / "big.txt").write_text("x" * 1025, encoding="utf-8")
    (tree / "fits.txt").write_text("x" * 1024, encoding="utf-8")
    await refused(tree, "big.txt", "larger than the 1024 byte limit")
    assert (await read(tree, "fits.txt")).content == "x" * 1024


async def test_refuses_binary_content(tree: Path) -> None:
    (tree / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    await refused(tree, "image.png", "is a binary file")


async def test_refuses_text_that_is_not_utf8(tree: Path) -> None:
    (tree / "latin1.txt").write_bytes("año".encode("latin-1"))
    await refused(tree, "latin1.txt", "is not UTF-8 text")


async def test_refuses_missing_files_and_non_directories_on_the_way(tree: Path) -> None:
    await refused(tree, "nope.txt", "no such file")
    await refused(tree, "todo.txt/inner", "no such file")


@pytest.mark.parametrize("path", ["", "   ", None, 7, "a\x00b"])
async def test_refuses_paths_that_are_not_paths(tree: Path, path: Any) -> None:
    result = await read(tree, path)
    assert result.is_error
    assert "path" in result.content


async def test_refuses_a_symlink_loop(tree: Path) -> None:
    (tree / "loop").symlink_to("loop")
    await refused(tree, "loop", "cannot be resolved")


async def test_refuses_unreadable_files(tree: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    locked = tree / "locked.txt"
    locked.write_text("x", encoding="utf-8")
    locked.chmod(0)
    await refused(tree, "locked.txt", "permission denied")


@pytest.mark.parametrize("swapped", ["notes", "plan.md"])
def test_a_symlink_swapped_in_after_the_check_is_not_followed(tree: Path, swapped: str) -> None:
    """The open walks the checked path with O_NOFOLLOW: a directory or the file itself replaced
    by an escaping symlink between the check and the open is refused, not followed."""
    base = tree.resolve()
    victim = base / "notes" if swapped == "notes" else base / "notes" / "plan.md"
    escape = base.parent / "outside" if swapped == "notes" else base.parent / "outside" / "plan.md"
    (base.parent / "outside" / "plan.md").write_text(SECRET, encoding="utf-8")
    real_open = os.open

    def swap_then_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == swapped and not victim.is_symlink():
            victim.rename(victim.with_name("old"))
            victim.symlink_to(escape)
        return real_open(path, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "open", swap_then_open)
        with pytest.raises(ToolRefused) as refusal:
            read_confined(base, "notes/plan.md", 1024)
    assert victim.is_symlink(), "the swap happened"
    assert str(refusal.value) == "notes/plan.md: changed while it was being opened; try again"


async def test_a_refusal_in_a_turn_is_an_error_result_and_the_turn_goes_on(tree: Path) -> None:
    result, hooks = await scripted_turn(
        FunctionToolset([read_file_tool(tree)]),
        asks(
            tool_use("read_file", {"path": "../../etc/passwd"}, id="toolu_1"),
            tool_use("read_file", {"path": "todo.txt"}, id="toolu_2"),
        ),
        answer("your todos: write tests"),
    )
    assert result.outcome is Outcome.FINISHED
    escape, todo = tool_results(result)
    assert escape["is_error"] is True
    assert "'..' is not allowed" in escape["content"]
    assert todo == {"type": "tool_result", "tool_use_id": "toolu_2", "content": "write tests"}
    assert hooks.reports == []
