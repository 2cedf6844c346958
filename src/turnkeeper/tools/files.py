"""The built-in `read_file` tool, confined to one root directory."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from ..wire import ToolSpec
from .functions import Tool, ToolRefused

MAX_BYTES = 256 * 1024

READ_FILE_SPEC = ToolSpec(
    name="read_file",
    description="Read a UTF-8 text file by its path relative to the working folder.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "relative path of the file"}},
        "required": ["path"],
    },
)


def read_file_tool(root: str | Path, *, max_bytes: int = MAX_BYTES) -> Tool:
    """`read_file(path)` that reads only regular text files inside `root`."""
    base = Path(root).resolve(strict=True)

    def read_file(args: dict[str, Any]) -> str:
        return read_confined(base, args.get("path"), max_bytes)

    return Tool(READ_FILE_SPEC, read_file)


def read_confined(base: Path, path: Any, max_bytes: int) -> str:
    """The text of `path` under `base`; `ToolRefused` naming only the requested path otherwise."""
    target = _inside(base, path)
    mode = target.stat().st_mode
    if stat.S_ISDIR(mode):
        raise ToolRefused(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise ToolRefused(f"{path}: is not a regular file")
    with target.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ToolRefused(f"{path}: larger than the {max_bytes} byte limit")
    if b"\x00" in data:
        raise ToolRefused(f"{path}: is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolRefused(f"{path}: is not UTF-8 text") from None


def _inside(base: Path, path: Any) -> Path:
    """`path` resolved under `base`, or `ToolRefused` if it is not a relative path inside it."""
    if not isinstance(path, str) or not path.strip():
        raise ToolRefused("path must be a non-empty relative path")
    if "\x00" in path:
        raise ToolRefused("path contains a NUL character")
    relative = Path(path)
    if relative.is_absolute():
        raise ToolRefused(
            f"{path}: absolute paths are not allowed; use a path relative to the root"
        )
    if ".." in relative.parts:
        raise ToolRefused(f"{path}: '..' is not allowed; the file must be inside the root")
    try:
        target = (base / relative).resolve(strict=True)
    except (OSError, RuntimeError):
        raise ToolRefused(f"{path}: no such file") from None
    if not target.is_relative_to(base):
        raise ToolRefused(f"{path}: resolves outside the root")
    return target
