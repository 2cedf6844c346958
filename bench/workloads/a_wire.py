"""A-wire. Loop overhead through the wire: turnkeeper's Anthropic adapter vs the SDK's tool runner.

Both drive a real `AsyncAnthropic` client whose HTTP transport is an
in-process mock of the Messages API (`contenders/mock_api.py`), so both pay
request serialisation, the HTTP client and response parsing.
"""

from __future__ import annotations

from .. import fake
from ..method import Rounds, median
from ..report import Context, Headline, Section, number, table, verdict
from . import a_loop

TITLE = "A-wire. Through the Anthropic SDK over a mock transport"
OURS = "turnkeeper-anthropic"
RUNNER = "anthropic-runner"
CONTENDERS = [a_loop.BASE, "turnkeeper", OURS, RUNNER]
TARGET = 0.5


def headline(n: int, result: Rounds, pending: dict[str, str]) -> Headline:
    where, measure = f"A-wire, N = {n}", "turnkeeper adapter ÷ anthropic tool runner"
    missing = pending.get(OURS) or pending.get(RUNNER)
    if missing:
        return Headline(where, measure, "≤ 0.5×", "", missing)
    ratio = median(result.ratios(OURS, RUNNER, a_loop.cpu))
    return Headline(where, measure, "≤ 0.5×", f"{number(ratio)}×", verdict(ratio <= TARGET))


def run(ctx: Context) -> Section:
    rounds = ctx.size(15, 2)
    seconds = 0.02 if ctx.smoke else 0.25
    parts, heads = [DESCRIPTION], []
    for n in (2,) if ctx.smoke else (10, 50):
        spec = fake.Spec(rounds=n)
        result, pending = a_loop.measure(ctx, CONTENDERS, spec, rounds, seconds)
        parts.append(f"**N = {n}**, {rounds} rounds\n")
        parts.append(table(a_loop.HEADERS, a_loop.rows(result, CONTENDERS, OURS, pending)) + "\n")
        heads.append(headline(n, result, pending))
    return Section(TITLE, "\n".join(parts), heads)


DESCRIPTION = """\
Same turn shape and slices as A. The anthropic tool runner is
`client.beta.messages.tool_runner(..., thread=False)` with a `beta_async_tool`
and `until_done()`; `thread=False` makes it send the whole history each call,
as turnkeeper does. turnkeeper's row is `run_turn` with
`AnthropicProvider(transport=...)`: the adapter's own `AsyncAnthropic` client
(with its attempt hooks) over the same mock transport. The mock answers from a
per-turn counter, so it never parses the growing request.
"""
