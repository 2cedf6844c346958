"""Your assistant: one value that says what it is, loaded the same in every process.

    assistant = Assistant(
        name="Shop helper",
        instructions="You help customers of Example Shop with their orders.",
        tools=[my_orders, cancel_order],
        captions={"my_orders": {"en": "Looked up your orders", "fr": "A consulté vos commandes"}},
    )

`turnkeeper serve app:assistant` serves it, `turnkeeper worker app:assistant`
runs its turns from PostgreSQL, and `assistant.asgi(...)` mounts it in your own
Starlette or FastAPI application. Each process imports the same value by its
import string (`module:attribute`, as uvicorn reads one), so the tools, the
instructions and the captions are the same wherever a turn runs.

A wrong assistant is a `ConfigError` when it is made, not at its first turn: a
caption for a tool it does not have, two tools of one name, a malformed locale
tag. The tools of a toolset (an MCP server) are known only once it is
connected; `check()` holds them to the same rules when a process starts.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .budget import Budget
from .errors import ConfigError, require_extra
from .i18n import Catalogs, Texts, ask_key, caption_texts, counted, keys, locale_tag, shorter
from .observe import prices
from .providers import MAX_RESPONSE, Provider
from .providers.cache_marks import ttl_of
from .providers.demo import Where
from .providers.select import NAMES, OFFLINE, ModelSettings, choose_provider
from .service.ownership import check_unclaimed, checked_version, fate_of, owner_of
from .store.records import Fate, Owner
from .tools import CombinedToolset, Toolset
from .tools.files import DEMO_ROOT, read_file_tool
from .tools.functions import FunctionToolset, Tool, ToolFunction, function_tool
from .turn.activity import ACTIVITIES
from .turn.compaction import Compaction, compaction_of
from .turn.resume import Resuming
from .usage import Limits, LimitsSetting, check_setting
from .wire import ToolSpec

if TYPE_CHECKING:
    from starlette.requests import Request

    from .service.job import Instructions
    from .serving.mounted import AssistantApp

log = logging.getLogger("turnkeeper")

Authenticate = Callable[["Request"], "Awaitable[str | None] | str | None"]
"""`authenticate(request)`, sync or async: the id of the application's signed-in user, or None."""


@dataclass(frozen=True)
class Assistant:
    """An assistant: its name, instructions, tools, captions and model, in one value."""

    name: str = "Assistant"
    """Shown in the widget's header and on its bubbles, in every locale whose `messages`
    give no `assistant.name` of its own (the default, "Assistant", is translated by the
    shipped catalogs)."""
    instructions: str | Instructions | None = None
    """The system prompt; or `instructions(ctx: ToolContext) -> str`, sync or async, called
    once per turn where it runs (a worker too), so it can say who asks and in which language."""
    tools: Sequence[Tool | ToolFunction | Toolset] = ()
    """Python functions (sync or async), `@tool` tools, and toolsets such as MCP servers."""
    captions: Mapping[str, Any] = field(default_factory=dict)
    """`{tool: {locale: past-tense text}}` (`en` required; or an `activity.*` key), what the
    reader sees once a tool ran; `{locale: {"done": …, "ask": "Delete a note"}}` adds the ask."""
    messages: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """`{locale: {key: text}}`: catalog entries in any BCP 47 locale, of the keys
    docs/design.md §7 lists and the `activity.<tool>` keys of `captions`; any other key is a
    `ConfigError`, a key a locale lacks is shown in English (and logged once)."""
    provider: str | Provider | None = None
    """`anthropic`, `openai`, `openai-responses`, `demo` or `dev` (offline: calls each of its
    tools with sample input, then says what they returned); None chooses from the environment
    (docs/design.md §6); or a `Provider` of your own, used as it is."""
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: int | None = None
    """Extended thinking's budget in tokens (Anthropic; below `max_tokens`), or None."""
    fallbacks: str | tuple[str, ...] | None = None
    """Models Anthropic may hand a refused request to (`"default"`: its choice), or None."""
    prompt_cache: bool | str = True
    """Anthropic's prompt cache on every request: True (5 minutes), "1h", or False (off);
    `--no-prompt-cache` turns it off from the command line."""
    stream: bool = True
    """Stream every model call (Anthropic and OpenAI-compatible alike), the answer's text
    arriving as it is written; False makes plain calls. The history is the same either way."""
    max_response: int = MAX_RESPONSE
    """The most bytes one model response may hold (4 MiB): past it, `errors.ai_too_large`."""
    budget: Budget = field(default_factory=Budget)
    authenticate: Authenticate | None = None
    """Who the reader is, for `serve` and `asgi()`: with it, conversations belong to users."""
    needs_approval: Collection[str] = ()
    """Names of tools (an MCP server's, say) that wait for a person's yes, as
    `@tool(needs_approval=True)` does for a Python tool."""
    idempotent: Collection[str] = ()
    """Names of tools that may run again when a crashed turn resumes, as
    `@tool(idempotent=True)` marks a Python tool."""
    resume_after_crash: bool = False
    """A turn whose worker died resumes from its last checkpoint instead of failing
    (`--resume-after-crash`); off by default: a turn is tried once."""
    max_resumes: int = 2
    """How many times a crash may resume one turn before it is finalised as `failed`."""
    approval_timeout: float = 24 * 3600.0
    """Seconds a turn may wait for a person's decision before it ends `stopped`."""
    event_retention: float = 7 * 24 * 3600.0
    """Seconds a turn's event log is kept after the turn ended (a reload replays it);
    the sweeper deletes it after that."""
    limits: LimitsSetting = None
    """`Limits(turns_per_minute=, tokens_per_day=, cost_per_day=)` per signed-in user
    (without `authenticate`, for the whole assistant), or a function of the user giving
    theirs (tiers); None: no limits but the per-turn `budget`."""
    version: str | None = None
    """Its version as each turn records it (1 to 64 printable characters); None: a hash of
    its name, tools and settings, the same in every process that loads it (ownership.py)."""
    unclaimed_after: float = 60.0
    """Seconds a queued turn waits for a worker before it says so ("Waiting for the
    assistant to start…") and a warning names its queue (`serve --unclaimed-after`)."""
    unclaimed_timeout: float = 600.0
    """Seconds a queued turn waits for a worker before it ends `failed` (`errors.no_worker`)."""
    compaction: Compaction | bool = field(default_factory=Compaction)
    """Keeps a long conversation inside the model's context window: old tool results
    cleared, older turns summarised (`Compaction(window=, at=, keep_turns=, model=)`); on by
    default, `False` turns it off. The transcript and the stored history stay whole."""

    _functions: FunctionToolset = field(init=False, repr=False, compare=False)
    _toolsets: tuple[Toolset, ...] = field(init=False, repr=False, compare=False)
    catalogs: Catalogs = field(init=False, repr=False, compare=False)
    """The shipped catalogs with this assistant's messages and captions."""
    activities: Mapping[str, str] = field(init=False, repr=False, compare=False)
    """Tool names to caption keys: the built-in tools' and this assistant's."""

    def __post_init__(self) -> None:
        _check_settings(self)
        functions, toolsets = _sorted_tools(self.tools)
        catalogs = Catalogs(self.messages)
        activities = dict(ACTIVITIES)
        asked = []
        for tool, (done, ask) in _checked_captions(self.captions, functions).items():
            if done is not None:
                activities[tool] = _caption_key(catalogs, tool, done)
            for locale, text in ask.items():
                catalogs.add(locale, {ask_key(tool): text})
            asked += [ask_key(tool)] if ask else []
        _check_keys(self.messages, [*activities.values(), *asked])
        _name_everywhere(catalogs, self.name, self.messages)
        _report_missing(catalogs, self.name)
        set_ = object.__setattr__
        set_(self, "_functions", FunctionToolset(functions))
        set_(self, "_toolsets", tuple(toolsets))
        set_(self, "catalogs", catalogs)
        set_(self, "activities", activities)
        if not toolsets:
            self.check(self._functions.specs())

    @property
    def tool_names(self) -> list[str]:
        """The Python tools' names (a toolset's are known once it is connected)."""
        return [spec.name for spec in self._functions.specs()]

    def toolset(self) -> CombinedToolset:
        """Every tool as one toolset, for one process's lifetime (`async with` it)."""
        return CombinedToolset(self._functions, *self._toolsets)

    def check(self, specs: Sequence[ToolSpec]) -> None:
        """`ConfigError` if a caption, or a tool named to need approval or to be idempotent,
        names a tool that is not among `specs` (a misspelt name must not let a tool run
        without a person's yes)."""
        names = {spec.name for spec in specs}
        have = ", ".join(sorted(names)) or "none"
        for what, named in (
            ("captions", self.captions),
            ("needs_approval", self.needs_approval),
            ("idempotent", self.idempotent),
        ):
            unknown = sorted(set(named) - names)
            if unknown:
                raise ConfigError(
                    f"assistant {self.name!r} has {what} for tools it does not have: "
                    f"{', '.join(unknown)} (its tools: {have})"
                )

    @property
    def compacting(self) -> Compaction | None:
        """The compaction the turns run with (None: turned off)."""
        return compaction_of(self.compaction)

    @property
    def resuming(self) -> Resuming:
        """Which tools wait for approval or may run again, and what a crash does to a turn."""
        functions = self._functions.tools()
        return Resuming(
            needs_approval=frozenset(self.needs_approval)
            | {t.spec.name for t in functions if t.needs_approval},
            idempotent=frozenset(self.idempotent)
            | {t.spec.name for t in functions if t.idempotent},
            resume_after_crash=self.resume_after_crash,
            max_resumes=self.max_resumes,
            approval_timeout=float(self.approval_timeout),
        )

    @property
    def owner(self) -> Owner:
        """Whom its turns belong to (`ownership.owner_of`): a worker claims its own by name."""
        if self.version is not None:
            return Owner(self.name, self.version)
        settings = (self.instructions, self.model, self.max_tokens, self.temperature, self.thinking)
        code = [t.function for t in self._functions.tools()]
        return owner_of(self.name, settings, self._functions.specs(), self.resuming, code)

    @property
    def fate(self) -> Fate:
        """What each turn it queues records of its settings, for every process to apply."""
        return fate_of(self.resuming, self.budget)

    def check_limits(self, provider: Provider) -> None:
        """`ConfigError` if `limits` caps a day's cost and the model `provider` calls (the
        one chosen where the turns run) has no price; an offline model costs nothing."""
        if isinstance(self.limits, Limits) and provider.describe().get("provider") not in OFFLINE:
            prices.check_priced(self.limits, _described_model(provider))

    def model_settings(self) -> ModelSettings:
        """What goes with every request of this assistant's turns: the instructions,
        `max_tokens`, temperature, thinking's budget, the prompt cache and streaming."""
        return ModelSettings(
            self.instructions if isinstance(self.instructions, str) else None,
            self.max_tokens,
            self.temperature,
            self.thinking,
            self.prompt_cache,
            self.stream,
            self.max_response,
            self.fallbacks,
        )

    def choose_provider(
        self,
        environ: Mapping[str, str],
        *,
        provider: str | None = None,
        model: str | None = None,
        demo_pause: float = 0.0,
        demo_where: Where = Where.APP,
        dev_pace: float | None = None,
    ) -> Provider:
        """The model this assistant talks to: `provider` and `model` (the command line's)
        over its own, over the environment's rule; every request carries its settings.
        A `Provider` the assistant was given is used as it is. The demo model says how to
        select a real one where it runs (`demo_where`); the dev model streams at `dev_pace`
        words a second (default: `TURNKEEPER_DEV_PACE`, else ~30)."""
        if provider is None and self.provider is not None and not isinstance(self.provider, str):
            return self.provider
        return choose_provider(
            provider or _named(self.provider),
            model or self.model,
            environ,
            demo_pause=demo_pause,
            demo_where=demo_where,
            settings=self.model_settings(),
            dev_pace=dev_pace,
        )

    def asgi(
        self,
        *,
        database: str | None = None,
        authenticate: Authenticate | None = None,
        worker: bool = True,
        concurrency: int = 4,
        cors_origins: Sequence[str] = (),
        cors_credentials: bool = False,
        cors_headers: Sequence[str] = (),
        frame_ancestors: Sequence[str] = (),
        public_metrics: bool = False,
        max_streams: int = 2000,
        max_streams_per_user: int = 20,
    ) -> AssistantApp:
        """This assistant as an ASGI app to mount in yours: the widget, its files and the API,
        under any prefix. Pass its `lifespan` as your application's:

            chat = assistant.asgi(database="sqlite:///chat.db", authenticate=signed_in_user)
            app = Starlette(routes=[Mount("/assistant", app=chat)], lifespan=chat.lifespan)

        Turns run in your process; with a PostgreSQL `database` and `worker=False`, they
        are left to `turnkeeper worker module:assistant` processes. `authenticate`
        (default: the assistant's own) makes conversations belong to your users. Pages of
        `cors_origins` may call it (with `cors_headers` of your own, and your sign-in's
        cookies with `cors_credentials`), pages of `frame_ancestors` frame it; `public_metrics`
        answers `/metrics` under the prefix; at most `max_streams` event streams are open,
        `max_streams_per_user` of one user. Without the server extra, `MissingExtra`.
        """
        require_extra("Assistant.asgi()", "server", ("starlette", "prometheus_client"))
        from .serving.mounted import AssistantApp

        return AssistantApp(
            self,
            database=database,
            authenticate=authenticate or self.authenticate,
            worker=worker,
            concurrency=concurrency,
            cors_origins=tuple(cors_origins),
            cors_credentials=cors_credentials,
            cors_headers=tuple(cors_headers),
            frame_ancestors=tuple(frame_ancestors),
            public_metrics=public_metrics,
            max_streams=max_streams,
            max_streams_per_user=max_streams_per_user,
        )


def _named(provider: str | Provider | None) -> str | None:
    return provider if isinstance(provider, str) else None


def demo_assistant(root: Path = DEMO_ROOT, toolsets: Sequence[Toolset] = ()) -> Assistant:
    """The assistant `serve` runs without an app: `read_file` in `root` (the demo folder,
    never the user's directory), and the tools of `toolsets` (`--mcp-stdio`, `--mcp-http`)."""
    return Assistant(tools=[read_file_tool(root), *toolsets])


def _check_settings(a: Assistant) -> None:
    if not (isinstance(a.name, str) and a.name.strip()):
        raise ConfigError(f"an assistant's name must be a non-empty string, got {a.name!r}")
    if a.instructions is not None and not isinstance(a.instructions, str | Callable):
        raise ConfigError("an assistant's instructions must be a string or a function of the turn")
    if isinstance(a.provider, str) and a.provider not in NAMES:
        raise ConfigError(f"unknown provider {a.provider!r}; choose one of: {', '.join(NAMES)}")
    if not isinstance(a.provider, str | None) and not callable(
        getattr(a.provider, "complete", None)
    ):
        raise ConfigError(f"provider must be {', '.join(NAMES)} or a Provider, got {a.provider!r}")
    if a.model is not None and not (isinstance(a.model, str) and a.model.strip()):
        raise ConfigError(f"model must be a model's name, got {a.model!r}")
    if not isinstance(a.budget, Budget):
        raise ConfigError(f"budget must be a turnkeeper.Budget, got {type(a.budget).__name__}")
    if a.authenticate is not None and not callable(a.authenticate):
        raise ConfigError("authenticate must be a function of the request")
    _check_resuming(a)
    _check_model_settings(a)
    check_setting(a.limits)
    if isinstance(a.limits, Limits):
        prices.check_priced(a.limits, a.model or _described_model(a.provider))
    compaction_of(a.compaction)
    ttl_of(a.prompt_cache)


def _described_model(provider: str | Provider | None) -> str | None:
    if provider is None or isinstance(provider, str):
        return None
    model = provider.describe().get("model")
    return model if isinstance(model, str) else None


def _check_resuming(a: Assistant) -> None:
    for name in ("needs_approval", "idempotent"):
        names = getattr(a, name)
        if isinstance(names, str | bytes) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{name} must be a list of tool names, got {names!r}")
    if isinstance(a.max_resumes, bool) or not isinstance(a.max_resumes, int) or a.max_resumes < 0:
        raise ConfigError(
            f"max_resumes must be a whole number of zero or more, got {a.max_resumes!r}"
        )
    timeout = a.approval_timeout
    if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
        raise ConfigError(f"approval_timeout must be a positive number of seconds, got {timeout!r}")
    kept = a.event_retention
    if isinstance(kept, bool) or not (isinstance(kept, int | float) and kept >= 0):
        raise ConfigError(f"event_retention must be a number of seconds, got {kept!r}")
    checked_version(a.version)
    check_unclaimed(a.unclaimed_after, a.unclaimed_timeout)


def _check_model_settings(a: Assistant) -> None:
    for name in ("max_tokens", "thinking"):
        value = getattr(a, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{name} must be a whole number of tokens, got {value!r}")
    if not (type(a.max_response) is int and a.max_response >= 1):
        raise ConfigError(f"max_response must be a positive number of bytes: {a.max_response!r}")
    if a.max_tokens is not None and a.max_tokens < 1:
        raise ConfigError(f"max_tokens must be at least 1, got {a.max_tokens}")
    if a.thinking is not None and not (a.thinking >= 1024 and (a.max_tokens or 0) > a.thinking):
        raise ConfigError(
            f"thinking={a.thinking} needs a budget of at least 1024 tokens and max_tokens above it"
        )
    temperature = a.temperature
    if temperature is not None and not (
        isinstance(temperature, int | float)
        and math.isfinite(temperature)
        and 0 <= temperature <= 2
    ):
        raise ConfigError(f"temperature must be a number from 0 to 2, got {temperature!r}")


def _sorted_tools(tools: Sequence[Any]) -> tuple[list[Tool], list[Toolset]]:
    """Python tools (functions made `Tool`s) and toolsets, in the order given."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise ConfigError("an assistant's tools must be a list of functions, tools and toolsets")
    functions: list[Tool] = []
    toolsets: list[Toolset] = []
    for t in tools:
        if isinstance(t, Tool):
            functions.append(t)
        elif callable(getattr(t, "list_tools", None)) and callable(getattr(t, "call", None)):
            toolsets.append(t)
        elif callable(t):
            functions.append(function_tool(t))
        else:
            raise ConfigError(f"{t!r} is not a function, a tool or a toolset")
    return functions, toolsets


def _checked_captions(
    captions: Mapping[str, object], functions: Sequence[Tool]
) -> dict[str, tuple[str | Texts | None, Texts]]:
    """Each tool's caption and ask texts, from `captions` and its own `ask` (captions win)."""
    if not isinstance(captions, Mapping):
        raise ConfigError("captions must map tool names to {locale: text}")
    found = {tool: caption_texts(tool, entry) for tool, entry in captions.items()}
    for t in functions:
        if t.ask is not None:
            done, ask = found.get(t.spec.name, (None, {}))
            own = caption_texts(t.spec.name, {"ask": t.ask})[1]
            found[t.spec.name] = (done, {**own, **ask})
    return found


def _caption_key(catalogs: Catalogs, tool: str, done: str | Mapping[str, str]) -> str:
    """The caption key of `tool`, its texts added to `catalogs` under `activity.<tool>`;
    `ConfigError` for a key no catalog has."""
    if isinstance(done, str):
        if not done.startswith("activity.") or done not in keys():
            raise ConfigError(
                f"the caption of {tool!r} must be an existing activity.* key, got {done!r}"
            )
        return done
    key = f"activity.{tool}"
    for locale, text in done.items():
        catalogs.add(locale, {key: text})
    return key


def _check_keys(messages: Mapping[str, Mapping[str, str]], own: Sequence[str]) -> None:
    """`ConfigError` naming each key of `messages` no catalog knows (a misspelt `ui.sendd`
    would otherwise be kept and never shown); `own`: the caption and ask keys of the
    assistant's tools."""
    known = set(keys()) | set(own)
    unknown = sorted({key for entries in messages.values() for key in entries} - known)
    if unknown:
        raise ConfigError(
            f"messages has unknown keys: {', '.join(unknown)} (docs/design.md §7 lists the keys; "
            "a caption's activity.<tool> key comes with its captions entry)"
        )


def _name_everywhere(
    catalogs: Catalogs, name: str, messages: Mapping[str, Mapping[str, str]]
) -> None:
    """The assistant's `name` as `assistant.name` in every catalog whose messages name it
    not: a named assistant keeps its name where the shipped catalogs would translate
    "Assistant"."""
    if name == "Assistant":
        return
    named = {locale_tag(tag) for tag, entries in messages.items() if "assistant.name" in entries}
    for tag in catalogs.locales:
        if not any(t in named for t in shorter(tag)):
            catalogs.add(tag, {"assistant.name": name})


def _report_missing(catalogs: Catalogs, name: str) -> None:
    """One warning line saying how many keys each locale lacks (shown in English), and the
    command that prints them to translate."""
    gaps = [(tag, len(catalogs.missing(tag))) for tag in catalogs.locales]
    lacking = [(tag, n) for tag, n in gaps if n]
    if lacking:
        log.warning(
            "assistant %r shows keys in English: %s; `turnkeeper messages --locale %s APP`"
            " prints them with their English text to translate",
            name,
            ", ".join(f"{tag} lacks {counted(n, 'key')}" for tag, n in lacking),
            lacking[0][0],
        )
