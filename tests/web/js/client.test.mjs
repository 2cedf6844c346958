// The API client against a fake fetch: every request's shape, and every failure an outcome.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Api, retryAfterMs, troubleKey } from "../../../src/turnkeeper/web/widget/client.js";

/** A fetch that answers each request with the next of `answers` (a Response, or an Error
 *  to throw) and remembers what was asked. */
function fakeFetch(...answers) {
  const asked = [];
  const fetch = async (url, init) => {
    asked.push({ url, init });
    const answer = answers.length > 1 ? answers.shift() : answers[0];
    if (answer instanceof Error) throw answer;
    return typeof answer === "function" ? answer() : answer.clone();
  };
  return { fetch, asked };
}

const json = (body, status = 200, headers = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });

function api(answer, token = () => null) {
  const fake = fakeFetch(answer);
  return { client: new Api("https://chat.example/assistant", { token, fetch: fake.fetch }), ...fake };
}

/** Every call the widget makes, so each is shown to fail alike. */
const CALLS = {
  conversations: (c) => c.conversations(),
  createConversation: (c) => c.createConversation(),
  transcript: (c) => c.transcript("c_1", { limit: 100 }),
  startTurn: (c) => c.startTurn("c_1", "hello", "en"),
  turnState: (c) => c.turnState("t_1", 0),
  cancel: (c) => c.cancel("t_1"),
  decide: (c) => c.decide("t_1", "u_1", true),
  file: (c) => c.file("assistant.json"),
};

describe("every call turns every failure into an outcome", () => {
  for (const [name, call] of Object.entries(CALLS)) {
    test(`${name}: 401 asks to sign in`, async () => {
      const { client } = api(json({ error: "Sign in." }, 401));
      assert.deepEqual(await call(client), { ok: false, kind: "sign-in", status: 401 });
    });

    test(`${name}: no answer at all is offline`, async () => {
      const { client } = api(new TypeError("Failed to fetch"));
      const outcome = await call(client);
      assert.equal(outcome.ok, false);
      assert.equal(outcome.kind, "offline");
      assert.equal(troubleKey(outcome), "ui.connection_trouble");
    });

    test(`${name}: 503 is unavailable, with the retry-after it asks for`, async () => {
      const { client } = api(json({ error: "busy" }, 503, { "retry-after": "1" }));
      const outcome = await call(client);
      assert.deepEqual(outcome, { ok: false, kind: "unavailable", status: 503, retryAfter: 1000 });
      assert.equal(troubleKey(outcome), "errors.ai_unavailable");
    });

    test(`${name}: 500 without retry-after is unavailable, no wait named`, async () => {
      const { client } = api(new Response("oops", { status: 500 }));
      assert.deepEqual(await call(client), {
        ok: false,
        kind: "unavailable",
        status: 500,
        retryAfter: null,
      });
    });

    test(`${name}: 404 is gone`, async () => {
      const { client } = api(json({ error: "No such thing." }, 404));
      assert.deepEqual(await call(client), { ok: false, kind: "gone", status: 404 });
    });

    test(`${name}: 400 is failed`, async () => {
      const { client } = api(json({ error: "Bad." }, 400));
      const outcome = await call(client);
      assert.deepEqual(outcome, { ok: false, kind: "failed", status: 400 });
      assert.equal(troubleKey(outcome), "errors.ai_failed");
    });
  }
});

describe("requests", () => {
  test("the token travels in the Authorization header only, never in the URL", async () => {
    const { client, asked } = api(json({ turn_id: "t_9" }, 202), () => "secret-token");
    const outcome = await client.startTurn("c 1/x", "hi there", "es");
    assert.deepEqual(outcome, { ok: true, status: 202, body: { turn_id: "t_9" } });
    const [{ url, init }] = asked;
    assert.equal(url, "https://chat.example/assistant/api/conversations/c%201%2Fx/turns");
    assert.ok(!url.includes("secret-token"));
    assert.equal(init.method, "POST");
    assert.deepEqual(init.headers, {
      authorization: "Bearer secret-token",
      "content-type": "application/json",
    });
    assert.deepEqual(JSON.parse(init.body), { text: "hi there", locale: "es" });
    assert.equal(init.cache, "no-store");
    assert.equal(init.credentials, "same-origin");
  });

  test("without a token (none yet, or readers sign in) no Authorization header", async () => {
    const { client, asked } = api(json({ conversations: [] }));
    await client.conversations();
    assert.deepEqual(asked[0].init.headers, {});
    assert.equal(asked[0].init.method, undefined); // a GET
  });

  test("the server's files are read without a token", async () => {
    const { client, asked } = api(json({ name: "Shop" }), () => "secret-token");
    const outcome = await client.file("locales/pt-BR.json");
    assert.deepEqual(outcome, { ok: true, status: 200, body: { name: "Shop" } });
    assert.equal(asked[0].url, "https://chat.example/assistant/locales/pt-BR.json");
    assert.deepEqual(asked[0].init, { credentials: "same-origin" });
  });

  test("a transcript's page: the newest, or those before a cursor", async () => {
    const { client, asked } = api(json({ messages: [], before: null }));
    await client.transcript("c_1", { limit: 2 });
    await client.transcript("c_1", { before: 4, limit: 2 });
    assert.deepEqual(
      asked.map((a) => a.url.split("/api/")[1]),
      ["conversations/c_1?limit=2", "conversations/c_1?before=4&limit=2"],
    );
  });

  test("a poll: the state when newer, null for nothing new (204)", async () => {
    const state = { version: 3, messages: [], done: false };
    const { client, asked } = api(json(state));
    assert.deepEqual(await client.turnState("t_1", 2), { ok: true, status: 200, body: state });
    assert.equal(asked[0].url, "https://chat.example/assistant/api/turns/t_1?after=2");
    const quiet = api(new Response(null, { status: 204 })).client;
    assert.deepEqual(await quiet.turnState("t_1", 3), { ok: true, status: 204, body: null });
  });

  test("a new conversation is a 201; another success is not what was asked", async () => {
    const made = { conversation_id: "c_1", token: "tk" };
    const created = await api(json(made, 201)).client.createConversation();
    assert.deepEqual(created, { ok: true, status: 201, body: made });
    const other = await api(json(made, 200)).client.createConversation();
    assert.deepEqual(other, { ok: false, kind: "failed", status: 200 });
  });

  test("a question meeting a running turn is busy, naming that turn when the server does", async () => {
    const named = await api(json({ error: "busy", turn_id: "t_7" }, 409)).client.startTurn("c", "q", "en");
    assert.deepEqual(named, { ok: false, kind: "busy", status: 409, turnId: "t_7" });
    const unnamed = await api(new Response("not json", { status: 409 })).client.startTurn("c", "q", "en");
    assert.deepEqual(unnamed, { ok: false, kind: "busy", status: 409, turnId: null });
  });

  test("cancel and decide send their bodies and read no answer", async () => {
    const { client, asked } = api(new Response("not json", { status: 202 }), () => "tk");
    assert.deepEqual(await client.cancel("t/1"), { ok: true, status: 202, body: null });
    assert.deepEqual(await client.decide("t/1", "u_1", false), { ok: true, status: 202, body: null });
    assert.equal(asked[0].url, "https://chat.example/assistant/api/turns/t%2F1/cancel");
    assert.equal(asked[0].init.body, undefined);
    assert.equal(asked[1].url, "https://chat.example/assistant/api/turns/t%2F1/approvals");
    assert.deepEqual(JSON.parse(asked[1].init.body), { tool_use_id: "u_1", approved: false });
  });

  test("an answer that is not JSON is failed; one that breaks off is offline", async () => {
    const garbled = await api(new Response("<html>", { status: 200 })).client.conversations();
    assert.deepEqual(garbled, { ok: false, kind: "failed", status: 200 });
    const broken = {
      status: 200,
      headers: new Headers(),
      json: async () => {
        throw new TypeError("network error");
      },
      clone() {
        return this;
      },
    };
    assert.equal((await api(broken).client.conversations()).kind, "offline");
  });

  test("by default each request looks fetch up anew (a page may wrap it later)", async () => {
    const saved = globalThis.fetch;
    const client = new Api("https://x.example");
    try {
      globalThis.fetch = async () => json({ conversations: [] });
      assert.equal((await client.conversations()).ok, true);
      globalThis.fetch = async () => json({}, 503);
      assert.equal((await client.conversations()).kind, "unavailable");
    } finally {
      globalThis.fetch = saved;
    }
  });
});

describe("retry-after and what the reader is told", () => {
  test("retry-after in seconds or as a date; anything else names no wait", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(retryAfterMs("1", now), 1000);
    assert.equal(retryAfterMs(" 30 ", now), 30000);
    assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
    assert.equal(retryAfterMs("Wed, 31 Dec 2025 00:00:00 GMT", now), 0);
    assert.equal(retryAfterMs(null, now), null);
    assert.equal(retryAfterMs("", now), null);
    assert.equal(retryAfterMs("soon", now), null);
    assert.equal(retryAfterMs("-1", now), null);
  });

  test("only no answer at all is 'cannot reach'; a 5xx is 'unavailable'; else 'failed'", () => {
    assert.equal(troubleKey({ kind: "offline" }), "ui.connection_trouble");
    assert.equal(troubleKey({ kind: "unavailable", status: 502 }), "errors.ai_unavailable");
    for (const kind of ["failed", "gone", "busy"]) {
      assert.equal(troubleKey({ kind }), "errors.ai_failed", kind);
    }
  });
});

describe("a 429: over a limit", () => {
  test("names the limit and when the reader may ask again", async () => {
    const body = { error: "Too many.", key: "limits.turns_per_minute", retry_after: 41 };
    const { client } = api(json(body, 429, { "retry-after": "41" }));
    const outcome = await client.startTurn("c_1", "hello", "en");
    assert.deepEqual(outcome, {
      ok: false,
      kind: "limited",
      status: 429,
      key: "limits.turns_per_minute",
      retryAfter: 41000,
    });
  });

  test("reads the body's wait when the header is not shown (another origin)", async () => {
    const body = { error: "Spent.", key: "limits.tokens_per_day", retry_after: 3600 };
    const { client } = api(json(body, 429));
    const outcome = await client.startTurn("c_1", "hello", "en");
    assert.equal(outcome.retryAfter, 3600 * 1000);
  });

  test("a 429 without a limit's body still says it is limited, with no time", async () => {
    const { client } = api(new Response("slow down", { status: 429 }));
    const outcome = await client.startTurn("c_1", "hello", "en");
    assert.deepEqual(outcome, { ok: false, kind: "limited", status: 429, key: null, retryAfter: null });
  });
});
