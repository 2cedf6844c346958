/*
 * turnkeeper's chat widget: plain JavaScript, no build step, no dependency.
 *
 *   <script src="https://your-turnkeeper/widget.js" defer></script>
 *   <turnkeeper-chat api="https://your-turnkeeper" lang="es"></turnkeeper-chat>
 *
 * `api` defaults to the folder this script was served from (an assistant mounted
 * at /assistant/ serves /assistant/widget.js and answers at /assistant/api/...).
 * The server's assistant.json names the assistant and its locales; the reader's
 * locale is the first of `lang`, then the browser's languages, that the server
 * has a catalog for (pt-BR, else pt), else English. It keeps one conversation
 * (id and token) in localStorage, so a reload restores the transcript; it polls
 * a running turn's published state and renders model text with textContent,
 * never as HTML. The token travels only in the Authorization header, never in a
 * URL; when the assistant's readers sign in, no token is sent at all (the host
 * page's own cookie says who the reader is) and a 401 asks them to sign in.
 * Every label comes from the server's catalogs; a key no catalog knows shows
 * nothing.
 */
(() => {
  "use strict";

  const script = document.currentScript;
  const HOME = script ? new URL(script.src, location.href) : new URL("/", location.href);
  const STYLE = new URL("widget.css", HOME).href;
  const FOLDER = new URL(".", HOME).href.replace(/\/+$/, ""); // the default API base
  const DEFAULT_LOCALE = "en";

  const POLL_MS = 300; // while a turn runs and the tab is visible
  const POLL_MAX_MS = 1500; // after a run of "nothing new" answers
  const HIDDEN_MS = 5000; // while the tab is hidden
  const RETRY_MS = 500; // the first retry after a failed request, doubling...
  const RETRY_MAX_MS = 8000; // ...up to this
  const TROUBLE_AFTER = 3; // failed requests in a row before the reader is told

  const TEMPLATE = `
    <section class="chat" part="chat">
      <h2 class="title"></h2>
      <ol class="log" role="log" aria-live="polite" aria-relevant="additions"></ol>
      <p class="caption" role="status" aria-live="polite"></p>
      <p class="trouble" role="alert" hidden></p>
      <form class="compose">
        <textarea class="question" rows="2"></textarea>
        <button type="submit" class="send"></button>
        <button type="button" class="stop" hidden></button>
      </form>
    </section>`;

  /** The locales the reader asks for, best first: `lang`, then the browser's. */
  function wantedLocales(attribute) {
    const names = [attribute, ...(navigator.languages || [navigator.language])];
    return names.filter((name) => typeof name === "string" && name.trim());
  }

  /**
   * The first of `wanted` the server has a catalog for, as the server spells it: each
   * tag itself, then its shorter forms ("zh-Hant-TW", "zh-Hant", "zh"); else English.
   */
  function negotiate(wanted, locales) {
    const known = new Map(locales.map((tag) => [tag.toLowerCase(), tag]));
    for (const name of wanted) {
      const parts = name.trim().replace(/_/g, "-").toLowerCase().split("-");
      for (let n = parts.length; n > 0; n -= 1) {
        const found = known.get(parts.slice(0, n).join("-"));
        if (found) return found;
      }
    }
    return DEFAULT_LOCALE;
  }

  /** A 401: the assistant's readers sign in, and this one is not signed in (any more). */
  class SignInNeeded extends Error {}

  class TurnkeeperChat extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      this.api = (this.getAttribute("api") || FOLDER).replace(/\/+$/, "");
      this.storageKey = `turnkeeper-chat:${this.api}`;
      this.rendered = new Set();
      this.turn = null;
      this.failures = 0;
      this.attachShadow({ mode: "open" });
      document.addEventListener("visibilitychange", () => this.turn && this.schedule(0));
      this.start();
    }

    async start() {
      const wanted = wantedLocales(this.getAttribute("lang"));
      while (!(await this.load(wanted))) {
        await new Promise((resolve) => setTimeout(resolve, RETRY_MAX_MS));
      }
      this.build();
      await this.restore();
    }

    // ---- the assistant and its catalogs ----------------------------------------

    /** The assistant's description, the reader's catalog and English; false to try again. */
    async load(wanted) {
      try {
        const [about, en] = await Promise.all([
          this.fetchFile("assistant.json"),
          this.fetchFile(`locales/${DEFAULT_LOCALE}.json`),
        ]);
        if (!about || !en) return false;
        const listed = Array.isArray(about.locales) ? about.locales : [];
        const lang = negotiate(wanted, listed.filter((tag) => typeof tag === "string"));
        const path = `locales/${encodeURIComponent(lang)}.json`;
        const entries = lang === DEFAULT_LOCALE ? en : await this.fetchFile(path);
        this.name = typeof about.name === "string" ? about.name : "";
        this.users = about.users === true;
        this.en = en;
        // A catalog the server lists but does not serve: English rather than nothing.
        [this.lang, this.entries] = entries ? [lang, entries] : [DEFAULT_LOCALE, en];
        return true;
      } catch (error) {
        return false; // unreachable, or not JSON: the caller tries again
      }
    }

    /** One of the server's files as JSON; null when it has no such file. */
    async fetchFile(path) {
      const response = await fetch(`${this.api}/${path}`, { credentials: "same-origin" });
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`${path}: ${response.status}`);
      return response.json();
    }

    /** The reader's sentence for `key`, else English, else null: never the key itself. */
    text(key) {
      if (typeof key !== "string") return null;
      const found = Object.hasOwn(this.entries, key) ? this.entries[key] : this.en[key];
      return typeof found === "string" && found.trim() ? found : null;
    }

    // ---- the page ------------------------------------------------------------------

    build() {
      const root = this.shadowRoot;
      const style = document.createElement("link");
      style.rel = "stylesheet";
      style.href = STYLE;
      const template = document.createElement("template");
      template.innerHTML = TEMPLATE; // fixed markup only: nothing from the model or the server
      root.append(style, template.content);
      const find = (selector) => root.querySelector(selector);
      this.section = find(".chat");
      this.log = find(".log");
      this.caption = find(".caption");
      this.trouble = find(".trouble");
      this.input = find(".question");
      this.sendButton = find(".send");
      this.stopButton = find(".stop");
      this.section.lang = this.lang;
      find(".title").textContent = this.name;
      this.input.placeholder = this.text("ui.placeholder") || "";
      this.input.setAttribute("aria-label", this.text("ui.placeholder") || "");
      this.sendButton.textContent = this.text("ui.send") || "";
      this.stopButton.textContent = this.text("ui.stop") || "";
      this.listen(find(".compose"));
    }

    listen(form) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.send();
      });
      this.input.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault();
          this.send();
        }
      });
      this.section.addEventListener("keydown", (event) => {
        if (event.key === "Escape" && this.turn) {
          event.preventDefault();
          this.stop();
        }
      });
      this.stopButton.addEventListener("click", () => this.stop());
    }

    /** A bubble for one published message, or nothing when it has no text to show. */
    bubble(message) {
      const text = "text" in message ? message.text : this.text(message.key);
      if (typeof text !== "string" || !text) return null;
      const item = document.createElement("li");
      const who = document.createElement("span");
      const body = document.createElement("p");
      const user = message.role === "user";
      item.className = `bubble ${user ? "user" : "bot"}`;
      if ("key" in message) item.classList.add("notice");
      if (message.is_error) item.classList.add("error");
      if (message.id) item.dataset.id = message.id;
      who.className = "who";
      who.textContent = user ? this.text("ui.you") || "" : this.name;
      body.className = "text";
      body.textContent = text;
      item.append(who, body);
      this.log.append(item);
      this.log.scrollTop = this.log.scrollHeight;
      return item;
    }

    show(messages) {
      for (const message of messages) {
        if (message.id && this.rendered.has(message.id)) continue;
        if (message.id) this.rendered.add(message.id);
        const pending = this.turn && this.turn.pending;
        if (message.role === "user" && pending) {
          pending.dataset.id = message.id;
          this.turn.pending = null;
          continue;
        }
        this.bubble(message);
      }
    }

    setBusy(busy) {
      this.input.readOnly = busy;
      this.input.setAttribute("aria-disabled", String(busy));
      this.sendButton.hidden = busy;
      this.sendButton.disabled = busy;
      this.stopButton.hidden = !busy;
      this.stopButton.disabled = !busy;
      this.section.setAttribute("aria-busy", String(busy));
      this.caption.textContent = busy ? this.text("ui.working") || "" : "";
    }

    setTrouble(failing) {
      this.failures = failing ? this.failures + 1 : 0;
      this.say(this.text("ui.connection_trouble"));
      this.trouble.hidden = this.failures < TROUBLE_AFTER;
    }

    /**
     * A 401: the reader must sign in (on the host's page) first. Said at once; no timer
     * tries again, the reader's next question (or coming back to the tab) does.
     */
    askToSignIn() {
      this.failures = 0;
      this.say(this.text("ui.sign_in"));
      this.trouble.hidden = false;
    }

    /** The trouble area's sentence, replaced only when it changes (an alert is announced). */
    say(sentence) {
      if (this.trouble.textContent !== (sentence || "")) this.trouble.textContent = sentence || "";
    }

    // ---- the conversation ------------------------------------------------------

    saved() {
      try {
        return JSON.parse(localStorage.getItem(this.storageKey) || "null");
      } catch (error) {
        return null;
      }
    }

    save(value) {
      try {
        if (value) localStorage.setItem(this.storageKey, JSON.stringify(value));
        else localStorage.removeItem(this.storageKey);
      } catch (error) {
        // Storage is off (private mode): the chat still works, a reload starts afresh.
      }
      this.conversation = value;
    }

    /** An API call: with the conversation's token, or (readers sign in) the host's cookie. */
    async call(path, options = {}) {
      const headers = {};
      const token = this.conversation && this.conversation.token;
      if (token && !this.users) headers.authorization = `Bearer ${token}`;
      if (options.body) headers["content-type"] = "application/json";
      const response = await fetch(`${this.api}${path}`, {
        ...options,
        headers,
        cache: "no-store",
        credentials: "same-origin",
      });
      if (response.status === 401) throw new SignInNeeded();
      return response;
    }

    /** Show the saved conversation's transcript, and follow its turn if one was running. */
    async restore() {
      const saved = this.saved();
      if (!saved || !saved.conversation_id || !(saved.token || this.users)) {
        if (this.users) await this.checkSignedIn();
        return;
      }
      this.conversation = saved;
      let response;
      try {
        response = await this.call(`/api/conversations/${encodeURIComponent(saved.conversation_id)}`);
      } catch (error) {
        if (error instanceof SignInNeeded) return this.askToSignIn(); // kept for after sign-in
        response = null;
      }
      if (response && response.status === 404) return this.save(null);
      if (!response || !response.ok) {
        this.setTrouble(true);
        this.trouble.hidden = false;
        return setTimeout(() => this.restore(), RETRY_MAX_MS);
      }
      this.setTrouble(false);
      this.show((await response.json()).messages);
      if (saved.turn_id) this.follow(saved.turn_id);
    }

    /** Readers sign in: say so at once if this one is not, before any question is lost. */
    async checkSignedIn() {
      try {
        await this.call("/api/conversations");
      } catch (error) {
        if (error instanceof SignInNeeded) this.askToSignIn();
      }
    }

    async ensureConversation() {
      if (this.conversation) return;
      const response = await this.call("/api/conversations", { method: "POST" });
      if (response.status !== 201) throw new Error(`new conversation: ${response.status}`);
      const { conversation_id, token } = await response.json();
      this.save({ conversation_id, token });
    }

    async send() {
      const question = this.input.value;
      if (!question.trim() || this.turn || !this.section) return;
      this.input.value = "";
      this.setBusy(true);
      const pending = this.bubble({ role: "user", text: question });
      this.turn = { id: null, version: 0, pending, quiet: 0 };
      try {
        this.follow(await this.startTurn(question));
        this.setTrouble(false);
      } catch (error) {
        this.turn = null;
        pending.remove();
        this.input.value = question; // nothing the reader typed is lost
        this.setBusy(false);
        if (error instanceof SignInNeeded) return this.askToSignIn();
        this.setTrouble(true);
        this.trouble.hidden = false;
      }
    }

    async startTurn(question) {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await this.ensureConversation();
        const id = encodeURIComponent(this.conversation.conversation_id);
        const body = JSON.stringify({ text: question, locale: this.lang });
        const response = await this.call(`/api/conversations/${id}/turns`, { method: "POST", body });
        if (response.status === 202) return (await response.json()).turn_id;
        if (response.status !== 404) throw new Error(`new turn: ${response.status}`);
        this.save(null); // the server no longer knows this conversation: start a new one
      }
      throw new Error("new turn: the conversation could not be created");
    }

    /** Poll turn `turnId` until it is done (the one just sent, or one left running by a reload). */
    follow(turnId) {
      this.turn = this.turn || { version: 0, pending: null, quiet: 0 };
      this.turn.id = turnId;
      this.save({ ...this.conversation, turn_id: turnId });
      this.setBusy(true);
      if (this.turn.stopping) this.cancel(this.turn); // Stop was pressed before the turn had an id
      this.schedule(0);
    }

    stop() {
      const turn = this.turn;
      if (!turn || turn.stopping) return;
      turn.stopping = true;
      this.stopButton.disabled = true;
      if (turn.id) this.cancel(turn);
    }

    async cancel(turn) {
      try {
        const path = `/api/turns/${encodeURIComponent(turn.id)}/cancel`;
        const response = await this.call(path, { method: "POST" });
        if (!response.ok && response.status !== 404) throw new Error(`cancel: ${response.status}`);
      } catch (error) {
        turn.stopping = false;
        this.stopButton.disabled = false;
        if (error instanceof SignInNeeded) this.askToSignIn();
        else this.setTrouble(true);
      }
      turn.quiet = 0;
      if (turn === this.turn) this.schedule(0);
    }

    finish() {
      clearTimeout(this.timer);
      this.turn = null;
      this.save({ conversation_id: this.conversation.conversation_id, token: this.conversation.token });
      const hadFocus = this.shadowRoot.activeElement !== null;
      this.setBusy(false);
      if (hadFocus) this.input.focus();
    }

    // ---- polling -------------------------------------------------------------------

    schedule(delay) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.poll(), delay);
    }

    nextDelay(turn) {
      if (document.visibilityState === "hidden") return HIDDEN_MS;
      return Math.min(POLL_MAX_MS, POLL_MS * 1.5 ** turn.quiet);
    }

    retryDelay() {
      return Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** Math.max(0, this.failures - 1));
    }

    async poll() {
      const turn = this.turn;
      if (!turn || !turn.id) return;
      let state = null;
      try {
        const path = `/api/turns/${encodeURIComponent(turn.id)}?after=${turn.version}`;
        const response = await this.call(path);
        if (response.status === 404) return turn === this.turn && this.finish();
        if (response.status !== 200 && response.status !== 204) throw new Error(response.status);
        state = response.status === 200 ? await response.json() : null;
      } catch (error) {
        if (turn !== this.turn) return;
        // Signed out mid-turn: no timer polls again; the tab shown again, or a reload, does.
        if (error instanceof SignInNeeded) return this.askToSignIn();
        this.setTrouble(true);
        return this.schedule(this.retryDelay());
      }
      if (turn !== this.turn) return;
      this.setTrouble(false);
      this.apply(turn, state);
    }

    apply(turn, state) {
      if (!state) {
        turn.quiet += 1;
        return this.schedule(this.nextDelay(turn));
      }
      turn.version = state.version;
      turn.quiet = 0;
      this.show(state.messages || []);
      if (state.done) return this.finish();
      this.caption.textContent = this.text(state.activity) || this.text("ui.working") || "";
      this.schedule(this.nextDelay(turn));
    }
  }

  if (!customElements.get("turnkeeper-chat")) {
    customElements.define("turnkeeper-chat", TurnkeeperChat);
  }
})();
