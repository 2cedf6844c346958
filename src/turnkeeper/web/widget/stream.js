/**
 * Watching a turn's event stream (`GET /api/turns/{id}/events`): read with fetch (the
 * client's `events`, which sends the token as every request does), parsed by sse.js, each
 * event handed on; a stream that breaks off is read again from after the last event seen
 * (`?after=`: no gap, no duplicate); one that cannot be had gives way to polling. The
 * decision (`nextStep`) is pure; `Watch` does the reading.
 */

import { SseParser, turnEvent } from "./sse.js";
import { retryDelay } from "./timing.js";

/** Connections in a row that brought no event before the widget stops trying to stream
 *  the turn and polls its state alone. */
export const MOST_FAILURES = 3;

/**
 * What to do once a stream has ended, by how (`ending`: `{kind}` as `read` gives it, or a
 * client's failed outcome), `failures` the connections in a row that brought nothing:
 *   {action: "stop"}                 the turn ended (or the watch was stopped): nothing more
 *   {action: "wait"}                 the run waits for a person: again once the turn goes on
 *   {action: "reconnect", delay}     read on from the last event, after `delay` ms
 *   {action: "poll"}                 no stream for this turn: its state is polled alone
 * A stream that broke off, a server unreachable or unavailable is tried again (no sooner
 * than its `retry-after`), up to MOST_FAILURES times in a row; any other refusal (no such
 * route, signed out, not an event stream) is final.
 */
export function nextStep(ending, failures) {
  const kind = ending.kind;
  if (kind === "ended" || kind === "aborted") return { action: "stop" };
  if (kind === "waiting") return { action: "wait" };
  const retried = kind === "closed" || kind === "offline" || kind === "unavailable";
  if (!retried || failures >= MOST_FAILURES) return { action: "poll" };
  return { action: "reconnect", delay: retryDelay(failures, ending.retryAfter || null) };
}

/**
 * Read an event stream's body to its end, handing each turn event to `event`; how it
 * ended: "ended" or "waiting" (its last event said so), "aborted" (stopped here), or
 * "closed" (it broke off, or the server closed it first: read on by cursor).
 */
export async function read(body, event, signal = null) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const parsed of parser.push(decoder.decode(value, { stream: true }))) {
        const turn = turnEvent(parsed);
        if (!turn) continue;
        event(turn);
        if (turn.type === "turn.ended") return { kind: "ended" };
        if (turn.type === "turn.waiting") return { kind: "waiting" };
      }
    }
  } catch (error) {
    // broken off: read on from the cursor (or stopped here)
  } finally {
    reader.cancel().catch(() => {});
  }
  return { kind: signal && signal.aborted ? "aborted" : "closed" };
}

/**
 * One turn's stream, watched: `event(e)` for each event after `after`, in order, each
 * once; `live(reading)` as a connection is being read or no longer is; `ended(action)`
 * when the watch stops on its own ("stop", "wait" or "poll", as `nextStep`). `resume()`
 * reads on after a wait.
 */
export class Watch {
  constructor(client, turnId, { after = 0, event, live = () => {}, ended = () => {} }) {
    Object.assign(this, { client, turnId, after, event, live, ended });
    this.failures = 0;
    this.stopped = false;
    this.timer = null;
    this.controller = null;
  }

  /** Connect now (again after a wait). */
  resume() {
    if (this.stopped || this.controller) return;
    clearTimeout(this.timer);
    this.connect();
  }

  async connect() {
    const controller = new AbortController();
    this.controller = controller;
    const opened = await this.client.events(this.turnId, this.after, controller.signal);
    if (this.stopped) return;
    let ending = opened;
    if (opened.ok) {
      this.live(true);
      let brought = false;
      ending = await read(opened.body, (e) => this.take(e) && (brought = true), controller.signal);
      if (brought) this.failures = 0;
      if (!this.stopped) this.live(false);
    }
    this.controller = null;
    if (!this.stopped) this.next(ending);
  }

  /** An event, handed on unless it was seen already; whether it was new. */
  take(event) {
    if (event.seq <= this.after || this.stopped) return false;
    this.after = event.seq;
    this.event(event);
    return true;
  }

  next(ending) {
    if (!["ended", "waiting", "aborted"].includes(ending.kind)) this.failures += 1;
    const step = nextStep(ending, this.failures);
    if (step.action === "reconnect") this.timer = setTimeout(() => this.resume(), step.delay);
    else this.ended(step.action);
  }

  /** No more of this stream: the turn is done, or no longer followed here. */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.controller) this.controller.abort();
  }
}
