"""How `serve` and `worker` run (`Settings`): the database, the address, the queue, the
lease, logs, grace, the app, and who may call or frame the API; what the command line
(cli/serving.py) and a mounted assistant (mounted.py) build, and `server.py` runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..service.job import DEFAULT_LEASE
from ..store import DEFAULT_URL
from ..tools.files import DEMO_ROOT

DEFAULT_GRACE = 10.0
MAX_STREAMS = 2000
"""`--max-streams`' default: streams one process serves at once (api/admission.py)."""
MAX_STREAMS_PER_USER = 20
"""`--max-streams-per-user`'s default: streams one user (or token) has open at once."""
KEEP_ALIVE = 120
"""`--keep-alive`'s default (uvicorn's: 5 s), past most proxies' idle timeouts (design §9)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """How `serve` and `worker` run: database, address, queue, lease, logs, grace, the app."""

    database: str = DEFAULT_URL
    host: str = "127.0.0.1"
    port: int = 8000
    worker: bool = True
    """Run turns in this process (the embedded queue); False only defers them."""
    concurrency: int = 4
    lease: float = DEFAULT_LEASE
    metrics_port: int | None = None
    """`/metrics` on this port, all interfaces (`--metrics-port`)."""
    public_metrics: bool = False
    """`serve` answers `/metrics` on its public port too (`--public-metrics`)."""
    log_format: str = "text"
    """`text` or `json` (`--log-format`): how the banner is written, like the log."""
    grace: float = DEFAULT_GRACE
    """Seconds running turns get to finish on SIGINT or SIGTERM before they are finalised."""
    app: str | None = None
    """The assistant's import string (`module:attribute`), or None for the demo assistant."""
    root: Path = DEMO_ROOT
    """Where the demo assistant's `read_file` reads (for the banner)."""
    mcp: Sequence[str] = ()
    """The MCP servers' commands and URLs (for the banner)."""
    cors_origins: tuple[str, ...] = ()
    """Origins whose pages may call the API (`serve --cors-origin`); none by default."""
    cors_credentials: bool = False
    """Those pages send cookies and HTTP authentication (`--cors-credentials`)."""
    cors_headers: tuple[str, ...] = ()
    """Request headers of the application's own those pages may send (`--cors-header`)."""
    frame_ancestors: tuple[str, ...] = ()
    """Origins whose pages may frame the chat (`serve --frame-ancestors`), besides its own."""
    keep_alive: int = KEEP_ALIVE
    """Seconds `serve` keeps an idle connection open (`--keep-alive`): past a proxy's own."""
    max_streams: int = MAX_STREAMS
    """Streams open at once in this process (`--max-streams`); one more is `503`."""
    max_streams_per_user: int = MAX_STREAMS_PER_USER
    """Streams one user (or token) has open at once (`--max-streams-per-user`); one more
    is `429`."""

    @property
    def sweep_interval(self) -> float:
        """Seconds between sweeps: a third of the lease, at most 5."""
        return min(5.0, self.lease / 3)
