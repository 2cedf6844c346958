/**
 * The API client: every request the widget makes, and every way one can go wrong turned
 * into an outcome, here and nowhere else. Nothing here throws. An outcome is
 * `{ ok: true, status, body }` (`body`: the answer's JSON, null for a 204 or when not read)
 * or `{ ok: false, kind, status }`, `kind` one of:
 *
 *   "sign-in"      a 401: the assistant's readers sign in, and this one is not (any more)
 *   "offline"      no answer at all: the server could not be reached, or the answer broke off
 *   "unavailable"  a 5xx; `retryAfter`: the milliseconds its `retry-after` asks for, or null
 *   "gone"         a 404: no such conversation, turn or catalog (any more)
 *   "busy"         a 409; `turnId`: the conversation's turn that is not done, if named
 *   "limited"      a 429: over a limit; `key`, the limit's message key (`limits.*`), and
 *                  `retryAfter`, the milliseconds until the reader may ask again, or null
 *   "failed"       anything else: another status, or an answer that is not JSON
 *
 * The conversation's token travels only in the Authorization header, never in a URL; when
 * the readers sign in, no token is sent (the host page's cookie says who the reader is).
 */

import { transcriptPath } from "./paging.js";

const SIGN_IN = Object.freeze({ ok: false, kind: "sign-in", status: 401 });
const OFFLINE = Object.freeze({ ok: false, kind: "offline", status: 0 });
const GONE = Object.freeze({ ok: false, kind: "gone", status: 404 });

/** A 2xx: what most requests accept. */
const SUCCESS = (status) => status >= 200 && status < 300;

/**
 * What to tell the reader of a failed request: that the assistant cannot be reached only
 * when it could not be (the request never got an answer); that it is unavailable when it
 * answered with a server error; that something went wrong otherwise.
 */
export function troubleKey(outcome) {
  if (outcome.kind === "offline") return "ui.connection_trouble";
  if (outcome.kind === "unavailable") return "errors.ai_unavailable";
  return "errors.ai_failed";
}

/** A `retry-after` header's wait in milliseconds (seconds, or an HTTP date), else null. */
export function retryAfterMs(value, now = Date.now()) {
  const given = typeof value === "string" ? value.trim() : "";
  if (/^\d+$/.test(given)) return Number(given) * 1000;
  const date = /^[a-z]{3}/i.test(given) ? Date.parse(given) : Number.NaN; // "Wed, 21 Oct…"
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** The outcome of an answer that is not one the caller accepts. */
async function refused(response) {
  const { status } = response;
  if (status === 401) return SIGN_IN;
  if (status === 404) return GONE;
  if (status === 409) return { ok: false, kind: "busy", status, turnId: await busyTurn(response) };
  if (status === 429) return limited(response);
  if (status >= 500) {
    const retryAfter = retryAfterMs(response.headers.get("retry-after"));
    return { ok: false, kind: "unavailable", status, retryAfter };
  }
  return { ok: false, kind: "failed", status };
}

/** The running turn a 409's body names, or null. */
async function busyTurn(response) {
  try {
    const body = await response.json();
    return body && typeof body.turn_id === "string" ? body.turn_id : null;
  } catch (error) {
    return null;
  }
}

/** A 429's limit: its body's `key` and `retry_after` (seconds), the header's wait first
 *  (a page of another origin may not be shown the header). */
async function limited(response) {
  let body = null;
  try {
    body = await response.json();
  } catch (error) {
    body = null;
  }
  const named = body && typeof body.key === "string" && body.key.startsWith("limits.");
  const key = named ? body.key : null;
  const seconds = body && Number.isInteger(body.retry_after) ? body.retry_after * 1000 : null;
  const retryAfter = retryAfterMs(response.headers.get("retry-after")) ?? seconds;
  return { ok: false, kind: "limited", status: 429, key, retryAfter };
}

/** An accepted answer, its JSON read when `json` (not for a 204): a body that is not JSON
 *  is "failed", one that broke off is "offline". */
async function accepted(response, json) {
  const { status } = response;
  if (!json || status === 204) return { ok: true, status, body: null };
  try {
    return { ok: true, status, body: await response.json() };
  } catch (error) {
    return error instanceof SyntaxError ? { ok: false, kind: "failed", status } : OFFLINE;
  }
}

export class Api {
  /**
   * The API at `base` (no trailing slash). `token()`: the conversation's token, or null
   * (none yet, or the readers sign in). `fetch`: looked up on each request by default, so
   * a page that wraps `window.fetch` later sees the widget's requests too.
   */
  constructor(base, { token = () => null, fetch = null } = {}) {
    this.base = base;
    this.token = token;
    this.fetch = fetch || ((url, init) => globalThis.fetch(url, init));
  }

  /** One request and its outcome: `accept`, which statuses are an answer; `json`, whether
   *  the answer's body is read. */
  async request(path, { method, body, accept = SUCCESS, json = true } = {}) {
    const init = this.init(body !== undefined ? { "content-type": "application/json" } : {});
    if (method) init.method = method;
    if (body !== undefined) init.body = JSON.stringify(body);
    return this.send(`${this.base}${path}`, init, accept, json);
  }

  /** A request's options: `headers` and the token, if any; never cached. */
  init(headers) {
    const token = this.token();
    if (token) headers.authorization = `Bearer ${token}`;
    return { headers, cache: "no-store", credentials: "same-origin" };
  }

  async send(url, init, accept, json) {
    let response;
    try {
      response = await this.fetch(url, init);
    } catch (error) {
      return OFFLINE; // no answer: the network, the server down, or CORS refused
    }
    return accept(response.status) ? accepted(response, json) : refused(response);
  }

  /** One of the server's files (`assistant.json`, a catalog) as JSON; no token. */
  file(path) {
    return this.send(`${this.base}/${path}`, { credentials: "same-origin" }, SUCCESS, true);
  }

  /** The reader's conversations (readers sign in): `{conversations: [...]}`. */
  conversations() {
    return this.request("/api/conversations");
  }

  /** A new conversation: `{conversation_id, token}`. */
  createConversation() {
    return this.request("/api/conversations", { method: "POST", accept: (s) => s === 201 });
  }

  /** A page of a conversation's transcript (paging.js): the newest, or those before `before`. */
  transcript(conversationId, { before = null, limit }) {
    return this.request(transcriptPath(conversationId, { before, limit }));
  }

  /** A question, asked in `locale`: `{turn_id}`, or "busy" with the turn that is not done. */
  startTurn(conversationId, text, locale) {
    const path = `/api/conversations/${encodeURIComponent(conversationId)}/turns`;
    const body = { text, locale };
    return this.request(path, { method: "POST", body, accept: (s) => s === 202 });
  }

  /** A turn's published state if newer than `after`; a body of null for "nothing new" (204). */
  turnState(turnId, after) {
    const path = `/api/turns/${encodeURIComponent(turnId)}?after=${after}`;
    return this.request(path, { accept: (s) => s === 200 || s === 204 });
  }

  /**
   * A turn's events after event `after`, as a stream: `{ok: true, status, body}` with the
   * response's body (a ReadableStream of `text/event-stream`) to read, until `signal`
   * aborts; an answer that is not an event stream is "failed".
   */
  async events(turnId, after, signal) {
    const path = `/api/turns/${encodeURIComponent(turnId)}/events?after=${after}`;
    const init = { ...this.init({ accept: "text/event-stream" }), signal };
    let response;
    try {
      response = await this.fetch(`${this.base}${path}`, init);
    } catch (error) {
      return OFFLINE;
    }
    if (!SUCCESS(response.status)) return refused(response);
    const type = response.headers.get("content-type") || "";
    if (!type.startsWith("text/event-stream") || !response.body) {
      return { ok: false, kind: "failed", status: response.status };
    }
    return { ok: true, status: response.status, body: response.body };
  }

  /** Stop a turn; "gone" when the server no longer knows it. */
  cancel(turnId) {
    const path = `/api/turns/${encodeURIComponent(turnId)}/cancel`;
    return this.request(path, { method: "POST", json: false });
  }

  /** The reader's decision on a tool use the turn waits for; "busy" when it was decided
   *  meanwhile (in another tab) or the turn ended. */
  decide(turnId, toolUseId, approved) {
    const path = `/api/turns/${encodeURIComponent(turnId)}/approvals`;
    const body = { tool_use_id: toolUseId, approved };
    return this.request(path, { method: "POST", body, json: false });
  }

  /** Delete a conversation and everything of it (`stop`: its running turn stopped first);
   *  "busy" while a turn of it is not done and `stop` is not given. */
  deleteConversation(conversationId, { stop = false } = {}) {
    const path = `/api/conversations/${encodeURIComponent(conversationId)}${stop ? "?stop=1" : ""}`;
    return this.request(path, { method: "DELETE", json: false });
  }

  /** A conversation's new title (null: its first question again). */
  renameConversation(conversationId, title) {
    const path = `/api/conversations/${encodeURIComponent(conversationId)}`;
    return this.request(path, { method: "PATCH", body: { title } });
  }

  /** The reader's rating ("up" or "down") of a turn's answer; a new one replaces it. */
  rate(turnId, rating) {
    const path = `/api/turns/${encodeURIComponent(turnId)}/feedback`;
    return this.request(path, { method: "POST", body: { rating }, json: false });
  }
}
