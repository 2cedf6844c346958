/**
 * Thumbs up and down under each answer: the reader's rating of the turn that wrote it
 * (`POST /api/turns/{id}/feedback`, one per turn, changed by pressing the other). Which
 * bubbles are answers is decided by a pure function (`answers`), then drawn.
 */

import { icon, isText, make } from "./cards.js";

const THUMB =
  "M2 21h4V9H2v12zm20-11c0-1.1-.9-2-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6" +
  "C6.2 8 6 8.4 6 9v10c0 1.1.9 2 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z";

/**
 * The answers to rate: for each done turn, the last of its bubbles the model wrote as
 * text (not a notice, a card or a decision), as `{turnId, id, rating}`; `turnOf(message)`
 * names a message's turn; the turn `running` (not done) has none yet. `rating` is the one
 * the reader gave the turn ("up" or "down"), as the transcript page's `ratings` says
 * (turn id to rating), else null: nothing given, or nothing said.
 */
export function answers(messages, turnOf, running = null, ratings = null) {
  const last = new Map();
  for (const message of Array.isArray(messages) ? messages : []) {
    const turnId = message && turnOf(message);
    if (!isText(turnId) || turnId === running || !isText(message.id)) continue;
    if (message.role === "bot" && isText(message.text) && message.text.trim()) {
      last.set(turnId, message.id);
    }
  }
  const said = ratings && typeof ratings === "object" && !Array.isArray(ratings) ? ratings : {};
  const given = (turnId) => (Object.hasOwn(said, turnId) ? said[turnId] : null);
  const rating = (turnId) => (["up", "down"].includes(given(turnId)) ? given(turnId) : null);
  return [...last].map(([turnId, id]) => ({ turnId, id, rating: rating(turnId) }));
}

/** Thumbs for turn `turnId`'s answer, `rating`'s ("up", "down") pressed as given before;
 *  a press calls `rate(turnId, rating)`, which answers whether it was kept: then that
 *  thumb shows pressed, the other not. */
export function ratingElement(turnId, { text, rate, rating: given = null }) {
  const box = make("div", "rating");
  const buttons = ["up", "down"].map((rating) => {
    const button = make("button", `rate rate-${rating}`);
    button.type = "button";
    button.dataset.rating = rating;
    button.setAttribute("aria-label", text(rating === "up" ? "ui.rate_up" : "ui.rate_down") || "");
    button.title = button.getAttribute("aria-label");
    button.setAttribute("aria-pressed", String(rating === given));
    button.append(icon(THUMB, rating === "down"));
    button.addEventListener("click", async () => {
      for (const b of buttons) b.disabled = true;
      const kept = await rate(turnId, rating);
      for (const b of buttons) {
        b.disabled = false;
        if (kept) b.setAttribute("aria-pressed", String(b === button));
      }
    });
    return button;
  });
  box.append(...buttons);
  return box;
}
