/**
 * The trouble area: what the reader is told when requests fail, when they must sign in, and
 * while another tab's turn holds the conversation. It counts the failures in a row (the
 * retries' pace, timing.js, follows them). `area` is the alert (its `textContent` and
 * `hidden` are all that is used); `text`, a catalog's lookup (locale.js).
 */

import { troubleKey } from "./client.js";

export const TROUBLE_AFTER = 3; // failed requests in a row before the reader is told

/**
 * What a reader over a limit (a 429, client.js) is told: the limit's sentence, then when
 * they may ask again, a time of day in `lang` (`ui.ask_again_at`), when the server said.
 */
export function limitSentence(outcome, text, lang, now = Date.now()) {
  const said = (outcome.key && text(outcome.key)) || text("errors.ai_failed") || "";
  if (outcome.retryAfter === null || outcome.retryAfter === undefined) return said;
  const at = new Date(now + outcome.retryAfter);
  const precise = outcome.retryAfter < 3600 * 1000 ? { second: "2-digit" } : {};
  const clock = { hour: "2-digit", minute: "2-digit", ...precise };
  const time = at.toLocaleTimeString(lang || undefined, clock);
  const again = (text("ui.ask_again_at") || "{time}").replace("{time}", time);
  return `${said} ${again}`;
}

export class Trouble {
  constructor(area, text, lang = null) {
    this.area = area;
    this.text = text;
    this.lang = lang; // the catalog's: a limit's time of day is written in it
    this.failures = 0;
    this.waiting = false; // told the conversation is busy elsewhere, until its turn ends
  }

  /**
   * A request failed (`outcome`, client.js): every failure of the widget comes here. A 401
   * asks the reader to sign in, and nothing retries: their next question, or coming back
   * to the tab, does. Anything else is said (what: `troubleKey`) at once when `now` (the
   * reader asked for something), else after TROUBLE_AFTER in a row. True when the caller
   * may try again.
   */
  failed(outcome, now = false) {
    if (outcome.kind === "sign-in") {
      this.signIn();
      return false;
    }
    this.failures += 1;
    const limited = outcome.kind === "limited";
    const said = limited ? limitSentence(outcome, this.text, this.lang) : null;
    this.say(said ?? this.text(troubleKey(outcome)));
    this.area.hidden = !now && this.failures < TROUBLE_AFTER && !this.waiting;
    return true;
  }

  /** A request went through: the count starts again; only a wait, if any, is still said. */
  cleared() {
    this.failures = 0;
    if (this.waiting) this.say(this.text("ui.busy"));
    this.area.hidden = !this.waiting;
  }

  /** A 401: the reader must sign in (on the host's page) first. Said at once. */
  signIn() {
    this.failures = 0;
    this.say(this.text("ui.sign_in"));
    this.area.hidden = false;
  }

  /** A question met another tab's turn: said at once, and until that turn (`turnId`, if the
   *  server named it) ends. */
  busy(turnId) {
    this.waiting = Boolean(turnId);
    this.say(this.text("ui.busy"));
    this.area.hidden = false;
  }

  /** No wait any more (the turn ended, or the reader left the conversation): cleared. */
  reset() {
    this.waiting = false;
    this.cleared();
  }

  /** The sentence, replaced only when it changes (an alert is announced). */
  say(sentence) {
    if (this.area.textContent !== (sentence || "")) this.area.textContent = sentence || "";
  }
}
