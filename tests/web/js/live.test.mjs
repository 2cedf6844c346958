// The fold of a turn's events into what the widget shows live: text appended per message,
// a retraction, tool steps started and ended, the caption's key, cards; each event once
// (a reconnection's overlap changes nothing); what is published is not drawn live.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { emptyLive, fold, liveItems, movesState } from "../../../src/turnkeeper/web/widget/live.js";

const CATALOG = {
  "ui.working": "Working…",
  "activity.read_file": "Read a file",
  "errors.ai_truncated": "The answer was cut off.",
};
const text = (key) => CATALOG[key] || null;

let seq = 0;
const ev = (type, body = {}) => ({ seq: (seq += 1), type, body });
const folded = (...events) => events.reduce(fold, emptyLive());
const drawnLive = (live, drawn = []) => liveItems(live, new Set(drawn), text);

describe("fold", () => {
  test("deltas are appended per message, in order", () => {
    seq = 0;
    const live = folded(
      ev("turn.started"),
      ev("text.delta", { message: "m2", delta: "Let me " }),
      ev("text.delta", { message: "m2", delta: "look." }),
      ev("text.delta", { message: "m4", delta: "**Found**" }),
    );
    assert.equal(live.seq, 4);
    assert.deepEqual(drawnLive(live), [
      { kind: "text", key: "m2", message: "m2", text: "Let me look." },
      { kind: "text", key: "m4", message: "m4", text: "**Found**" },
    ]);
  });

  test("an event at or before the cursor (a reconnection's overlap) changes nothing", () => {
    seq = 0;
    const first = ev("text.delta", { message: "m2", delta: "Hello" });
    const second = ev("text.delta", { message: "m2", delta: " there" });
    const live = [first, second, first, second].reduce(fold, emptyLive());
    assert.equal(drawnLive(live)[0].text, "Hello there");
    assert.equal(live.seq, 2);
    assert.equal(fold(live, { seq: 2, type: "text.delta", body: { message: "m2", delta: "!" } }), live);
  });

  test("a retracted text gives way to its notice; a key no catalog knows shows nothing", () => {
    seq = 0;
    const streamed = ev("text.delta", { message: "m2", delta: "Half an ans" });
    const cut = folded(streamed, ev("text.retracted", { message: "m2", key: "errors.ai_truncated" }));
    assert.deepEqual(drawnLive(cut), [
      { kind: "notice", key: "m2", message: "m2", text: "The answer was cut off." },
    ]);
    const unknown = folded(streamed, ev("text.retracted", { message: "m2", key: "errors.nope" }));
    assert.deepEqual(drawnLive(unknown), []);
    const stopped = folded(streamed, ev("text.retracted", { message: "m2", key: "" }));
    assert.deepEqual(drawnLive(stopped), []);
  });

  test("text after a retraction streams the bubble anew (a crashed run, taken over)", () => {
    seq = 0;
    const live = folded(
      ev("text.delta", { message: "m2", delta: "first run's" }),
      ev("text.retracted", { message: "m2", key: "" }),
      ev("text.delta", { message: "m2", delta: "second" }),
    );
    assert.deepEqual(drawnLive(live), [{ kind: "text", key: "m2", message: "m2", text: "second" }]);
  });

  test("a tool step shows as it starts and as it ends, in its place among the bubbles", () => {
    seq = 0;
    const before = ev("text.delta", { message: "m2", delta: "Let me look." });
    const started = ev("tool.started", { tool_use_id: "tu1", tool: "read_file", input: {} });
    const running = folded(before, started);
    assert.deepEqual(drawnLive(running).map((item) => [item.kind, item.state, item.text]), [
      ["text", undefined, "Let me look."],
      ["step", "running", "Working…"],
    ]);
    const ended = fold(running, ev("tool.ended", { tool_use_id: "tu1", is_error: false }));
    assert.deepEqual(drawnLive(ended)[1], {
      kind: "step",
      key: "step:tu1",
      use: "tu1",
      state: "ended",
      error: false,
      text: "Read a file",
    });
    const failed = fold(running, ev("tool.ended", { tool_use_id: "tu1", is_error: true }));
    assert.equal(drawnLive(failed)[1].error, true);
  });

  test("a step ended without a caption shows nothing; a second start changes nothing", () => {
    seq = 0;
    const started = ev("tool.started", { tool_use_id: "tu1", tool: "secret_tool", input: {} });
    const live = folded(started, ev("tool.ended", { tool_use_id: "tu1", is_error: false }));
    assert.deepEqual(drawnLive(live), []);
    const again = fold(live, { ...started, seq: 3 });
    assert.equal(again.items[0].state, "ended");
  });

  test("the caption's key; cleared when the run waits or the turn ends", () => {
    seq = 0;
    const live = folded(ev("activity", { key: "activity.read_file" }));
    assert.equal(live.activity, "activity.read_file");
    assert.equal(fold(live, ev("turn.waiting")).end, "waiting");
    assert.equal(fold(live, ev("turn.waiting")).activity, null);
    const ended = fold(live, ev("turn.ended", { status: "finished" }));
    assert.deepEqual([ended.end, ended.activity], ["ended", null]);
    assert.equal(fold(ended, ev("turn.started")).end, null); // a resumed run
  });

  test("the notice that a queued turn waits for a worker is gone once a worker starts it", () => {
    seq = 0;
    const waiting = folded(ev("activity", { key: "notices.waiting_for_worker" }));
    assert.equal(waiting.activity, "notices.waiting_for_worker");
    assert.equal(fold(waiting, ev("turn.started")).activity, null);
  });

  test("a card is drawn once, a card that is not one not at all", () => {
    seq = 0;
    const card = { title: "Order A-1", fields: [{ label: "Status", value: "shipped" }] };
    const live = folded(
      ev("card", { message: "m3", card }),
      ev("card", { message: "m3", card }),
      ev("card", { message: "m4", card: { fields: [] } }),
    );
    assert.deepEqual(drawnLive(live), [{ kind: "card", key: "m3", message: "m3", card }]);
  });

  test("malformed bodies and unknown types only move the cursor", () => {
    seq = 0;
    const live = folded(
      ev("text.delta", { message: 3, delta: "x" }),
      ev("text.delta", { message: "m2" }),
      ev("tool.started", {}),
      ev("something.new", { any: "thing" }),
    );
    assert.deepEqual([live.seq, live.items.length], [4, 0]);
    assert.equal(fold(live, null), live);
    assert.equal(fold(live, { type: "activity", body: {} }), live);
  });
});

describe("liveItems: the published state is the source of truth", () => {
  test("a published bubble is not drawn live; blank text is not drawn", () => {
    seq = 0;
    const live = folded(
      ev("text.delta", { message: "m2", delta: "published already" }),
      ev("text.delta", { message: "m4", delta: "  " }),
      ev("text.delta", { message: "m5", delta: "still streaming" }),
    );
    assert.deepEqual(
      drawnLive(live, ["m1", "m2"]).map((item) => item.key),
      ["m5"],
    );
  });
});

describe("movesState: when the state is read at once", () => {
  test("not for text as it streams, nor a round of tools starting; for every other", () => {
    const moving = ["turn.started", "text.retracted", "tool.ended", "activity", "card"];
    for (const type of [...moving, "approval.requested", "turn.waiting", "turn.ended"]) {
      assert.equal(movesState({ type }), true, type);
    }
    assert.equal(movesState({ type: "text.delta" }), false);
    assert.equal(movesState({ type: "tool.started" }), false);
  });
});
