/**
 * Server-sent events, parsed: the text of a `text/event-stream` as it arrives, in pieces
 * cut anywhere (mid-line, mid-character is the decoder's), into whole events. Pure: the
 * reading is stream.js's. The widget reads the stream with fetch, not EventSource, because
 * EventSource cannot send the conversation's token (an Authorization header).
 *
 * As the HTML standard's parser: lines end with CRLF, LF or CR; a line starting with ":" is
 * a comment (the server's keep-alive); `field: value` (one space after the colon dropped);
 * `data` lines join with "\n"; a blank line ends an event, which is dispatched only if it
 * had data; `id` is the stream's last event id from then on (unless it holds a NUL).
 */

/** One event as the stream gave it: `id` (the last event id), `event` ("message" when not
 *  named), `data`. */
export class SseParser {
  constructor() {
    this.buffer = "";
    this.started = false;
    this.lastId = "";
    this.reset();
  }

  reset() {
    this.type = "";
    this.data = [];
  }

  /** The events `text`, the stream's next piece, completes. */
  push(text) {
    this.buffer += text;
    if (!this.started && this.buffer) {
      this.started = true;
      if (this.buffer.charCodeAt(0) === 0xfeff) this.buffer = this.buffer.slice(1);
    }
    const events = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      // A CR at the very end may be the first half of a CRLF: wait for the next piece.
      if (end < 0 || (end === this.buffer.length - 1 && this.buffer[end] === "\r")) break;
      const line = this.buffer.slice(0, end);
      const eol = this.buffer.startsWith("\r\n", end) ? 2 : 1;
      this.buffer = this.buffer.slice(end + eol);
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  /** One line: a field taken in, or (a blank line) the event it ends, if any. */
  line(line) {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.type = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    return null;
  }

  dispatch() {
    const had = this.data.length > 0;
    const event = { id: this.lastId, event: this.type || "message", data: this.data.join("\n") };
    this.reset();
    return had ? event : null;
  }
}

/**
 * A turn's event (`{seq, type, body}`) from a parsed one: its id the seq (a positive
 * integer), its name the type, its data a JSON object. Null for anything else (a stream
 * that is not the turn's log is not read as one).
 */
export function turnEvent(parsed) {
  if (!/^[1-9]\d*$/.test(parsed.id)) return null;
  let body;
  try {
    body = JSON.parse(parsed.data);
  } catch (error) {
    return null;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return null;
  return { seq: Number(parsed.id), type: parsed.event, body };
}
