/**
 * The trouble area: what the reader is told when requests fail, when they must sign in, and
 * while another tab's turn holds the conversation. It counts the failures in a row (the
 * retries' pace, timing.js, follows them). `area` is the alert (its `textContent` and
 * `hidden` are all that is used); `text`, a catalog's lookup (locale.js).
 */

import { troubleKey } from "./client.js";

export const TROUBLE_AFTER = 3; // failed requests in a row before the reader is told

export class Trouble {
  constructor(area, text) {
    this.area = area;
    this.text = text;
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
    this.say(this.text(troubleKey(outcome)));
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
