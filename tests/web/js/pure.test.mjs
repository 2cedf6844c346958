// The widget's small pure parts: paging, the pace of polls and retries, the locale, the
// conversation kept in storage, cards, the trouble area.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  approvalWhat,
  cardParts,
  decisionText,
  isHttps,
  summary,
} from "../../../src/turnkeeper/web/widget/cards.js";
import {
  Catalog,
  described,
  negotiate,
  wantedLocales,
} from "../../../src/turnkeeper/web/widget/locale.js";
import { earlierCursor, pageSize, transcriptPath } from "../../../src/turnkeeper/web/widget/paging.js";
import { kept, openable, Saved } from "../../../src/turnkeeper/web/widget/saved.js";
import { pollDelay, retryDelay } from "../../../src/turnkeeper/web/widget/timing.js";
import { Trouble } from "../../../src/turnkeeper/web/widget/trouble.js";

describe("paging", () => {
  test("page-size: a positive number, at most 1000; else 100", () => {
    assert.equal(pageSize("2"), 2);
    assert.equal(pageSize("250"), 250);
    assert.equal(pageSize("5000"), 1000);
    for (const given of [null, "", "0", "-3", "many"]) assert.equal(pageSize(given), 100, given);
  });

  test("the newest page, then the page before the cursor", () => {
    assert.equal(transcriptPath("c_1", { limit: 2 }), "/api/conversations/c_1?limit=2");
    assert.equal(
      transcriptPath("c/1", { before: 4, limit: 2 }),
      "/api/conversations/c%2F1?before=4&limit=2",
    );
  });

  test("the cursor before a page: the answer's `before` while there is an earlier page", () => {
    assert.equal(earlierCursor({ messages: [], before: 4 }), 4);
    assert.equal(earlierCursor({ before: 1 }), 1);
    for (const before of [null, 0, -2, 2.5, "4", undefined]) {
      assert.equal(earlierCursor({ before }), null, String(before));
    }
    assert.equal(earlierCursor(null), null);
  });
});

describe("timing", () => {
  test("polls: 0.3 s, half again as long after each quiet answer, up to 1.5 s", () => {
    const delays = [0, 1, 2, 3, 4, 5, 9].map((quiet) => pollDelay(quiet, false));
    assert.deepEqual(delays, [300, 450, 675, 1012.5, 1500, 1500, 1500]);
  });

  test("polls of a hidden tab: every 5 s", () => {
    assert.equal(pollDelay(0, true), 5000);
    assert.equal(pollDelay(7, true), 5000);
  });

  test("polls while the turn's event stream is read: every 5 s (its events ask sooner)", () => {
    assert.equal(pollDelay(0, false, true), 5000);
    assert.equal(pollDelay(3, true, true), 5000);
    assert.equal(pollDelay(0, false, false), 300);
  });

  test("retries: 0.5, 1, 2, 4 s, then 8 s for good", () => {
    const delays = [1, 2, 3, 4, 5, 6, 20].map((failures) => retryDelay(failures));
    assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
  });

  test("a retry waits at least the server's retry-after, never over 8 s", () => {
    assert.equal(retryDelay(1, 1000), 1000);
    assert.equal(retryDelay(3, 1000), 2000);
    assert.equal(retryDelay(1, 60_000), 8000);
    assert.equal(retryDelay(1, null), 500);
  });
});

describe("locale", () => {
  test("`lang` first, then the browser's languages; blanks dropped", () => {
    const browser = { languages: ["fr-FR", "", "de"], language: "fr-FR" };
    assert.deepEqual(wantedLocales("es", browser), ["es", "fr-FR", "de"]);
    assert.deepEqual(wantedLocales(null, browser), ["fr-FR", "de"]);
    assert.deepEqual(wantedLocales("  ", { language: "pt-BR" }), ["pt-BR"]);
  });

  test("each tag, then its shorter forms, as the server spells it; else English", () => {
    const server = ["en", "es", "pt-BR", "zh-Hant"];
    assert.equal(negotiate(["pt-br"], server), "pt-BR");
    assert.equal(negotiate(["es-MX"], server), "es");
    assert.equal(negotiate(["zh_Hant_TW"], server), "zh-Hant");
    assert.equal(negotiate(["de", "es"], server), "es"); // the first the server has
    assert.equal(negotiate(["pt"], server), "en"); // pt-BR is not pt
    assert.equal(negotiate(["de"], server), "en");
    assert.equal(negotiate([], []), "en");
  });

  test("assistant.json, read warily", () => {
    assert.deepEqual(described({ name: "Shop", locales: ["en", 3, "es"], users: true }), {
      name: "Shop",
      users: true,
      locales: ["en", "es"],
    });
    assert.deepEqual(described({ users: "yes" }), { name: "", users: false, locales: [] });
  });

  test("a label: the reader's catalog, else English, else null (never the key)", () => {
    const catalog = new Catalog(
      "es",
      { "ui.send": "Enviar", "ui.stop": "  " },
      { "ui.send": "Send", "ui.stop": "Stop", "ui.earlier": "Show earlier messages" },
    );
    assert.equal(catalog.text("ui.send"), "Enviar");
    assert.equal(catalog.text("ui.earlier"), "Show earlier messages");
    assert.equal(catalog.text("ui.stop"), null); // blank in the reader's catalog: nothing
    assert.equal(catalog.text("ui.unknown"), null);
    assert.equal(catalog.text("toString"), null);
    assert.equal(catalog.text(undefined), null);
  });
});

describe("the conversation kept", () => {
  function memory() {
    const items = new Map();
    return {
      items,
      getItem: (key) => (items.has(key) ? items.get(key) : null),
      setItem: (key, value) => items.set(key, String(value)),
      removeItem: (key) => items.delete(key),
    };
  }

  test("written, read back, forgotten", () => {
    const storage = memory();
    const saved = new Saved("turnkeeper-chat:https://x", () => storage);
    assert.equal(saved.read(), null);
    saved.write({ conversation_id: "c_1", token: "tk", turn_id: "t_1" });
    assert.deepEqual(JSON.parse(storage.items.get("turnkeeper-chat:https://x")), {
      conversation_id: "c_1",
      token: "tk",
      turn_id: "t_1",
    });
    assert.deepEqual(saved.read(), { conversation_id: "c_1", token: "tk", turn_id: "t_1" });
    saved.write(null);
    assert.equal(storage.items.size, 0);
  });

  test("storage that is off or garbled: nothing kept, nothing thrown", () => {
    const off = () => {
      throw new Error("SecurityError");
    };
    const saved = new Saved("k", off);
    assert.equal(saved.read(), null);
    assert.doesNotThrow(() => saved.write({ conversation_id: "c" }));
    const garbled = memory();
    garbled.setItem("k", "{not json");
    assert.equal(new Saved("k", () => garbled).read(), null);
  });

  test("once its turn is done, only the id and token are kept", () => {
    assert.deepEqual(kept({ conversation_id: "c", token: "t", turn_id: "x" }), {
      conversation_id: "c",
      token: "t",
    });
  });

  test("opened only with an id, and a token unless readers sign in", () => {
    assert.equal(openable({ conversation_id: "c", token: "t" }, false), true);
    assert.equal(openable({ conversation_id: "c" }, false), false);
    assert.equal(openable({ conversation_id: "c" }, true), true);
    assert.equal(openable({ token: "t" }, true), false);
    assert.equal(openable(null, true), false);
  });
});

describe("cards", () => {
  test("a card's parts: only text, only lists, only https: links", () => {
    const card = {
      title: "Order A-1001",
      fields: [{ label: "Status", value: "shipped" }, { label: "n", value: 3 }, null],
      columns: ["Item", 2, "Qty"],
      rows: [["Teapot", 1], "not a row", ["Cup", "2"]],
      links: [
        { text: "Track", url: "https://carrier.example/t" },
        { text: "Bad", url: "javascript:alert(1)" },
        { text: "Plain", url: "http://carrier.example/t" },
        { text: "Broken", url: "https://" },
      ],
    };
    assert.deepEqual(cardParts(card), {
      title: "Order A-1001",
      fields: [{ label: "Status", value: "shipped" }],
      columns: ["Item", "Qty"],
      rows: [
        ["Teapot", ""],
        ["Cup", "2"],
      ],
      links: [{ text: "Track", url: "https://carrier.example/t" }],
    });
    assert.equal(cardParts({ fields: [] }), null);
    assert.equal(cardParts("Order"), null);
  });

  test("only an https: address is a card's link", () => {
    assert.equal(isHttps("https://x.example/"), true);
    for (const url of ["http://x.example/", "javascript:alert(1)", "//x.example", "", 3]) {
      assert.equal(isHttps(url), false, String(url));
    }
  });

  test("a tool's input: `name: value` lines, cut at 300 characters", () => {
    assert.equal(summary({ path: "todo.txt", lines: [1, 2] }), "path: todo.txt\nlines: [1,2]");
    assert.equal(summary("plain"), "plain");
    assert.equal(summary(undefined), "undefined");
    const long = summary({ text: "x".repeat(400) });
    assert.equal(long.length, 300);
    assert.ok(long.endsWith("…"));
  });

  test("what an approval asks: its ask text under the title, else Run {tool}?, never its caption", () => {
    const catalog = {
      "ask.send_mail": "Send an email",
      "activity.send_mail": "Sent an email",
      "ui.approval_title": "The assistant wants to do this:",
      "ui.approval_unknown": "Run {tool}?",
    };
    const text = (key) => catalog[key] || null;
    const approval = { tool_use_id: "u", tool: "send_mail", key: "activity.send_mail" };
    assert.deepEqual(approvalWhat({ ...approval, ask: "ask.send_mail" }, text), {
      title: "The assistant wants to do this:",
      what: "Send an email",
    });
    assert.deepEqual(approvalWhat({ ...approval, ask: "ask.other" }, text), {
      title: "",
      what: "Run send_mail?",
    });
    assert.deepEqual(approvalWhat(approval, () => null), { title: "", what: "send_mail" });
  });

  test("a decision reads as the reader's: what they approved or denied", () => {
    const catalog = {
      "ask.send_mail": "Send an email",
      "ui.you_approved": "You approved: {action}",
      "ui.you_denied": "You denied: {action}",
    };
    const text = (key) => catalog[key] || null;
    const decided = { tool: "send_mail", ask: "ask.send_mail" };
    assert.equal(decisionText({ ...decided, approved: true }, text), "You approved: Send an email");
    assert.equal(decisionText({ ...decided, approved: false }, text), "You denied: Send an email");
    assert.equal(decisionText({ tool: "wipe", ask: "ask.wipe", approved: false }, text), "You denied: wipe");
    assert.equal(decisionText({ approved: true }, text), null);
  });
});

describe("the trouble area", () => {
  const catalog = {
    "ui.connection_trouble": "Cannot reach the assistant.",
    "errors.ai_unavailable": "Unavailable.",
    "errors.ai_failed": "Something went wrong.",
    "ui.sign_in": "Sign in.",
    "ui.busy": "Busy in another tab.",
  };
  const make = () => new Trouble({ textContent: "", hidden: true }, (key) => catalog[key] || null);

  test("failures are said after three in a row; one success hides them", () => {
    const trouble = make();
    assert.equal(trouble.failed({ kind: "offline" }), true);
    assert.equal(trouble.failed({ kind: "offline" }), true);
    assert.equal(trouble.area.hidden, true);
    assert.equal(trouble.area.textContent, "Cannot reach the assistant.");
    trouble.failed({ kind: "unavailable", status: 503, retryAfter: 1000 });
    assert.equal(trouble.area.hidden, false);
    assert.equal(trouble.area.textContent, "Unavailable.");
    assert.equal(trouble.failures, 3);
    trouble.cleared();
    assert.equal(trouble.area.hidden, true);
    assert.equal(trouble.failures, 0);
  });

  test("what the reader asked for is said at the first failure", () => {
    const trouble = make();
    trouble.failed({ kind: "failed", status: 400 }, true);
    assert.equal(trouble.area.hidden, false);
    assert.equal(trouble.area.textContent, "Something went wrong.");
  });

  test("a 401 asks to sign in at once, and says not to retry", () => {
    const trouble = make();
    trouble.failed({ kind: "offline" });
    assert.equal(trouble.failed({ kind: "sign-in" }), false);
    assert.equal(trouble.area.textContent, "Sign in.");
    assert.equal(trouble.area.hidden, false);
    assert.equal(trouble.failures, 0);
  });

  test("another tab's turn is said until it ends, over successes", () => {
    const trouble = make();
    trouble.busy("t_1");
    assert.equal(trouble.area.textContent, "Busy in another tab.");
    assert.equal(trouble.area.hidden, false);
    trouble.cleared();
    assert.equal(trouble.area.hidden, false);
    assert.equal(trouble.area.textContent, "Busy in another tab.");
    trouble.reset();
    assert.equal(trouble.area.hidden, true);
    assert.equal(trouble.waiting, false);
  });

  test("a busy answer that names no turn is said once, not waited on", () => {
    const trouble = make();
    trouble.busy(null);
    assert.equal(trouble.area.hidden, false);
    trouble.cleared();
    assert.equal(trouble.area.hidden, true);
  });
});

describe("a limit's sentence", async () => {
  const { limitSentence } = await import("../../../src/turnkeeper/web/widget/trouble.js");
  const catalog = {
    "limits.tokens_per_day": "You have used up today's allowance of the assistant.",
    "ui.ask_again_at": "You can ask again at {time}.",
    "errors.ai_failed": "Something went wrong.",
  };
  const text = (key) => catalog[key] ?? null;
  const noon = Date.UTC(2026, 11, 2, 12, 0, 0);

  test("says the limit, then the time of day the reader may ask again", () => {
    const outcome = { kind: "limited", key: "limits.tokens_per_day", retryAfter: 2 * 3600 * 1000 };
    const said = limitSentence(outcome, text, "en", noon);
    const at = new Date(noon + 2 * 3600 * 1000).toLocaleTimeString("en", {
      hour: "2-digit",
      minute: "2-digit",
    });
    assert.equal(said, `You have used up today's allowance of the assistant. You can ask again at ${at}.`);
  });

  test("without a wait, only the limit; without a key, that something went wrong", () => {
    assert.equal(
      limitSentence({ key: "limits.tokens_per_day", retryAfter: null }, text, "en", noon),
      "You have used up today's allowance of the assistant.",
    );
    assert.equal(limitSentence({ key: null, retryAfter: null }, text, "en", noon), "Something went wrong.");
  });
});
