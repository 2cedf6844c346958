"""Token accounting, summed over a turn's model calls.

One meaning whatever the provider (Anthropic's): `input_tokens` are billed at
the input price; the prompt cache's writes (`cache_creation_input_tokens`) and
reads (`cache_read_input_tokens`) come on top of them. An OpenAI-compatible
server's `prompt_tokens` include its cached tokens: its adapter counts them out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from .errors import ConfigError

# Written out rather than through dataclasses.asdict/fields: usage is summed and
# serialised on every iteration, and the generic helpers cost more than the loop.


@dataclass(slots=True)
class Usage:
    """What a turn (or one model call) cost. `iterations` counts model calls that returned."""

    iterations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    web_search_requests: int = 0
    web_fetch_requests: int = 0
    cost_usd: float | None = None
    """What the calls cost in US dollars, when every priced call's model has a known price."""

    @property
    def prompt_tokens(self) -> int:
        """Every input token the calls sent: plain, written to the cache, read from it."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def add(self, other: Usage) -> None:
        """Add another call's (or turn's) usage to this one; the cost stays known only while
        every priced call's is."""
        self.cost_usd = _summed_cost(self, other)
        self.iterations += other.iterations
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.web_search_requests += other.web_search_requests
        self.web_fetch_requests += other.web_fetch_requests

    def copy(self) -> Usage:
        """An independent copy, to hand to the hooks or keep while this one goes on adding."""
        return Usage(
            self.iterations,
            self.input_tokens,
            self.output_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            self.web_search_requests,
            self.web_fetch_requests,
            self.cost_usd,
        )

    def as_dict(self) -> dict[str, Any]:
        """The counts, and `cost_usd` only when it is known."""
        data: dict[str, Any] = {
            "iterations": self.iterations,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "web_search_requests": self.web_search_requests,
            "web_fetch_requests": self.web_fetch_requests,
        }
        if self.cost_usd is not None:
            data["cost_usd"] = self.cost_usd
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """Read back what `as_dict()` wrote (a stored or published `usage`); unknown keys are
        ignored."""
        names = {f.name for f in fields(cls)} - {"cost_usd"}
        usage = cls(**{k: int(v) for k, v in data.items() if k in names})
        cost = data.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            usage.cost_usd = float(cost)
        return usage


def _summed_cost(total: Usage, more: Usage) -> float | None:
    """The cost of both: unknown as soon as a call that ran has no known price."""
    if total.iterations == 0 and total.cost_usd is None:
        return more.cost_usd
    if more.iterations == 0 and more.cost_usd is None:
        return total.cost_usd
    if total.cost_usd is None or more.cost_usd is None:
        return None
    return round(total.cost_usd + more.cost_usd, 10)


def count(value: Any) -> int:
    """A token count from a provider's usage object; anything but a whole number is zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---- limits per user, and the ledger they are kept in -----------------------------
#
# `Limits` is what an assistant sets (`Assistant(limits=...)`, or a function of the user,
# for tiers). The store keeps one **ledger** (docs/design.md §13): per subject (the
# signed-in user, or without sign-in the whole assistant, `subject()`) and UTC day, the
# tokens and dollars billed. A turn's writes carry what its calls billed since its last
# write (a `Charge`) and read the day's totals back in the same transaction; the `Meter`
# a turn's hooks hold keeps them, so the check before every model call
# (`Meter.reached()`) costs no round trip. The API's door reads the same ledger and
# counts the subject's turns of the last minute (`Ledger`, `refused()`).

MINUTE = 60.0
"""The window of `turns_per_minute`, in seconds."""

TURNS_PER_MINUTE = "limits.turns_per_minute"
TOKENS_PER_DAY = "limits.tokens_per_day"
COST_PER_DAY = "limits.cost_per_day"
"""The message keys of the three limits: the door's `429` and the report say which."""

WHOLE_ASSISTANT = ""
"""The ledger's subject without sign-in: every reader shares the assistant's limits."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one user (or, without sign-in, the whole assistant) may ask: None is no
    limit. Tokens count as billed (input, output, cache writes and reads); cost uses the
    price table; days are UTC days."""

    turns_per_minute: int | None = None
    tokens_per_day: int | None = None
    cost_per_day: float | None = None
    """US dollars a day, priced as `usage.cost_usd` is."""

    def __post_init__(self) -> None:
        for name in ("turns_per_minute", "tokens_per_day"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ConfigError(f"Limits({name}=) must be a whole number of 1 or more or None, "
                                  f"got {value!r}")  # fmt: skip
        cost = self.cost_per_day
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, int | float)
            or not math.isfinite(cost)
            or cost <= 0
        ):
            raise ConfigError(f"Limits(cost_per_day=) must be a positive number of dollars or "
                              f"None, got {cost!r}")  # fmt: skip

    @property
    def daily(self) -> bool:
        """Whether a day's tokens or cost are capped (the door reads the day's ledger)."""
        return self.tokens_per_day is not None or self.cost_per_day is not None


LimitsFor = Callable[[str | None], "Limits | None"]
"""`limits(user)`: a user's limits (tiers), or None for none."""

LimitsSetting = Limits | LimitsFor | None
"""What `Assistant(limits=...)` takes: one `Limits` for everyone, or a function of the user."""


def limits_for(setting: LimitsSetting, user: str | None) -> Limits | None:
    """The limits of `user` (None without sign-in); a function that returns anything but
    `Limits` or None is a bug in the application: `TypeError`."""
    if setting is None or isinstance(setting, Limits):
        return setting
    found = setting(user)
    if found is not None and not isinstance(found, Limits):
        raise TypeError(f"limits({user!r}) returned {found!r}: it must return Limits or None")
    return found


def check_setting(setting: object) -> None:
    """`ConfigError` unless `setting` is Limits, a function of the user, or None."""
    if setting is not None and not isinstance(setting, Limits) and not callable(setting):
        raise ConfigError(
            f"limits must be a turnkeeper.Limits or a function of the user, got {setting!r}"
        )


def subject(user: str | None) -> str:
    """Whose ledger a turn counts in: its user's, or without sign-in the whole assistant's."""
    return WHOLE_ASSISTANT if user is None else user


def billed(usage: Usage) -> int:
    """Tokens as billed: input, output, cache writes and cache reads (`prompt_tokens` and
    `output_tokens`, summed in one expression: every metered write asks)."""
    return (
        usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
        + usage.output_tokens
    )


def today(now: datetime | None = None) -> str:
    """The UTC day, as the ledger keys it (`2026-12-02`): `now`'s, or the clock's, worked
    out once per day (every write of a metered turn asks)."""
    if now is not None:
        return now.astimezone(UTC).date().isoformat()
    clock = time.time()
    day = _DAY.day
    if not day.starts <= clock < day.ends:
        _DAY.day = day = _DayOf.at(clock)
    return day.name


@dataclass(frozen=True, slots=True)
class _DayOf:
    """One UTC day: its name, and the times it starts and ends (seconds since the epoch)."""

    name: str
    starts: float
    ends: float

    @classmethod
    def at(cls, clock: float) -> _DayOf:
        date = datetime.fromtimestamp(clock, UTC).date()
        starts = datetime.combine(date, datetime.min.time(), UTC)
        return cls(date.isoformat(), starts.timestamp(), (starts + timedelta(days=1)).timestamp())


class _Today:
    """The day the clock was last in, kept by `today()`: one value, replaced whole, so a
    thread reading it while another turns it at midnight reads one day or the other."""

    __slots__ = ("day",)

    def __init__(self) -> None:
        self.day = _DayOf("", 0.0, 0.0)


_DAY = _Today()


def until_midnight(now: datetime | None = None) -> int:
    """Whole seconds until the next UTC midnight, at least 1: when a day's limits reset."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    return max(1, math.ceil((midnight - now).total_seconds()))


class Day(NamedTuple):
    """A subject's ledger for one UTC day: the tokens and dollars billed. (A named tuple:
    the database thread makes one for every charge that adds.)"""

    tokens: int = 0
    cost_usd: float = 0.0


def spent(limits: Limits, day: Day) -> str | None:
    """The key of the day's limit that is used up (`limits.tokens_per_day` or
    `limits.cost_per_day`), or None while both have some left."""
    if limits.tokens_per_day is not None and day.tokens >= limits.tokens_per_day:
        return TOKENS_PER_DAY
    if limits.cost_per_day is not None and day.cost_usd >= limits.cost_per_day - 1e-9:
        return COST_PER_DAY
    return None


@dataclass(slots=True)
class Charge:
    """What one write of a turn adds to its subject's ledger for `day`; the store sets
    `total`, the day's totals as that write left them, read back in its transaction. A
    charge that adds nothing only reads them: no row is made or locked for it."""

    subject: str
    day: str
    tokens: int
    cost_usd: float
    total: Day | None = None

    @property
    def adds(self) -> bool:
        """Whether the write adds to the day (else it only reads the day's totals)."""
        return self.tokens != 0 or self.cost_usd != 0.0


@dataclass(frozen=True, slots=True)
class Ledger:
    """What the door reads before it queues a turn, and `GET /api/usage` shows: the ages
    in seconds of the subject's turns of the last minute (oldest first), and its day."""

    recent: tuple[float, ...]
    day: Day

    def to_json(self, limits: Limits, now: datetime) -> dict[str, Any]:
        """`GET /api/usage`'s body: each limit's use, its limit (null: none) and when it
        resets (`resets_in` seconds and `resets_at` in UTC; the minute's only once a turn
        is in it)."""
        midnight = until_midnight(now)
        frees = max(1, round(MINUTE - max(self.recent))) if self.recent else None
        day = {"resets_in": midnight, "resets_at": _at(now, midnight)}
        return {
            "day": today(now),
            "turns_per_minute": {
                "used": len(self.recent),
                "limit": limits.turns_per_minute,
                "resets_in": frees,
                "resets_at": None if frees is None else _at(now, frees),
            },
            "tokens_per_day": {"used": self.day.tokens, "limit": limits.tokens_per_day, **day},
            "cost_per_day": {
                "used": round(self.day.cost_usd, 6),
                "limit": limits.cost_per_day,
                **day,
            },
        }


def _at(now: datetime, seconds: int) -> str:
    return (now + timedelta(seconds=seconds)).isoformat(timespec="seconds").replace("+00:00", "Z")


def refused(limits: Limits, door: Ledger, now: datetime | None = None) -> tuple[str, int] | None:
    """Why a new turn is refused and for how many whole seconds (the `Retry-After`), or
    None to let it in: a day used up waits for the next UTC midnight, a full minute for
    the oldest turn that keeps it full to leave the window."""
    key = spent(limits, door.day)
    if key is not None:
        return key, until_midnight(now)
    most = limits.turns_per_minute
    if most is not None and len(door.recent) >= most:
        oldest = sorted(door.recent, reverse=True)[len(door.recent) - most]
        return TURNS_PER_MINUTE, max(1, math.ceil(MINUTE - oldest))
    return None


class Meter:
    """A running turn's share of the ledger, kept by its hooks: what its writes charge
    (the usage billed since the last charge) and the day's totals they read back."""

    __slots__ = ("cost_usd", "day", "limits", "subject", "tokens")

    def __init__(self, limits: Limits, user: str | None, usage: Usage) -> None:
        self.limits = limits
        self.subject = subject(user)
        self.tokens, self.cost_usd = billed(usage), usage.cost_usd or 0.0
        """The turn's tokens and cost as last charged (a resumed turn's earlier jobs
        charged theirs)."""
        self.day: Day | None = None

    def charge(self, usage: Usage) -> Charge:
        """What `usage` (the turn's sums) adds since the last charge; nothing added, the
        charge only reads the day's totals."""
        tokens, cost = billed(usage), usage.cost_usd or 0.0
        more = cost - self.cost_usd
        added = Charge(self.subject, today(), tokens - self.tokens, more if more > 0.0 else 0.0)
        self.tokens, self.cost_usd = tokens, cost
        return added

    def reading(self) -> Charge:
        """A charge that adds nothing: the write reads the day's totals."""
        return Charge(self.subject, today(), 0, 0.0)

    def read(self, charge: Charge) -> None:
        """Keep the day's totals a write read back; a charge not read back (the usage
        recorded before tools or a compaction's next call) is added to those last read,
        so the check before the next call counts what this turn billed since."""
        if charge.total is not None:
            self.day = charge.total
        elif self.day is not None:
            self.day = Day(self.day.tokens + charge.tokens, self.day.cost_usd + charge.cost_usd)

    def reached(self) -> str | None:
        """The key of the day's limit used up, as the last write read the ledger; None to go on."""
        return None if self.day is None else spent(self.limits, self.day)
