"""An assistant loaded by its import string, as `turnkeeper serve APP`, `worker APP`,
`usage` and `trace show` read one (`module:attribute`, as uvicorn reads an app).

A bad `APP` (no colon, no such module, no such attribute, not an `Assistant`, a module
that raises while it is imported) is one `ConfigError` line saying what is wrong.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path
from typing import Any

from ..assistant import Assistant
from ..errors import ConfigError


def load(app: str, app_dir: str | Path | None = None) -> Assistant:
    """The `Assistant` at `app` (`module:attribute`, the attribute dotted if nested),
    imported as uvicorn imports an app: from the current folder, or `app_dir`.
    `ConfigError` with one line saying what is wrong."""
    module_name, colon, attribute = app.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"APP {app!r} must be written module:attribute, like myapp:assistant")
    folder = str(Path(app_dir).resolve()) if app_dir is not None else ""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = _imported(module_name)
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ConfigError(f"module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, Assistant):
        raise ConfigError(f"{app} is a {type(value).__name__}, not a turnkeeper.Assistant")
    return value


def _imported(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (module_name + ".").startswith(e.name + "."):
            raise ConfigError(
                f"no module named {module_name!r} (from {Path.cwd()}; --app-dir names another "
                "folder)"
            ) from None
        raise ConfigError(f"importing {module_name!r} failed: {_where(e)}") from None
    except ConfigError as e:
        raise ConfigError(f"{module_name}: {e}") from None
    except Exception as e:
        raise ConfigError(f"importing {module_name!r} failed: {_where(e)}") from None


def _where(e: BaseException) -> str:
    """An exception and the line that raised it, in one line."""
    frames = traceback.extract_tb(e.__traceback__)
    at = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {e}{at}"
