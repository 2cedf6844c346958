/**
 * The fold of a turn's events (the server's event log, read by stream.js) into what the
 * widget shows live, before the published state has it: the text streamed into each bot
 * bubble, a text withdrawn (a cut answer) with the notice it gives way to, each tool step
 * as it starts and ends, the caption's key, a tool's card. Pure: `fold` takes the live
 * state and one event and gives the next state; `liveItems` says what to draw of it.
 *
 * The published state stays the source of truth: whatever it has drawn (`drawn`, the ids of
 * the transcript's bubbles) is not drawn live again; what it never publishes goes when the
 * turn is done.
 */

import { cardParts } from "./cards.js";

/** Nothing seen yet: `seq`, the last event folded in (the cursor a reconnection resumes
 *  after); `items`, the bubbles and steps in the order they came; `activity`, the caption's
 *  key; `end`, "ended" or "waiting" once the run said so. */
export function emptyLive() {
  return Object.freeze({ seq: 0, items: Object.freeze([]), activity: null, end: null });
}

const isText = (key) => (item) => item.kind === "text" && item.message === key;
const isStep = (use) => (item) => item.kind === "step" && item.use === use;
const isCard = (key) => (item) => item.kind === "card" && item.message === key;

/** `items` with the item `match` finds changed by `change` (a new item when none is). */
function updated(items, match, change, fresh) {
  const index = items.findIndex(match);
  if (index < 0) return Object.freeze([...items, Object.freeze(change(fresh))]);
  const next = [...items];
  next[index] = Object.freeze(change(items[index]));
  return Object.freeze(next);
}

const FOLDS = {
  "text.delta": (live, { message, delta }) => {
    if (typeof message !== "string" || typeof delta !== "string") return live;
    const fresh = { kind: "text", message, text: "", retracted: null };
    // Text after a retraction streams the bubble anew (a crashed run's bubble, taken over).
    const grow = (item) => ({
      ...item,
      text: (item.retracted === null ? item.text : "") + delta,
      retracted: null,
    });
    return { ...live, items: updated(live.items, isText(message), grow, fresh) };
  },
  "text.retracted": (live, { message, key }) => {
    if (typeof message !== "string") return live;
    const fresh = { kind: "text", message, text: "", retracted: "" };
    const cut = (item) => ({ ...item, text: "", retracted: typeof key === "string" ? key : "" });
    return { ...live, items: updated(live.items, isText(message), cut, fresh) };
  },
  "tool.started": (live, { tool_use_id: use, tool }) => {
    if (typeof use !== "string") return live;
    const fresh = { kind: "step", use, tool: typeof tool === "string" ? tool : "", state: "" };
    const start = (item) => (item.state ? item : { ...item, state: "running", error: false });
    return { ...live, items: updated(live.items, isStep(use), start, fresh) };
  },
  "tool.ended": (live, { tool_use_id: use, is_error: error }) => {
    if (typeof use !== "string") return live;
    const fresh = { kind: "step", use, tool: "", state: "" };
    const end = (item) => ({ ...item, state: "ended", error: error === true });
    return { ...live, items: updated(live.items, isStep(use), end, fresh) };
  },
  activity: (live, { key }) => ({ ...live, activity: typeof key === "string" ? key : null }),
  card: (live, { message, card }) => {
    if (typeof message !== "string" || !card || typeof card !== "object") return live;
    const fresh = { kind: "card", message, card };
    return { ...live, items: updated(live.items, isCard(message), (item) => item, fresh) };
  },
  "turn.started": (live) => ({ ...live, end: null, activity: null }),
  "turn.waiting": (live) => ({ ...live, end: "waiting", activity: null }),
  "turn.ended": (live) => ({ ...live, end: "ended", activity: null }),
};

/**
 * The live state after `event` (`{seq, type, body}`): an event at or before the cursor
 * was folded in already (a reconnection's overlap) and changes nothing; one of a type the
 * widget does not draw only moves the cursor.
 */
export function fold(live, event) {
  if (!event || !Number.isInteger(event.seq) || event.seq <= live.seq) return live;
  const step = FOLDS[event.type];
  const next = step ? step(live, event.body || {}) : live;
  return Object.freeze({ ...next, seq: event.seq });
}

/** Whether `event` comes with a write of the turn's published state (any but text as it
 *  streams and a round of tools starting): the widget then reads the state at once. */
export function movesState(event) {
  return event.type !== "text.delta" && event.type !== "tool.started";
}

/**
 * What to draw live, in order, each with the `key` its element is found by:
 *   {kind: "text", key, message, text}         text streamed into a bubble not published yet
 *   {kind: "notice", key, message, text}       a withdrawn text's notice (`text(key)`)
 *   {kind: "step", key, use, state, error, text}  a tool step: "running" ("ui.working"),
 *                                              then "ended" (its caption, `activity.<tool>`)
 *   {kind: "card", key, message, card}
 * A bubble the transcript has drawn (`drawn`: published) is not drawn live; a withdrawn
 * text whose notice no catalog knows, a step ended without a caption, blank text: nothing.
 */
export function liveItems(live, drawn, text) {
  const shown = [];
  for (const item of live.items) {
    if (item.kind === "step") {
      const said = item.state === "ended" ? text(`activity.${item.tool}`) : text("ui.working");
      if (!item.state || !said) continue;
      const { use, state, error } = item;
      shown.push({ kind: "step", key: `step:${use}`, use, state, error, text: said });
      continue;
    }
    if (drawn.has(item.message)) continue;
    const key = item.message;
    if (item.kind === "card") {
      if (cardParts(item.card)) shown.push({ kind: "card", key, message: key, card: item.card });
    }
    else if (item.retracted !== null) {
      const said = item.retracted ? text(item.retracted) : null;
      if (said) shown.push({ kind: "notice", key, message: key, text: said });
    } else if (item.text.trim()) shown.push({ kind: "text", key, message: key, text: item.text });
  }
  return shown;
}
