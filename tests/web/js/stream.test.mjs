// Watching a turn's event stream: read to its end, read on from the last event after a
// break (no gap, no duplicate), given up for polling when it cannot be had.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Api } from "../../../src/turnkeeper/web/widget/client.js";
import { MOST_FAILURES, nextStep, read, Watch } from "../../../src/turnkeeper/web/widget/stream.js";

const frame = (seq, type, body = {}) => `id: ${seq}\r\nevent: ${type}\r\ndata: ${JSON.stringify(body)}\r\n\r\n`;
const body = (...pieces) =>
  new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(new TextEncoder().encode(piece));
      controller.close();
    },
  });
const eventStream = (...pieces) =>
  new Response(body(...pieces), { headers: { "content-type": "text/event-stream; charset=utf-8" } });

describe("nextStep", () => {
  test("an ended turn stops; a waiting one waits; a stop here stops", () => {
    assert.deepEqual(nextStep({ kind: "ended" }, 0), { action: "stop" });
    assert.deepEqual(nextStep({ kind: "aborted" }, 1), { action: "stop" });
    assert.deepEqual(nextStep({ kind: "waiting" }, 0), { action: "wait" });
  });

  test("a break, no answer, a 5xx: read on, backing off, no sooner than retry-after", () => {
    assert.deepEqual(nextStep({ kind: "closed" }, 1), { action: "reconnect", delay: 500 });
    assert.deepEqual(nextStep({ ok: false, kind: "offline" }, 2), { action: "reconnect", delay: 1000 });
    const busy = { ok: false, kind: "unavailable", status: 503, retryAfter: 3000 };
    assert.deepEqual(nextStep(busy, 1), { action: "reconnect", delay: 3000 });
  });

  test("after MOST_FAILURES in a row, or any other refusal: the state is polled alone", () => {
    assert.deepEqual(nextStep({ kind: "closed" }, MOST_FAILURES), { action: "poll" });
    assert.deepEqual(nextStep({ ok: false, kind: "unavailable" }, MOST_FAILURES), { action: "poll" });
    for (const kind of ["gone", "sign-in", "failed", "busy"]) {
      assert.deepEqual(nextStep({ ok: false, kind }, 1), { action: "poll" }, kind);
    }
  });
});

describe("read", () => {
  test("each turn event, in order, to turn.ended; what follows it is not read", async () => {
    const seen = [];
    const stream = body(
      ": keep-alive\r\n\r\n",
      frame(1, "turn.started"),
      frame(2, "text.delta", { message: "m2", delta: "Hé" }).slice(0, 30),
      frame(2, "text.delta", { message: "m2", delta: "Hé" }).slice(30),
      frame(3, "turn.ended", { status: "finished" }),
      frame(4, "text.delta", { message: "m9", delta: "never" }),
    );
    assert.deepEqual(await read(stream, (e) => seen.push(e)), { kind: "ended" });
    assert.deepEqual(
      seen.map((e) => [e.seq, e.type]),
      [
        [1, "turn.started"],
        [2, "text.delta"],
        [3, "turn.ended"],
      ],
    );
    assert.equal(seen[1].body.delta, "Hé");
  });

  test("a run that waits ends at turn.waiting; a stream that just stops is closed", async () => {
    assert.deepEqual(await read(body(frame(1, "turn.waiting")), () => {}), { kind: "waiting" });
    assert.deepEqual(await read(body(frame(1, "turn.started")), () => {}), { kind: "closed" });
  });
});

describe("Watch", () => {
  const watched = (responses) => {
    const asked = [];
    const fetch = async (url, init) => {
      asked.push({ url, init });
      const next = responses.shift();
      if (next instanceof Error) throw next;
      return next;
    };
    const client = new Api("https://chat.example", { token: () => "tok", fetch });
    return { asked, client };
  };

  const until = (watch, seen) =>
    new Promise((resolve) => {
      watch.ended = (action) => resolve(action);
      watch.event = (e) => seen.push(e.seq);
    });

  test("a break is read on from after the last event: no gap, no duplicate", async () => {
    const { asked, client } = watched([
      eventStream(frame(1, "turn.started"), frame(2, "text.delta", { message: "m2", delta: "a" })),
      eventStream(frame(2, "text.delta", { message: "m2", delta: "a" }), frame(3, "turn.ended")),
    ]);
    const seen = [];
    const watch = new Watch(client, "t_1", { event: () => {} });
    const ended = until(watch, seen);
    watch.resume();
    assert.equal(await ended, "stop");
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual(
      asked.map((a) => a.url),
      ["https://chat.example/api/turns/t_1/events?after=0", "https://chat.example/api/turns/t_1/events?after=2"],
    );
    assert.equal(asked[0].init.headers.authorization, "Bearer tok"); // the token, as every request
    assert.equal(asked[0].init.headers.accept, "text/event-stream");
  });

  test("a route that answers 404 or not with an event stream: polled at once", async () => {
    for (const refusal of [
      new Response("{}", { status: 404 }),
      new Response("<html>", { status: 200, headers: { "content-type": "text/html" } }),
    ]) {
      const { asked, client } = watched([refusal]);
      const watch = new Watch(client, "t_1", { event: () => {} });
      const ended = until(watch, []);
      watch.resume();
      assert.equal(await ended, "poll");
      assert.equal(asked.length, 1);
    }
  });

  test("a route that keeps failing is given up after MOST_FAILURES tries", { timeout: 10_000 }, async () => {
    const failing = () => new Response("{}", { status: 500 });
    const { asked, client } = watched([failing(), new Error("offline"), failing(), failing()]);
    const watch = new Watch(client, "t_1", { event: () => {} });
    const ended = until(watch, []);
    watch.resume();
    assert.equal(await ended, "poll");
    assert.equal(asked.length, MOST_FAILURES);
  });

  test("stopped, it reads nothing more and does not say it ended", async () => {
    const { client } = watched([eventStream(frame(1, "turn.started"))]);
    let ended = null;
    const seen = [];
    const watch = new Watch(client, "t_1", { event: (e) => seen.push(e), ended: (a) => (ended = a) });
    watch.stop();
    watch.resume();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual([seen, ended], [[], null]);
  });
});
