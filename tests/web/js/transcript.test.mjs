// The transcript renderer's decisions: each message drawn once, the question this tab sent
// claimed rather than drawn again, what each bubble holds, which approval cards come and go.
import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";

import {
  approvalChanges,
  describe,
  plan,
  unseen,
} from "../../../src/turnkeeper/web/widget/transcript.js";

const q1 = { id: "m1", role: "user", text: "question" };
const a1 = { id: "m2", role: "bot", text: "**answer**" };
const q2 = { id: "m3", role: "user", text: "another" };
const a2 = { id: "m4", role: "bot", text: "and its answer" };

suite("unseen: each message once", () => {
  test("a message already drawn is skipped, a new one drawn once", () => {
    const drawn = new Set();
    assert.deepEqual(unseen([q1, a1], drawn), [q1, a1]);
    assert.deepEqual(unseen([q1, a1], drawn), []); // the same state polled again
    assert.deepEqual(unseen([q1, a1, q2, a2], drawn), [q2, a2]); // only what is new
    assert.deepEqual([...drawn], ["m1", "m2", "m3", "m4"]);
  });

  test("an earlier page after the newest: only what is not shown yet", () => {
    const drawn = new Set(["m3", "m4"]);
    assert.deepEqual(unseen([q1, a1, q2], drawn), [q1, a1]);
  });

  test("the same id twice in one answer is drawn once", () => {
    assert.deepEqual(unseen([q1, q1, a1], new Set()), [q1, a1]);
  });

  test("a message without an id cannot be told apart: always drawn", () => {
    const notice = { role: "bot", key: "notices.stopped" };
    const drawn = new Set();
    assert.deepEqual(unseen([notice], drawn), [notice]);
    assert.deepEqual(unseen([notice], drawn), [notice]);
    assert.equal(drawn.size, 0);
  });

  test("no messages, or not a list, is nothing", () => {
    assert.deepEqual(unseen(undefined, new Set()), []);
    assert.deepEqual(unseen(null, new Set()), []);
    assert.deepEqual(unseen([null, 3, q1], new Set()), [q1]);
  });
});

suite("plan: the question this tab sent", () => {
  test("the first reader's message claims the pending question; the rest are drawn", () => {
    const steps = plan([q1, a1, q2], new Set(), { pending: true });
    assert.deepEqual(
      steps.map((s) => [s.action, s.message.id]),
      [
        ["claim", "m1"],
        ["draw", "m2"],
        ["draw", "m3"],
      ],
    );
  });

  test("with no question pending, the reader's messages are drawn", () => {
    const steps = plan([q1, a1], new Set(), null);
    assert.deepEqual(
      steps.map((s) => s.action),
      ["draw", "draw"],
    );
  });

  test("a message drawn already is neither claimed nor drawn", () => {
    const steps = plan([q1, a1, q2], new Set(["m1", "m2"]), { pending: true });
    assert.deepEqual(
      steps.map((s) => [s.action, s.message.id]),
      [["claim", "m3"]],
    );
  });

  test("the assistant's message never claims the question", () => {
    const steps = plan([a1], new Set(), { pending: true });
    assert.deepEqual(
      steps.map((s) => s.action),
      ["draw"],
    );
  });
});

suite("describe: what a bubble holds", () => {
  const catalog = { "notices.stopped": "Stopped.", "errors.ai_truncated": "Cut off." };
  const text = (key) => catalog[key] || null;

  test("the model's text is Markdown; the reader's words are text", () => {
    assert.deepEqual(describe(a1, text), {
      classes: ["bubble", "bot"],
      user: false,
      id: "m2",
      kind: "markdown",
      text: "**answer**",
    });
    const mine = describe({ role: "user", text: "**mine**" }, text);
    assert.equal(mine.kind, "text");
    assert.deepEqual(mine.classes, ["bubble", "user"]);
    assert.equal(mine.id, null);
  });

  test("a notice is its key resolved, as text (never Markdown), an error marked", () => {
    const notice = { id: "m9", role: "bot", key: "errors.ai_truncated", is_error: true };
    assert.deepEqual(describe(notice, text), {
      classes: ["bubble", "bot", "notice", "error"],
      user: false,
      id: "m9",
      kind: "text",
      text: "Cut off.",
    });
  });

  test("nothing to show: a key no catalog knows, empty text, no text", () => {
    assert.equal(describe({ role: "bot", key: "notices.unknown" }, text), null);
    assert.equal(describe({ role: "bot", text: "" }, text), null);
    assert.equal(describe({ role: "bot", text: 42 }, text), null);
    assert.equal(describe({ role: "bot" }, text), null);
  });

  test("a card is drawn as a card; something that is not a card is not drawn", () => {
    const card = { title: "Order A-1001", fields: [] };
    const shown = describe({ id: "m5", role: "bot", card }, text);
    assert.equal(shown.kind, "card");
    assert.equal(shown.card, card);
    assert.deepEqual(shown.classes, ["bubble", "bot", "card"]);
    assert.equal(describe({ role: "bot", card: { fields: [] } }, text), null);
    assert.equal(describe({ role: "bot", card: null }, text), null);
  });
});

suite("approvalChanges: the cards a waiting turn shows", () => {
  const read = { tool_use_id: "u1", tool: "read_file", input: {} };
  const send = { tool_use_id: "u2", tool: "send_mail", input: {} };

  test("new approvals come once; those decided go; those shown stay", () => {
    assert.deepEqual(approvalChanges([], [read, send]), { gone: [], added: [read, send] });
    assert.deepEqual(approvalChanges(["u1", "u2"], [read, send]), { gone: [], added: [] });
    assert.deepEqual(approvalChanges(["u1", "u2"], [send]), { gone: ["u1"], added: [] });
    assert.deepEqual(approvalChanges(["u1"], []), { gone: ["u1"], added: [] });
  });

  test("the same use twice is one card; an approval without a use or tool is none", () => {
    const broken = [read, read, { tool: "x" }, { tool_use_id: "u3" }, null];
    assert.deepEqual(approvalChanges([], broken), { gone: [], added: [read] });
    assert.deepEqual(approvalChanges(["u1"], undefined), { gone: ["u1"], added: [] });
  });
});
