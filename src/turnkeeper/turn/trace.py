"""Traces: a turn as a file that can be saved, read back, replayed and summarised.

This module owns the trace file's format (`turnkeeper.trace/1`), in one place:
a `Trace` is the typed value, `to_json()` and `read_trace()` its two edges. A
trace holds the turn's question and history, every model call as its
`CallLog` recorded it (`records.ModelCall`: the raw response or the error, or
that a stop aborted it; its duration, the per-call timeout used, the decision),
every clock reading the turn made, the stop check that saw a cancel, and the
outcome; `replay.py` feeds them back through `run_turn`, so every decision and
outcome, `time_limit` included, comes out the same.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ..budget import Budget
from ..errors import ConfigError
from ..outcomes import STATUSES, Outcome, Status
from ..providers import WIRES, chat_api, messages_api, responses_api
from ..providers.scripted import read_json
from ..state import PublishedState
from ..store.records import ModelCall
from ..usage import Usage
from ..wire import Json, Message
from .approvals import Resume

FORMAT = "turnkeeper.trace/1"
REQUIRED = ("wire", "question", "prior", "history", "calls", "clock", "outcome", "budget")

OUTCOMES = (*(o.value for o in Outcome), Status.WAITING.value)
"""How a traced turn ended, or that it stopped to wait for a person (`waiting`)."""
T = TypeVar("T")

USAGE_OF = {m.WIRE.name: m.parse_usage for m in (messages_api, chat_api, responses_api)}
"""How each wire format's response `usage` reads, as its adapter reads it."""


@dataclass(slots=True, kw_only=True)
class Trace:
    """A turn as its trace file holds it (`state`: the final published one)."""

    wire: str
    question: str
    prior: int
    """How many messages of `history` came before the turn."""
    history: list[Message]
    outcome: Outcome | Status
    """How the turn ended, or `Status.WAITING`: it stopped its job to wait for a person."""
    budget: Budget
    calls: list[ModelCall]
    clock: list[float]
    """Every clock reading the turn made, as seconds since the first."""
    request: dict[str, Any] = field(default_factory=dict)
    """The request's parameters, secrets left out (`Provider.describe()`), and `compaction`."""
    turn_id: str | None = None
    usage: Usage | None = None
    state: PublishedState | None = None
    stopped_at_check: int | None = None
    """Which stop check, counted from 1, saw a cancel (None: none did)."""
    resume: Resume | None = None
    """Which tools wait for approval and where a resumed turn went on (None: neither)."""

    def to_json(self) -> Json:
        """The trace file's JSON, its fields in the order the format has always written."""
        data: Json = {"format": FORMAT, "wire": self.wire, "request": self.request}
        data["budget"] = self.budget.as_dict()
        if self.turn_id is not None:
            data["turn_id"] = self.turn_id
        data.update(question=self.question, prior=self.prior, history=self.history)
        data["outcome"] = self.outcome.value
        if self.usage is not None:
            data["usage"] = self.usage.as_dict()
        if self.state is not None:
            data["state"] = self.state.to_json()
        data.update(calls=[call_json(c) for c in self.calls], clock=self.clock)
        data["stopped_at_check"] = self.stopped_at_check
        if self.resume is not None:
            data["resume"] = self.resume.to_json()
        return data


def call_json(call: ModelCall) -> Json:
    """A model call as the trace records it (`ModelCall`; the store keeps its `summary()`)."""
    record: Json = {
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
    for name, value in (
        ("decision", call.decision),
        ("tools_duration", call.tools_duration),
        ("caption", call.caption),
        ("model", call.model),
        ("resumed", call.resumed),
        ("compacted", call.compacted),
    ):
        if value is not None:
            record[name] = value
    if call.usage is not None and call.usage.cost_usd is not None:
        record["cost_usd"] = call.usage.cost_usd
    if call.streamed:
        record["streamed"] = True
    return record


def write_trace(trace: Trace, path: str | Path) -> None:
    """Save `trace` as its file (`read_trace` reads it back)."""
    Path(path).write_text(json.dumps(trace.to_json(), ensure_ascii=False, indent=1) + "\n", "utf-8")


def read_trace(path: str | Path) -> Trace:
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
    try:
        return _trace(data)
    except _Malformed as e:
        raise ConfigError(f"trace {path} is malformed: {e}") from None


class _Malformed(Exception):
    """What is wrong with the shape of a trace's field."""


def _trace(data: Json) -> Trace:
    """The trace its JSON holds, each field checked in the order the errors name them."""
    _check(_objects(data["calls"]), "calls must be a list of objects")
    _check(_objects(data["history"]), "history must be a list of messages")
    clock = data["clock"]
    _check(isinstance(clock, list) and all(map(_number, clock)), "clock must be a list of numbers")
    _check(isinstance(data["question"], str), "question must be text")
    prior = data["prior"]
    ok = isinstance(prior, int) and 0 <= prior <= len(data["history"])
    _check(ok, "prior must count messages of the history")
    ok = isinstance(data["wire"], str) and data["wire"] in WIRES
    _check(ok, f"wire must be one of {', '.join(WIRES)}")
    _check(isinstance(data.get("request", {}), dict), "request must be an object")
    _check(isinstance(data.get("turn_id", ""), str), "turn_id must be text")
    calls = [_call(c, data["wire"], n) for n, c in enumerate(data["calls"], 1)]
    _check(data["outcome"] in OUTCOMES, f"outcome must be one of {', '.join(OUTCOMES)}")
    stopped_at = data.get("stopped_at_check")
    _check(stopped_at is None or _whole(stopped_at), "stopped_at_check must be a whole number")
    resume = _read(Resume.from_json, data.get("resume"))
    _check(resume is not None or data.get("resume") is None, "resume must be a resume object")
    return Trace(
        wire=data["wire"],
        question=data["question"],
        prior=prior,
        history=data["history"],
        outcome=STATUSES[data["outcome"]],
        budget=_budget(data["budget"]),
        calls=calls,
        clock=[float(t) for t in clock],
        request=data.get("request", {}),
        turn_id=data.get("turn_id"),
        usage=_read(Usage.from_dict, data.get("usage")),
        state=_read(PublishedState.from_json, data.get("state")),
        stopped_at_check=stopped_at,
        resume=resume,
    )


def _call(record: Json, wire: str, n: int) -> ModelCall:
    """A model call from its record (as `call_json` writes it): its usage read from the
    response as its wire format's adapter reads it, with the cost the trace recorded."""
    try:
        _check_call(record)
    except _Malformed as e:
        raise _Malformed(f"call {n}: {e}") from None
    response, usage = record.get("response"), None
    if isinstance(response, dict):
        usage = USAGE_OF.get(wire, messages_api.parse_usage)(response.get("usage"))
        usage.cost_usd = record.get("cost_usd")
    return ModelCall(
        iteration=record["iteration"],
        started=record["started"],
        timeout=record["timeout"],
        duration=record["duration"],
        response=response,
        error=record.get("error"),
        stop_reason=record.get("stop_reason"),
        tools=record.get("tools"),
        decision=record.get("decision"),
        caption=record.get("caption", record.get("activity")),
        tools_duration=record.get("tools_duration"),
        usage=usage,
        model=record.get("model"),
        stopped=record.get("stopped") is True,
        resumed=record.get("resumed"),
        streamed=record.get("streamed") is True,
        compacted=record.get("compacted"),
    )


def _check_call(record: Json) -> None:
    _check(_whole(record.get("iteration")), "iteration must be a whole number")
    error = record.get("error")
    described = isinstance(error, dict) and all(
        isinstance(error.get(k), str) for k in ("kind", "message")
    )
    _check(error is None or described, "error must be an object with a kind and a message")
    answered = record.get("stopped") is True or isinstance(record.get("response"), dict)
    _check(error is not None or answered, "response must be an object")
    for name in ("started", "timeout", "duration", "tools_duration", "cost_usd"):
        optional = name in ("tools_duration", "cost_usd") and record.get(name) is None
        _check(optional or _number(record.get(name)), f"{name} must be a number")
    for name in ("stop_reason", "decision", "caption", "model", "resumed", "compacted"):
        _check(isinstance(record.get(name), str | None), f"{name} must be text")
    tools = record.get("tools", [])
    ok = isinstance(tools, list) and all(isinstance(t, str) for t in tools)
    _check(ok, "tools must be a list of names")


def _budget(budget: Json) -> Budget:
    _check(isinstance(budget, dict), "budget must be an object")
    settings = {f.name for f in fields(Budget)}
    for name, value in budget.items():
        _check(name in settings, f"budget: {name} is not a budget setting")
        _check(_number(value), f"budget: {name} must be a number, got {reprlib.repr(value)}")
    try:
        return Budget(**budget)
    except ConfigError as e:
        raise _Malformed(f"budget: {e}") from None


def _read(parse: Callable[[Json], T], value: Json) -> T | None:
    """The usage, state or resume a trace carries, if it can be read (a replay reads only
    the resume, which a malformed trace is refused for)."""
    try:
        return parse(value) if isinstance(value, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def _check(ok: bool, why: str) -> None:
    if not ok:
        raise _Malformed(why)


def _objects(value: Json) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _number(value: Json) -> bool:
    """A JSON number (`read_json` refuses those too large for a float, NaN and Infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Json) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
