// The event stream's parser: whole events from pieces cut anywhere, as the HTML standard
// reads a text/event-stream; and a turn's event from a parsed one.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { SseParser, turnEvent } from "../../../src/turnkeeper/web/widget/sse.js";

const STREAM =
  ": keep-alive\r\n\r\nid: 1\r\nevent: turn.started\r\ndata: {}\r\n\r\n" +
  'id: 2\nevent: text.delta\ndata: {"delta": "Hel", "message": "m2"}\n\n' +
  'id: 3\revent: text.delta\rdata: {"delta": "lo", "message": "m2"}\r\r: a CR at the end waits for what follows it\n';

const parsed = (pieces) => {
  const parser = new SseParser();
  return pieces.flatMap((piece) => parser.push(piece));
};

describe("SseParser", () => {
  test("a stream read whole: each event once, comments skipped, any line ending", () => {
    assert.deepEqual(parsed([STREAM]), [
      { id: "1", event: "turn.started", data: "{}" },
      { id: "2", event: "text.delta", data: '{"delta": "Hel", "message": "m2"}' },
      { id: "3", event: "text.delta", data: '{"delta": "lo", "message": "m2"}' },
    ]);
  });

  test("the same stream cut at every place, in two pieces and one character at a time", () => {
    const whole = parsed([STREAM]);
    for (let cut = 0; cut <= STREAM.length; cut += 1) {
      assert.deepEqual(parsed([STREAM.slice(0, cut), STREAM.slice(cut)]), whole, `cut at ${cut}`);
    }
    assert.deepEqual(parsed([...STREAM]), whole);
  });

  test("a CRLF split between two pieces is one line end, not two", () => {
    assert.deepEqual(parsed(["data: a\r", "\ndata: b\r", "\n\r", "\n"]), [
      { id: "", event: "message", data: "a\nb" },
    ]);
  });

  test("an event not ended by a blank line is not dispatched yet", () => {
    const parser = new SseParser();
    assert.deepEqual(parser.push("id: 7\nevent: activity\ndata: {}\n"), []);
    assert.deepEqual(parser.push("\n"), [{ id: "7", event: "activity", data: "{}" }]);
  });

  test("no space after the colon, a field without a value, an event without data", () => {
    assert.deepEqual(parsed(["data:x\ndata\nevent:e\n\nevent: lone\n\n"]), [
      { id: "", event: "e", data: "x\n" },
    ]);
  });

  test("the last id stays the stream's until another; an id with a NUL is ignored", () => {
    assert.deepEqual(parsed(["id: 4\ndata: a\n\ndata: b\n\nid: 5\0\ndata: c\n\n"]), [
      { id: "4", event: "message", data: "a" },
      { id: "4", event: "message", data: "b" },
      { id: "4", event: "message", data: "c" },
    ]);
  });

  test("a byte order mark at the start is not part of the first field", () => {
    assert.deepEqual(parsed(["\ufeffdata: x\n\n"]), [{ id: "", event: "message", data: "x" }]);
  });
});

describe("turnEvent", () => {
  test("the seq from the id, the type from the event's name, the body from its data", () => {
    const event = { id: "12", event: "tool.ended", data: '{"tool_use_id": "t", "is_error": false}' };
    assert.deepEqual(turnEvent(event), {
      seq: 12,
      type: "tool.ended",
      body: { tool_use_id: "t", is_error: false },
    });
  });

  test("anything not a turn's event is null", () => {
    for (const [id, data] of [
      ["", "{}"],
      ["0", "{}"],
      ["-1", "{}"],
      ["1.5", "{}"],
      ["x", "{}"],
      ["3", "not json"],
      ["3", "[1]"],
      ["3", "null"],
      ["3", '"text"'],
    ]) {
      assert.equal(turnEvent({ id, event: "activity", data }), null, `${id} ${data}`);
    }
  });
});
