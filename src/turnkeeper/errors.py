"""The exceptions turnkeeper raises, as one shallow tree.

    TurnkeeperError
    ├── ConfigError            the developer asked for something unusable
    │   │                      (bad budget, malformed script, unknown provider)
    │   └── MissingExtra       an optional dependency is not installed
    └── TurnError              something happened while a turn ran
        └── ProviderError      a model call produced no usable response
            ├── ProviderUnavailable   429, 529, 5xx, timeout, connection lost:
            │                         errors.ai_unavailable
            └── ProviderFailed        other 4xx, unreadable body, anything else:
                ├── ScriptExhausted   errors.ai_failed
                └── ContextTooLong    the request is longer than the model's window:
                                      errors.ai_context_full (outcome context_exceeded)

A `ProviderError` never escapes `run_turn`: the loop turns it into the outcome
`failed` with the matching message key, and reports it once.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable

from .credentials import redact_text


class TurnkeeperError(Exception):
    """Root of every exception raised by turnkeeper."""


class ConfigError(TurnkeeperError):
    """Misuse by the developer: the configuration or input cannot work."""


class MissingExtra(ConfigError):
    """An optional dependency is not installed; the message says how to install it."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(
            f"{what} needs the {extra} extra: pip install -e '.[{extra}]' in turnkeeper's checkout"
        )
        self.extra = extra


def require_extra(what: str, extra: str, modules: Iterable[str]) -> None:
    """`MissingExtra` saying `what` needs `extra` unless every one of `modules` (the extra's
    top-level modules) can be imported: checked before the first import, whose error would
    name a module (or another feature) rather than the extra to install."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            raise MissingExtra(what, extra)


class TurnError(TurnkeeperError):
    """Something that happened while a turn ran."""


class ProviderError(TurnError):
    """A model call produced no usable response."""

    key = "errors.ai_failed"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        # The message may quote a URL (an error page, a connection error): hide its credentials.
        super().__init__(redact_text(message))
        self.status = status
        self.request_id = request_id
        self.wait: float | None = None
        """Seconds the provider asked to wait (`retry-after`) before trying again, when that
        would pass the time the call has: the turn ends `time_limit`, not `failed`."""

    @property
    def outcome(self) -> str:
        """How the turn ends on it: `time_limit` if waiting as asked would pass the turn's
        time, else `failed`."""
        return "failed" if self.wait is None else "time_limit"

    @property
    def notice(self) -> str | None:
        """The notice the reader sees: the error's `key`, or the time limit's own."""
        return self.key if self.wait is None else None

    def describe(self) -> dict[str, object]:
        """The error as JSON for traces and reports."""
        described: dict[str, object] = {
            "kind": type(self).__name__,
            "message": str(self),
            "status": self.status,
            "request_id": self.request_id,
        }
        if self.wait is not None:
            described["wait"] = self.wait
        return described


class ProviderUnavailable(ProviderError):
    """The provider could not answer now: rate limit, overload, 5xx, timeout."""

    key = "errors.ai_unavailable"


class ProviderFailed(ProviderError):
    """The provider rejected the request or sent something unreadable."""

    key = "errors.ai_failed"


class ScriptExhausted(ProviderFailed):
    """The scripted model was asked for more responses than it holds."""


class ContextTooLong(ProviderFailed):
    """The provider refused the request for its size: Anthropic's 400 "prompt is too long",
    an OpenAI-compatible `context_length_exceeded`. The turn compacts and sends the call once
    more; refused again, it ends `context_exceeded`."""

    key = "errors.ai_context_full"

    @property
    def outcome(self) -> str:
        """`context_exceeded`: compacting did not help, or is off."""
        return "context_exceeded" if self.wait is None else "time_limit"

    @property
    def window(self) -> int | None:
        """The model's window as the refusal states it ("> 200000 maximum", "maximum context
        length is 128000 tokens"), else None."""
        found = _WINDOW.search(str(self))
        return int(found.group(1) or found.group(2)) if found else None


_WINDOW = re.compile(r"> ?(\d+) maximum|maximum context length is (\d+)")


def timed_out(timeout: float) -> str:
    """The one message of a model call that ran out of time, however it did."""
    return f"no complete response within the call's {timeout:.1f} s"


ERROR_KINDS: dict[str, type[ProviderError]] = {
    cls.__name__: cls
    for cls in (ProviderUnavailable, ProviderFailed, ScriptExhausted, ContextTooLong)
}


def provider_error_from(described: dict[str, object]) -> ProviderError:
    """Rebuild an error recorded with `ProviderError.describe()` (for replay)."""
    cls = ERROR_KINDS.get(str(described.get("kind")), ProviderFailed)
    status = described.get("status")
    request_id = described.get("request_id")
    error = cls(
        str(described.get("message", "")),
        status=status if isinstance(status, int) else None,
        request_id=request_id if isinstance(request_id, str) else None,
    )
    wait = described.get("wait")
    error.wait = float(wait) if isinstance(wait, int | float) else None
    return error
