"""Folding a Chat Completions stream: every real recorded stream folds into the body its
chunks describe, every real plain body streamed folds back into itself, and cut streams and
error chunks are errors, not answers.

Streams are real recordings of OpenAI, Azure, DeepSeek, Alibaba, Mistral, Groq, xAI and
Perplexity (tests/recordings) unless marked CONSTRUCTED.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.streams import chat_chunks
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers import chat_api
from turnkeeper.providers.chat_stream import ChatFold

from .wire_server import RECORDED, corpus, recording

CHAT_PROVIDERS = ("openai", "azure", "deepseek", "alibaba", "mistral", "groq", "xai", "perplexity")


def chat_rows(*, streaming: bool, folder: Path = RECORDED) -> list[str]:
    """Real (not suspect_synthetic), complete Chat Completions recordings of any vendor."""
    rows = json.loads((folder / "index.json").read_text("utf-8"))["interactions"]
    return [
        r["file"]
        for r in rows
        if not r["suspect_synthetic"]
        and r["api"] == "chat"
        and r["streaming"] == streaming
        and r["kind"] != "error"
        and r.get("stream_complete", True)
    ]


def chunks_of(name: str, folder: Path = RECORDED) -> list[dict[str, Any]]:
    return [e["data"] for e in recording(name, folder)["response"]["events"]]


def folded(
    chunks: list[dict[str, Any]], *, done: bool = True, texts: list[str] | None = None
) -> dict[str, Any]:
    fold = ChatFold(None if texts is None else texts.append)
    for chunk in chunks:
        fold.feed(json.dumps(chunk))
    if done:
        fold.feed("[DONE]")
    return fold.body()


def reference(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What the chunks say of the first choice and the usage, computed without the fold."""
    content: list[str] = []
    arguments: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    ids: dict[int, str] = {}
    finish, usage = None, None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for position, call in enumerate(delta.get("tool_calls") or []):
                n = call.get("index", position)
                function = call.get("function") or {}
                arguments.setdefault(n, []).append(function.get("arguments") or "")
                names[n] = names.get(n, "") + (function.get("name") or "")
                ids[n] = ids.get(n) or call.get("id") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "content": "".join(content),
        "calls": [(ids[n], names[n], "".join(arguments[n])) for n in sorted(arguments)],
        "finish_reason": finish,
        "usage": usage,
    }


def check_folded_fields(name: str, folder: Path = RECORDED) -> None:
    chunks = chunks_of(name, folder)
    expected = reference(chunks)
    texts: list[str] = []
    body = folded(chunks, texts=texts)
    (choice,) = body["choices"]
    message = choice["message"]
    assert body["object"] == "chat.completion", name
    named = [c for c in chunks if c.get("id")]  # Azure's first chunk has an empty id
    assert (body["id"], body["model"]) == (named[0]["id"], named[-1]["model"]), name
    assert (message.get("content") or "") == expected["content"], name
    calls = [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls") or []
    ]
    assert calls == expected["calls"], name
    assert all("index" not in c for c in message.get("tool_calls") or []), name
    assert choice["finish_reason"] == expected["finish_reason"] is not None, name
    assert body["usage"] == expected["usage"] is not None, name
    assert "obfuscation" not in body, name
    reply = chat_api.parse_reply(body)
    assert "".join(texts) == reply.text == expected["content"], name
    assert [u.input for u in reply.tool_uses] == [json.loads(c[2] or "{}") for c in calls], name


# ---- the real streams -------------------------------------------------------------


@pytest.mark.parametrize("name", chat_rows(streaming=True))
def test_a_real_stream_folds_into_the_body_its_chunks_describe(name: str) -> None:
    check_folded_fields(name)


def test_every_stream_of_the_corpus_folds_into_the_body_its_chunks_describe() -> None:
    """The same check over the larger corpus, when TURNKEEPER_REAL_RESPONSES names it."""
    folder = corpus()
    names = chat_rows(streaming=True, folder=folder)
    assert names
    for name in names:
        check_folded_fields(name, folder)


def test_the_recordings_cover_what_servers_do_differently() -> None:
    """The vendors' quirks the fold is held to are in the recordings the tests run on."""
    streams = {name: chunks_of(name) for name in chat_rows(streaming=True)}
    assert {recording(n)["provider"] for n in streams} >= set(CHAT_PROVIDERS) - {"azure"}

    def fragments(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            call
            for c in chunks
            for choice in c.get("choices") or []
            for call in (choice.get("delta") or {}).get("tool_calls") or []
        ]

    every = [f for chunks in streams.values() for f in fragments(chunks)]
    assert any(f.get("id") == "" for f in every), "an empty id after the first (Alibaba)"
    assert any("index" not in f for f in every), "a tool call without an index (Mistral)"
    assert any("obfuscation" in c for cs in streams.values() for c in cs), "OpenAI's padding"
    assert any(sum(1 for c in cs if c.get("usage")) > 1 for cs in streams.values()), (
        "usage on every chunk (Perplexity)"
    )


def test_the_openai_stream_keeps_every_field_of_its_chunks() -> None:
    name = "vercel__ai/openai__chat__openai-text__chunks.json"
    chunks = chunks_of(name)
    body = folded(chunks)
    first, last = chunks[0], chunks[-1]
    assert body == {
        "id": first["id"],
        "object": "chat.completion",
        "created": first["created"],
        "model": first["model"],
        "service_tier": "default",
        "system_fingerprint": first["system_fingerprint"],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": reference(chunks)["content"],
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": last["usage"],
    }


def test_vendor_fields_are_kept_and_merged() -> None:
    groq = chunks_of("vercel__ai/groq__groq-tool-call__chunks.json")
    body = folded(groq)
    x_groq: dict[str, Any] = {}
    for chunk in groq:
        x_groq |= chunk.get("x_groq") or {}
    assert body["x_groq"] == x_groq
    assert "id" in x_groq
    assert "usage" in x_groq
    perplexity = chunks_of("vercel__ai/perplexity__perplexity-citations__chunks.json")
    assert folded(perplexity)["citations"] == perplexity[-1]["citations"]  # replaced, not piled up


# ---- a plain body, streamed, folds back into itself --------------------------------


def without_index(body: dict[str, Any]) -> dict[str, Any]:
    """A plain body as its stream can give it back: a tool call's `index` is stream framing
    (DeepSeek and Alibaba put it in their plain bodies too; OpenAI's have none)."""
    body = copy.deepcopy(body)
    for choice in body["choices"]:
        for call in choice["message"].get("tool_calls") or []:
            call.pop("index", None)
    return body


@pytest.mark.parametrize("name", chat_rows(streaming=False))
def test_a_real_plain_body_streamed_folds_back_into_itself(name: str) -> None:
    body = recording(name)["response"]["body"]
    assert folded(chat_chunks(body)) == without_index(body)


# ---- cut streams, error chunks ---------------------------------------------------------


def test_a_stream_cut_before_its_end_is_unavailable() -> None:
    chunks = chunks_of("vercel__ai/deepseek__chat__deepseek-tool-call__chunks.json")
    for cut in (1, len(chunks) // 2, len(chunks) - 2):
        with pytest.raises(ProviderUnavailable, match=r"before data: \[DONE\]"):
            folded(chunks[:cut], done=False)
    with pytest.raises(ProviderFailed, match="no choices"):
        folded([], done=True)  # [DONE] and nothing before it: no answer, yet not cut short


def test_a_stream_without_done_is_whole_once_finished_and_counted() -> None:
    """Some servers end without `[DONE]`: the finish reason and the usage chunk end it."""
    chunks = chunks_of("vercel__ai/mistral__mistral-tool-call__chunks.json")
    assert folded(chunks, done=False) == folded(chunks, done=True)
    without_usage = [{**c, "usage": None} for c in chunks]
    with pytest.raises(ProviderUnavailable):
        folded(without_usage, done=False)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        # CONSTRUCTED: OpenAI's error object, sent as a chunk in the middle of a 200 stream.
        ({"message": "The server had an error", "type": "server_error"}, ProviderUnavailable),
        ({"message": "Rate limit reached", "code": "rate_limit_exceeded"}, ProviderUnavailable),
        ({"message": "bad", "type": "invalid_request_error"}, ProviderFailed),
    ],
)
def test_an_error_chunk_midway_is_the_error_it_describes(
    error: dict[str, Any], kind: type[Exception]
) -> None:
    chunks = chunks_of("vercel__ai/openai__chat__openai-text__chunks.json")
    with pytest.raises(kind, match=error["message"]):
        folded([*chunks[:3], {"error": error}, *chunks[3:]])


def test_garbled_chunks_are_failed() -> None:
    fold = ChatFold()
    with pytest.raises(ProviderFailed, match="not JSON"):
        fold.feed("{not json")
    with pytest.raises(ProviderFailed, match="out of order"):
        ChatFold().add({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 3}]}}]})


def test_only_the_first_choices_content_is_answer_text() -> None:
    """Reasoning and tool arguments are never answer text; nor is a second choice's content."""
    reasoning = chunks_of("vercel__ai/xai__xai-text__chunks.json")
    texts: list[str] = []
    body = folded(reasoning, texts=texts)
    message = body["choices"][0]["message"]
    assert message["reasoning_content"]
    assert message["reasoning_content"] not in "".join(texts)
    assert texts == [message["content"]]  # xAI sends its answer in one delta
    pieces: list[str] = []
    openai = folded(chunks_of("vercel__ai/openai__chat__openai-text__chunks.json"), texts=pieces)
    assert "".join(pieces) == openai["choices"][0]["message"]["content"]
    assert len(pieces) > 100
    assert "" not in pieces
    calls: list[str] = []
    folded(chunks_of("vercel__ai/deepseek__chat__deepseek-tool-call__chunks.json"), texts=calls)
    assert calls == []
    # CONSTRUCTED: a second choice (n=2) streamed alongside the first
    second = [{**c, "choices": [{**ch, "index": 1} for ch in c["choices"]]} for c in reasoning]
    others: list[str] = []
    two = folded([*reasoning, *second], texts=others)
    assert [c["index"] for c in two["choices"]] == [0, 1]
    assert "".join(others) == message["content"]
