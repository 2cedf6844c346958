/**
 * The transcript renderer: the log's bubbles, drawn once each. The decisions are pure
 * (`unseen`, `plan`, `describe`, `approvalChanges`); `Transcript` draws them in the log.
 *
 * What the model wrote is shown as Markdown (markdown.js); everything else (the reader's
 * words, notices, a tool's card) is set as text. A notice is never Markdown.
 */

import {
  approvalCard,
  cardElement,
  cardParts,
  decisionText,
  make,
  waitingApprovals,
} from "./cards.js";
import { growing } from "./growing.js";
import { liveItems } from "./live.js";
import { markdownNodes } from "./markdown.js";
import { ratingElement } from "./rating.js";

/**
 * The messages of `messages` not drawn yet, in order; each id is marked in `drawn` as it
 * is chosen, so a message is drawn once however often it is published (every poll, a
 * reload, an earlier page). A message without an id cannot be told apart: always new.
 */
export function unseen(messages, drawn) {
  const fresh = [];
  for (const message of Array.isArray(messages) ? messages : []) {
    if (!message || typeof message !== "object") continue;
    if (message.id && drawn.has(message.id)) continue;
    if (message.id) drawn.add(message.id);
    fresh.push(message);
  }
  return fresh;
}

/**
 * What to do with each new message: "draw" it, or "claim" (the first reader's message
 * while the question this tab sent is `pending`: that bubble is already drawn, it only
 * gets the message's id).
 */
export function plan(messages, drawn, pending) {
  let waiting = Boolean(pending);
  return unseen(messages, drawn).map((message) => {
    if (waiting && message.role === "user") {
      waiting = false;
      return { action: "claim", message };
    }
    return { action: "draw", message };
  });
}

/**
 * How a published message is drawn: its bubble's classes, whether the reader wrote it, its
 * id, and what it holds: a tool's `card`; the model's text as `markdown`; the reader's
 * words, or a notice (`key`, resolved by `text`), as `text`. Null when there is nothing to
 * show (not a card, no text, a key no catalog knows).
 */
export function describe(message, text) {
  const user = message.role === "user";
  const classes = ["bubble", user ? "user" : "bot"];
  if ("key" in message) classes.push("notice");
  if (message.card) classes.push("card");
  if (message.is_error) classes.push("error");
  const id = message.id || null;
  if ("decision" in message) {
    const said = decisionText(message.decision, text);
    const line = ["bubble", "decision"]; // a small line, not a question of the reader's
    return said ? { classes: line, user, id, kind: "text", text: said } : null;
  }
  if ("card" in message) {
    return cardParts(message.card) ? { classes, user, id, kind: "card", card: message.card } : null;
  }
  const said = "text" in message ? message.text : text(message.key);
  if (typeof said !== "string" || !said) return null;
  const kind = user || "key" in message ? "text" : "markdown";
  return { classes, user, id, kind, text: said };
}

/** Which approval cards go (`gone`: ids of those `shown` no longer waited for) and which
 *  come (`added`: approvals waited for and not shown yet, once each). */
export function approvalChanges(shown, approvals) {
  const waiting = waitingApprovals(approvals);
  const ids = new Set(waiting.map((approval) => approval.tool_use_id));
  const present = new Set(shown);
  const added = [];
  for (const approval of waiting) {
    if (present.has(approval.tool_use_id)) continue;
    present.add(approval.tool_use_id);
    added.push(approval);
  }
  return { gone: shown.filter((id) => !ids.has(id)), added };
}

export class Transcript {
  /** The bubbles in `log`: `text`, a catalog's lookup; `name`, the assistant's, on its
   *  bubbles; `markdown`, markdown-it configured (markdown.js), or null for plain text. */
  constructor(log, { text, name, markdown }) {
    this.log = log;
    this.text = text;
    this.name = name;
    this.markdown = markdown;
    this.drawn = new Set();
    this.shownLive = new Map(); // key (liveItems) -> {element, sign}
    this.liveState = null;
    this.frame = 0;
  }

  /** Nothing shown: another conversation is about to be. */
  clear() {
    this.endLive();
    this.log.replaceChildren();
    this.drawn.clear();
  }

  /** The question this tab just sent, drawn at once (it has no id until published). */
  question(text) {
    return this.append(this.bubble({ role: "user", text }));
  }

  /** Published messages below those shown, each once; the question `pending` (if any) is
   *  claimed by the first reader's message. Whether it was. */
  show(messages, pending = null) {
    let claimed = false;
    for (const { action, message } of plan(messages, this.drawn, pending)) {
      if (action === "claim") {
        if (message.id) pending.dataset.id = message.id;
        claimed = true;
      } else {
        this.published(this.bubble(message), message.id);
      }
    }
    return claimed;
  }

  /** A published bubble: in place of its live one, if drawn; else above the live bubbles
   *  that come after it (a bubble's id is its place: m3 before m4), else at the bottom. */
  published(item, id) {
    const live = id && this.shownLive.get(id);
    if (live) {
      this.shownLive.delete(id);
      if (item) live.element.replaceWith(item);
      else live.element.remove();
      return;
    }
    const place = (key) => (/^m\d+$/.test(key || "") ? Number(key.slice(1)) : Number.NaN);
    const after = [...this.shownLive].find(([key, { element }]) => {
      return element.isConnected && place(key) > place(id);
    });
    if (item && after) this.log.insertBefore(item, after[1].element);
    else this.append(item);
  }

  // ---- live: what the turn's events show before its published state does (live.js) ----

  /** The turn's live state (live.js's `fold`), drawn at the next animation frame: however
   *  many events come between two frames, the growing text is rendered once per frame. */
  live(state) {
    this.liveState = state;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.drawLive());
  }

  /** Each live item drawn, changed or gone; what is published is not (the `drawn` set). */
  drawLive() {
    this.frame = 0;
    if (!this.liveState) return;
    const items = liveItems(this.liveState, this.drawn, this.text);
    const keys = new Set(items.map((item) => item.key));
    for (const [key, shown] of this.shownLive) {
      if (keys.has(key)) continue;
      shown.element.remove();
      this.shownLive.delete(key);
    }
    for (const item of items) {
      const sign = JSON.stringify([item.kind, item.text, item.state, item.error]);
      const shown = this.shownLive.get(item.key);
      if (shown && shown.sign === sign) continue;
      const element = this.liveElement(item);
      if (shown) shown.element.replaceWith(element);
      else this.log.append(element);
      this.shownLive.set(item.key, { element, sign });
    }
    this.log.scrollTop = this.log.scrollHeight;
  }

  /** A live item's element: a bubble (`.live`), as a published one would be drawn, its
   *  growing Markdown closed where it is open (growing.js); or a tool step. */
  liveElement(item) {
    if (item.kind === "step") {
      const step = make("li", `step ${item.state}${item.error ? " error" : ""}`);
      step.dataset.use = item.use;
      step.append(make("span", "text", item.text));
      return step;
    }
    const classes = { text: "", notice: " notice error", card: " card" }[item.kind];
    const element = make("li", `bubble bot live${classes}`);
    element.dataset.id = item.message;
    let content;
    if (item.kind === "card") content = cardElement(item.card);
    else if (item.kind === "notice") content = make("p", "text", item.text);
    else content = this.content({ kind: "markdown", text: growing(item.text) });
    element.append(make("span", "who", this.name), content);
    return element;
  }

  /** The turn is done (or no longer followed): what its published state did not take,
   *  live bubbles and steps, goes. */
  endLive() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.liveState = null;
    for (const { element } of this.shownLive.values()) element.remove();
    this.shownLive.clear();
  }

  /** An earlier page, above those shown (before `anchor`), the view kept where it was. */
  prepend(messages, anchor) {
    const fromBottom = this.log.scrollHeight - this.log.scrollTop;
    for (const message of unseen(messages, this.drawn)) {
      const item = this.bubble(message);
      if (item) this.log.insertBefore(item, anchor);
    }
    this.log.scrollTop = this.log.scrollHeight - fromBottom;
  }

  /** Atop the log, a button that calls `load(button)`, while there is an earlier page to
   *  load (`before`, paging.js's `earlierCursor`, not null); the button, or null. */
  offerEarlier(before, load) {
    const shown = this.log.querySelector(".earlier-row");
    if (shown) shown.remove();
    if (before === null) return null;
    const row = make("li", "earlier-row");
    const button = make("button", "earlier", this.text("ui.earlier") || "");
    button.type = "button";
    button.addEventListener("click", () => load(button));
    row.append(button);
    this.log.prepend(row);
    return button;
  }

  /** A card per tool use the turn waits for, whose buttons call `decide(card, approved)`;
   *  the cards of uses no longer waiting go. */
  approvals(approvals, decide) {
    const cards = [...this.log.querySelectorAll(".approval")];
    const { gone, added } = approvalChanges(
      cards.map((card) => card.dataset.use),
      approvals,
    );
    for (const card of cards) if (gone.includes(card.dataset.use)) card.remove();
    for (const approval of added) {
      this.log.append(approvalCard(approval, { text: this.text, name: this.name, decide }));
    }
    this.log.scrollTop = this.log.scrollHeight;
  }

  /** Thumbs under each of `answers` (rating.js's `{turnId, id, rating}`) not offered yet,
   *  the rating given pressed; a press calls `rate(turnId, rating)`. */
  offerRatings(answers, rate) {
    for (const { turnId, id, rating } of answers) {
      const bubble = this.log.querySelector(`.bubble[data-id="${CSS.escape(id)}"]`);
      if (!bubble || bubble.querySelector(".rating")) continue;
      bubble.append(ratingElement(turnId, { text: this.text, rate, rating }));
    }
  }

  /** A bubble for one published message, or null when it has nothing to show. */
  bubble(message) {
    const shown = describe(message, this.text);
    if (!shown) return null;
    const item = make("li", shown.classes.join(" "));
    if (shown.id) item.dataset.id = shown.id;
    const who = shown.user ? this.text("ui.you") || "" : this.name;
    if (!shown.classes.includes("decision")) item.append(make("span", "who", who)); // says "You"
    item.append(this.content(shown));
    return item;
  }

  /** What a bubble holds: a card, Markdown (as text without markdown-it), or text. */
  content(shown) {
    if (shown.kind === "card") return cardElement(shown.card);
    if (shown.kind === "text" || !this.markdown) return make("p", "text", shown.text);
    const body = make("div", "text markdown");
    body.append(markdownNodes(this.markdown, shown.text));
    return body;
  }

  /** `item` at the bottom of the log, scrolled into view; the item (or null). */
  append(item) {
    if (!item) return null;
    this.log.append(item);
    this.log.scrollTop = this.log.scrollHeight;
    return item;
  }
}
