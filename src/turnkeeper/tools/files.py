"""The built-in `read_file` tool, confined to one root directory.

`read_file({"path": "notes/todo.txt"})` reads a UTF-8 text file under the
root. Everything else is refused with a message that names only the path the
model asked for, never anything found outside the root: absolute paths, `..`,
symlinks (of files or of directories) that resolve outside the root,
directories, devices, FIFOs and sockets, files over the size cap, binary and
non-UTF-8 content. Symlinks that stay inside the root are followed.

Checking a path and then opening it leaves a gap in which a directory could
be swapped for a symlink. So the check resolves the path, and the open walks
the resolved path again from the root one component at a time with
`O_NOFOLLOW`: a symlink that appeared in between fails the open instead of
being followed. The last component is examined with `lstat` before it is
opened (opening a device can have side effects), opened with `O_NONBLOCK` (a
FIFO that appeared in between cannot block the read) and checked again with
`fstat` on the open descriptor. A hard link to a file outside the root cannot
be told from a file inside it; keep the root free of those.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath
from typing import Any

from ..wire import ToolSpec
from .functions import Tool, ToolRefused

MAX_BYTES = 256 * 1024

READ_FILE_SPEC = ToolSpec(
    name="read_file",
    description="Read a UTF-8 text file by its path relative to the working folder.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "relative path of the file",
                "examples": ["todo.txt"],  # what the dev model reads
            }
        },
        "required": ["path"],
    },
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)


DEMO_ROOT = Path(__file__).resolve().parents[1] / "demo_files"
"""The demo folder turnkeeper ships (`todo.txt`); the demo never reads the user's directory."""


def read_file_tool(root: str | Path, *, max_bytes: int = MAX_BYTES) -> Tool:
    """`read_file(path)` that reads only regular text files inside `root`."""
    base = Path(root).resolve(strict=True)

    def read_file(args: dict[str, Any]) -> str:
        return read_confined(base, args.get("path"), max_bytes)

    return Tool(READ_FILE_SPEC, read_file)


def read_confined(base: Path, path: Any, max_bytes: int) -> str:
    """The text of `path` under `base`; `ToolRefused` naming only the requested path otherwise."""
    parts = _inside(base, path)
    if not parts:
        raise ToolRefused(f"{path}: is a directory, not a file")
    fd = _open_beneath(base, parts, path)
    try:
        return _text(fd, path, max_bytes)
    finally:
        os.close(fd)


def _inside(base: Path, path: Any) -> tuple[str, ...]:
    """The components of `path` resolved under `base`; `ToolRefused` unless it stays inside."""
    if not isinstance(path, str) or not path.strip():
        raise ToolRefused("path must be a non-empty relative path")
    if "\x00" in path:
        raise ToolRefused("path contains a NUL character")
    relative = PurePath(path)
    if relative.is_absolute() or path.startswith("~"):
        raise ToolRefused(
            f"{path}: absolute paths are not allowed; use a path relative to the root"
        )
    if ".." in relative.parts:
        raise ToolRefused(f"{path}: '..' is not allowed; the file must be inside the root")
    try:
        # Not strict: whether a file outside the root exists is none of the caller's business.
        target = (base / relative).resolve()
    except (OSError, RuntimeError):
        raise ToolRefused(f"{path}: cannot be resolved (a symlink loop?)") from None
    if not target.is_relative_to(base):
        raise ToolRefused(f"{path}: resolves outside the root")
    return target.relative_to(base).parts


def _open_beneath(base: Path, parts: tuple[str, ...], path: str) -> int:
    """Open the resolved `parts` walking down from `base` without following any symlink."""
    fd = os.open(base, os.O_RDONLY | _DIRECTORY)
    try:
        for part in parts[:-1]:
            child = _opened(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, fd, path)
            os.close(fd)
            fd = child
        before = _lstat(parts[-1], fd, path)
        _check_kind(before.st_mode, path)
        opened = _opened(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _NOCTTY, fd, path)
    finally:
        os.close(fd)
    after = os.fstat(opened)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(opened)
        raise ToolRefused(f"{path}: changed while it was being opened; try again")
    return opened


def _opened(name: str, flags: int, dir_fd: int, path: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        if _is_symlink(name, dir_fd):
            # The checked path had no symlink left in it: one was swapped in since.
            raise ToolRefused(f"{path}: changed while it was being opened; try again") from None
        raise ToolRefused(_open_error(e, path)) from None


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _lstat(name: str, dir_fd: int, path: str) -> os.stat_result:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as e:
        raise ToolRefused(_open_error(e, path)) from None


def _open_error(e: OSError, path: str) -> str:
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"{path}: no such file"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"{path}: permission denied"
    return f"{path}: cannot be opened ({errno.errorcode.get(e.errno or 0, 'error')})"


def _check_kind(mode: int, path: str) -> None:
    if stat.S_ISDIR(mode):
        raise ToolRefused(f"{path}: is a directory, not a file")
    if stat.S_ISLNK(mode):
        raise ToolRefused(f"{path}: changed while it was being opened; try again")
    if not stat.S_ISREG(mode):
        raise ToolRefused(f"{path}: is not a regular file (a device, FIFO or socket)")


def _text(fd: int, path: str, max_bytes: int) -> str:
    """The open file's content as text, or `ToolRefused` saying why not."""
    if os.fstat(fd).st_size > max_bytes:
        raise ToolRefused(f"{path}: larger than the {max_bytes} byte limit")
    try:
        data = _read_up_to(fd, max_bytes + 1)
    except OSError as e:
        raise ToolRefused(f"{path}: could not be read ({e.strerror})") from None
    if len(data) > max_bytes:
        raise ToolRefused(f"{path}: larger than the {max_bytes} byte limit")
    if b"\x00" in data:
        raise ToolRefused(f"{path}: is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolRefused(f"{path}: is not UTF-8 text") from None


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
