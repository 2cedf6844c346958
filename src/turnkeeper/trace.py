"""Traces: a turn as JSON that can be saved, read back, replayed and summarised.

This module owns the trace format, in one place. The `Recorder` wraps the
turn's clock and its model calls and keeps one `ModelCall` per call (the raw
response or the error, or that a stop aborted it; its duration, the per-call
timeout used, the decision), every clock reading the loop made, and the stop
check that saw a cancel. `Recorder.trace()` writes them out with the history
and the outcome; `replay.py` feeds them back through `run_turn`, so every
decision and outcome, `time_limit` included, comes out the same. A `ModelCall`
is data, one of the records the store keeps (`records.py`); `call_json` is what
a trace makes of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import reprlib
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from . import prices
from .budget import Budget
from .clock import Clock
from .errors import ConfigError, ProviderError, ProviderFailed, ProviderUnavailable
from .instruments import UNWATCHED, TurnWatch
from .observed import CallEnd
from .providers import WIRES, Provider
from .providers.scripted import read_json
from .records import ModelCall
from .usage import Usage
from .wire import Message, Reply, ToolSpec

logger = logging.getLogger("turnkeeper.loop")

FORMAT = "turnkeeper.trace/1"
REQUIRED = ("wire", "question", "prior", "history", "calls", "clock", "outcome", "budget")


class Recorder:
    """Wraps a turn's clock and model calls, and writes what they did as a trace."""

    def __init__(
        self, provider: Provider, budget: Budget, clock: Clock, watch: TurnWatch = UNWATCHED
    ) -> None:
        self.provider = provider
        self.watch = watch
        """Told of every model call as it starts and ends (spans, metrics)."""
        self.budget = budget
        self.calls: list[ModelCall] = []
        self.earlier = 0
        """Model calls the turn made in earlier jobs (a resumed turn numbers on from them)."""
        self.resumed: str | None = None
        """Why the turn resumed in this job, recorded with its first call's decision."""
        self.clock_reads: list[float] = []
        self.stop_checks = 0
        self.stopped_at_check: int | None = None
        self._clock = clock
        self._stop: asyncio.Future[None] | None = None
        """The one wait for a stop, started at the first call."""
        self._calling: asyncio.Task[Any] | None = None
        """The turn's task while a model call is in flight."""
        self._aborted = False
        """The stop cancelled the call in flight."""
        self._watch_asked = False
        self._closed = False
        self.started = self.now()
        described = provider.describe()
        self.requested: str | None = described.get("model")
        """The model requested, as the provider describes itself."""
        self.cache_ttl = "1h" if described.get("prompt_cache") == "1h" else "5m"
        """The TTL of the prompt cache's marks: its writes are priced at it."""

    def now(self) -> float:
        t = self._clock()
        self.clock_reads.append(t)
        return t

    def stop_checked(self, stop: bool) -> bool:
        self.stop_checks += 1
        if stop:
            self.stopped_at_check = self.stop_checks
        return stop

    async def call(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        stop: Callable[[], Awaitable[None]],
    ) -> Reply | None:
        """One model call, recorded, raced against `stop`: None if `stop` returned first and
        the call was aborted; any failure comes out as a `ProviderError`."""
        started = self.now()
        call = ModelCall(self.earlier + len(self.calls) + 1, started - self.started, timeout)
        self.calls.append(call)
        self.watch.call_started(call.iteration)
        try:
            reply = await self._unless_stopped(
                self.provider.complete(history, tools, timeout), stop
            )
        except Exception as e:
            call.duration = self.now() - started
            error = _provider_error(e, timeout)
            call.error = error.describe()
            self.watch.call_ended(
                CallEnd(call.iteration, call.duration, self.requested, error=str(error))
            )
            raise error from e
        call.duration = self.now() - started
        if reply is None:
            call.stopped, call.decision = True, "stopped"
            self.watch.call_ended(
                CallEnd(call.iteration, call.duration, self.requested, stopped=True)
            )
            return None
        answered = reply.raw.get("model") if isinstance(reply.raw, dict) else None
        call.model = answered if isinstance(answered, str) else self.requested
        usage = self._priced(reply.usage, call.model)
        call.response, call.stop_reason, call.usage = reply.raw, reply.raw_stop, usage
        call.tools = [u.name for u in reply.tool_uses]
        if self.watch is not UNWATCHED:  # a record per call only for someone who reads it
            self.watch.call_ended(
                CallEnd(
                    call.iteration,
                    call.duration,
                    call.model,
                    usage,
                    reply.raw_stop,
                    tools=call.tools,
                    text=reply.text,
                )
            )
        return reply

    def _priced(self, usage: Usage, model: str | None) -> Usage:
        """`usage` priced for `model`, its cache writes at the TTL the requests marked."""
        return prices.current().priced(usage, model, self.provider.wire.name, self.cache_ttl)

    async def _unless_stopped(
        self, call: Coroutine[Any, Any, Reply], stop: Callable[[], Awaitable[None]]
    ) -> Reply | None:
        """The call's reply, or None if `stop` returned before it did (the call is then
        aborted, and whatever it answers is dropped).

        The call runs in the turn's own task (no task per call). One wait for the stop
        runs beside the turn, from the first call that gives the event loop control to
        `close()` (started again at the next call if it failed); when it returns during a
        call, it cancels the turn's task there, and that cancel is taken back here,
        whatever the provider made of it."""
        if self._stop_returned():
            call.close()
            return None
        if not self._watch_asked and (self._stop is None or self._stop.done()):
            self._watch_asked = True  # the first call, or the wait failed
            asyncio.get_running_loop().call_soon(self._watch, stop)
        task = asyncio.current_task()
        assert task is not None, "a model call runs in a task"
        self._calling, entry = task, task.cancelling()
        try:
            reply = await call
        except asyncio.CancelledError:
            if self._taken_back(task, entry):
                return None
            raise
        except Exception:
            if self._taken_back(task, entry):
                return None  # the provider made the abort an error of its own
            raise
        finally:
            self._calling = None
        if self._taken_back(task, entry) or self._stop_returned():
            return None  # it answered despite the abort, or the stop came with the answer
        return reply

    def _watch(self, stop: Callable[[], Awaitable[None]]) -> None:
        """Start the one wait for a stop, once the event loop has control: a turn that never
        gives it control (an instant model) ends before there is any call to abort."""
        self._watch_asked = False
        if self._closed or (self._stop is not None and not self._stop.done()):
            return
        self._stop = asyncio.ensure_future(stop())
        self._stop.add_done_callback(self._stop_came)

    def _stop_returned(self) -> bool:
        waiter = self._stop
        return (
            waiter is not None
            and waiter.done()
            and not waiter.cancelled()
            and waiter.exception() is None
        )

    def _taken_back(self, task: asyncio.Task[Any], entry: int) -> bool:
        """Whether the stop aborted the call just made; its cancel is then taken back.
        A cancel of the turn's task from outside, still counted, comes out as one."""
        if not self._aborted:
            return False
        self._aborted = False
        task.uncancel()
        if task.cancelling() > entry:
            raise asyncio.CancelledError
        return True

    def _stop_came(self, waiter: asyncio.Future[None]) -> None:
        """The stop wait ended: abort the call in flight, if any (the next stop check
        ends the turn otherwise), unless the wait itself failed."""
        if waiter.cancelled():
            return
        if waiter.exception() is not None:
            logger.warning("waiting for a stop failed: %r", waiter.exception())
            return
        if self._calling is not None and not self._aborted:
            self._aborted = True
            self._calling.cancel()

    def close(self) -> None:
        """The turn is over: stop waiting for a stop."""
        self._closed = True
        if self._stop is not None:
            self._stop.cancel()

    def usage(self, reply: Reply) -> Usage:
        """The usage of the last call, `reply`, priced when its model's price is known."""
        return self.calls[-1].usage or reply.usage

    def decided(self, decision: str, caption: str | None) -> None:
        self.calls[-1].decision, self.calls[-1].caption = decision, caption
        if len(self.calls) == 1:  # the first call of a resumed turn's job says why
            self.calls[0].resumed = self.resumed

    def tools_took(self, seconds: float) -> None:
        if self.calls:  # none yet when a resumed turn answers its last response's tools
            self.calls[-1].tools_duration = seconds

    def overran(self, why: str) -> None:
        """The deadline fired inside a call that ignored its timeout: it ends as an error."""
        last = self.calls[-1] if self.calls else None
        if last is not None and last.error is None and last.response is None:
            last.error = ProviderUnavailable(why).describe()

    def trace(self, **turn: Any) -> dict[str, Any]:
        """The trace: these calls and clock readings, and the turn's `question`, `prior`,
        `history`, `turn_id`, `outcome`, `usage` and `state` as given."""
        first = self.clock_reads[0] if self.clock_reads else 0.0
        return {
            "format": FORMAT,
            "wire": self.provider.wire.name,
            "request": self.provider.describe(),
            "budget": self.budget.as_dict(),
            **turn,
            "calls": [call_json(c) for c in self.calls],
            "clock": [t - first for t in self.clock_reads],
            "stopped_at_check": self.stopped_at_check,
        }


def call_json(call: ModelCall) -> dict[str, Any]:
    """A model call as the trace records it (`records.ModelCall`, which the store keeps
    as its `summary()`)."""
    record: dict[str, Any] = {
        "iteration": call.iteration,
        "started": call.started,
        "timeout": call.timeout,
        "duration": call.duration,
    }
    if call.error is not None:
        record["error"] = call.error
    elif call.stopped:
        record["stopped"] = True
    else:
        record.update(response=call.response, stop_reason=call.stop_reason, tools=call.tools or [])
    if call.decision is not None:
        record["decision"] = call.decision
    if call.tools_duration is not None:
        record["tools_duration"] = call.tools_duration
    if call.caption is not None:
        record["caption"] = call.caption
    if call.model is not None:
        record["model"] = call.model
    if call.resumed is not None:
        record["resumed"] = call.resumed
    if call.usage is not None and call.usage.cost_usd is not None:
        record["cost_usd"] = call.usage.cost_usd
    return record


def _provider_error(e: Exception, timeout: float) -> ProviderError:
    if isinstance(e, ProviderError):
        return e
    if isinstance(e, TimeoutError):
        return ProviderUnavailable(
            f"the model call did not finish within its {timeout:.1f} s timeout"
        )
    return ProviderFailed(f"{type(e).__name__}: {e}")


def write_trace(trace: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(trace, ensure_ascii=False, indent=1) + "\n", "utf-8")


def read_trace(path: str | Path) -> dict[str, Any]:
    """A trace from a file; `ConfigError` saying why if it cannot be used."""
    try:
        data = read_json(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ConfigError(f"cannot read trace {path}: {e}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path} is not a turnkeeper trace ({FORMAT})")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ConfigError(f"trace {path} lacks {', '.join(missing)}")
    wrong = _malformed(data)
    if wrong:
        raise ConfigError(f"trace {path} is malformed: {wrong}")
    return data


def _malformed(data: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a trace's fields, or None."""

    def objects(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)

    checks: list[tuple[Callable[[], bool], str]] = [
        (lambda: objects(data["calls"]), "calls must be a list of objects"),
        (lambda: objects(data["history"]), "history must be a list of messages"),
        (
            lambda: isinstance(data["clock"], list) and all(_number(t) for t in data["clock"]),
            "clock must be a list of numbers",
        ),
        (lambda: isinstance(data["question"], str), "question must be text"),
        (
            lambda: isinstance(data["prior"], int) and 0 <= data["prior"] <= len(data["history"]),
            "prior must count messages of the history",
        ),
        (
            lambda: isinstance(data["wire"], str) and data["wire"] in WIRES,
            f"wire must be one of {', '.join(WIRES)}",
        ),
        (lambda: isinstance(data.get("request", {}), dict), "request must be an object"),
        (lambda: isinstance(data.get("turn_id", ""), str), "turn_id must be text"),
    ]
    wrong = next((why for ok, why in checks if not ok()), None)
    if wrong is not None:
        return wrong
    for n, call in enumerate(data["calls"], 1):
        wrong = _call_problem(call)
        if wrong is not None:
            return f"call {n}: {wrong}"
    return _budget_problem(data["budget"])


def _call_problem(call: dict[str, Any]) -> str | None:
    """What is wrong with one recorded model call (as `call_json` writes it), or None."""
    iteration, error, tools = call.get("iteration"), call.get("error"), call.get("tools", [])
    checks = [
        (
            isinstance(iteration, int) and not isinstance(iteration, bool),
            "iteration must be a whole number",
        ),
        (
            error is None
            or (
                isinstance(error, dict)
                and isinstance(error.get("kind"), str)
                and isinstance(error.get("message"), str)
            ),
            "error must be an object with a kind and a message",
        ),
        (
            error is not None
            or call.get("stopped") is True
            or isinstance(call.get("response"), dict),
            "response must be an object",
        ),
        *(
            (_number(call.get(n)), f"{n} must be a number")
            for n in ("started", "timeout", "duration")
        ),
        *(
            (call.get(n) is None or _number(call[n]), f"{n} must be a number")
            for n in ("tools_duration", "cost_usd")
        ),
        *(
            (isinstance(call.get(n), str | None), f"{n} must be text")
            for n in ("stop_reason", "decision", "caption", "model")
        ),
        (
            isinstance(tools, list) and all(isinstance(t, str) for t in tools),
            "tools must be a list of names",
        ),
    ]
    return next((why for ok, why in checks if not ok), None)


def _budget_problem(budget: Any) -> str | None:
    """Why a trace's budget cannot be a `Budget`, or None."""
    if not isinstance(budget, dict):
        return "budget must be an object"
    settings = {f.name for f in fields(Budget)}
    for name, value in budget.items():
        if name not in settings:
            return f"budget: {name} is not a budget setting"
        if not _number(value):
            return f"budget: {name} must be a number, got {reprlib.repr(value)}"
    try:
        Budget(**budget)
    except ConfigError as e:
        return f"budget: {e}"
    return None


def _number(value: Any) -> bool:
    """A JSON number (`read_json` refuses those too large for a float, NaN and Infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def first_difference(recorded: dict[str, Any], replayed: dict[str, Any]) -> str | None:
    """The first way the replayed trace differs from the recorded one, or None."""
    for i, (a, b) in enumerate(zip(recorded["calls"], replayed["calls"], strict=False), 1):
        was, now = _decision(a), _decision(b)
        if was != now:
            return f"call {i}: recorded {was}, replayed {now}"
    if len(recorded["calls"]) != len(replayed["calls"]):
        return f"recorded {len(recorded['calls'])} model calls, replayed {len(replayed['calls'])}"
    if recorded["outcome"] != replayed["outcome"]:
        return f"outcome: recorded {recorded['outcome']}, replayed {replayed['outcome']}"
    for i, (a, b) in enumerate(zip(recorded["history"], replayed["history"], strict=False), 1):
        if a != b:
            return f"history message {i} differs"
    if len(recorded["history"]) != len(replayed["history"]):
        return "the replayed history has a different length"
    return None


def _decision(call: dict[str, Any]) -> str:
    error = call.get("error")
    if error is not None:
        return f"error {error.get('kind')}"
    return str(call.get("decision"))
