// Where turnkeeper is, and one conversation with it: its id and token kept in
// localStorage (no sign-in), so a reload continues it.

const asked = new URLSearchParams(location.search).get("server");
/** `?server=URL`, else VITE_TURNKEEPER_URL at build time, else a local `turnkeeper serve`. */
export const SERVER = (asked ?? import.meta.env.VITE_TURNKEEPER_URL ?? "http://127.0.0.1:8000")
  .replace(/\/+$/, "");

function newId() {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
}

/** A conversation kept under `key`: its id, its token, and the turn a response last followed. */
export class Conversation {
  constructor(key) {
    this.key = key;
    const kept = JSON.parse(localStorage.getItem(key) ?? "null");
    this.id = kept?.id ?? newId();
    this.token = kept?.token ?? null;
    this.turn = null;
    this.known = kept !== null;
  }

  /** `fetch` with the token; keeps a token the server sends and the turn a response follows. */
  fetch = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (this.token) headers.set("authorization", `Bearer ${this.token}`);
    const response = await fetch(url, { ...init, headers });
    const token = response.headers.get("x-turnkeeper-token");
    if (token) {
      this.token = token;
      localStorage.setItem(this.key, JSON.stringify({ id: this.id, token }));
    }
    this.turn = response.headers.get("x-turnkeeper-turn") ?? this.turn;
    return response;
  };

  /** Stop the turn on the server (dropping the connection would not stop it). */
  async stop() {
    if (this.turn) await this.fetch(`${SERVER}/api/turns/${this.turn}/cancel`, { method: "POST" });
  }

  /** Start over: the next conversation gets a new id and token. */
  forget() {
    localStorage.removeItem(this.key);
  }
}
