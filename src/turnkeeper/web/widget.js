/*
 * turnkeeper's chat widget: plain JavaScript, no build step, nothing from a CDN.
 *
 *   <script src="https://your-turnkeeper/widget.js" defer></script>
 *   <turnkeeper-chat api="https://your-turnkeeper" lang="es"></turnkeeper-chat>
 *
 * `api` defaults to the folder this script was served from (an assistant mounted
 * at /assistant/ serves /assistant/widget.js and answers at /assistant/api/...).
 * The server's assistant.json names the assistant and its locales; the reader's
 * locale is the first of `lang`, then the browser's languages, that the server
 * has a catalog for (pt-BR, else pt), else English. It keeps one conversation
 * (id and token) in localStorage, so a reload restores the transcript; it follows
 * the conversation's running turn, whichever tab or window started it, by polling
 * its published state. The token travels only in the Authorization header, never
 * in a URL; when the assistant's readers sign in, no token is sent at all (the host
 * page's own cookie says who the reader is), a 401 asks them to sign in, and the
 * reader's earlier conversations are offered. A long transcript is read a page at a
 * time (`page-size` messages, default 100): the newest, then older ones when the reader
 * presses "Show earlier messages". Every label comes from the server's
 * catalogs; a key no catalog knows shows nothing.
 *
 * What the model wrote is shown as Markdown, rendered by markdown-it (vendored next
 * to this file, vendor/README.md; imported from there, so one script tag is all a
 * page needs) with raw HTML off, links only to https:, http: and mailto:, images as
 * their alt text; its HTML, held to the tags markdown-it makes from text, is the only
 * HTML this widget ever inserts. Everything else (the reader's words, notices, a
 * tool's card) is set as text. Without markdown-it (it could not be loaded), answers
 * are shown as plain text.
 */
(() => {
  "use strict";

  const script = document.currentScript;
  const HOME = script ? new URL(script.src, location.href) : new URL("/", location.href);
  const STYLE = new URL("widget.css", HOME).href;
  const MARKDOWN = new URL("vendor/markdown-it.esm.min.mjs", HOME).href;
  const FOLDER = new URL(".", HOME).href.replace(/\/+$/, ""); // the default API base
  const DEFAULT_LOCALE = "en";

  const POLL_MS = 300; // while a turn runs and the tab is visible
  const POLL_MAX_MS = 1500; // after a run of "nothing new" answers
  const HIDDEN_MS = 5000; // while the tab is hidden
  const RETRY_MS = 500; // the first retry after a failed request, doubling...
  const RETRY_MAX_MS = 8000; // ...up to this
  const SUMMARY_MAX = 300; // characters of a tool input an approval card shows
  const TROUBLE_AFTER = 3; // failed requests in a row before the reader is told
  const PAGE_SIZE = 100; // transcript messages read at once (`page-size`); older on request

  const TEMPLATE = `
    <section class="chat" part="chat">
      <header class="head">
        <h2 class="title"></h2>
        <div class="threads" hidden>
          <details class="history">
            <summary class="history-toggle"></summary>
            <ol class="history-list"></ol>
          </details>
          <button type="button" class="new"></button>
        </div>
      </header>
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

  // ---- Markdown, safely ------------------------------------------------------------

  /** The only addresses a link may have: in Markdown, and (https: alone) on a card. */
  const SAFE_LINK = /^(https?:|mailto:)/i;
  /** Every tag markdown-it makes from text with these options; any other is dropped. */
  const TAGS = new Set([
    ..."P BR HR STRONG EM S CODE PRE BLOCKQUOTE UL OL LI A".split(" "),
    ..."H1 H2 H3 H4 H5 H6 TABLE THEAD TBODY TR TH TD".split(" "),
  ]);
  const ATTRIBUTES = {
    A: ["href", "target", "rel"],
    OL: ["start"],
    CODE: ["class"],
    TH: ["style"],
    TD: ["style"],
  };
  const ALIGNED = /^text-align:(left|right|center)$/;

  let markdownLoading = null;

  /**
   * markdown-it configured for model text, imported once per page from the vendor folder
   * next to this script; null if it cannot be (the answers are then shown as text). A
   * failed import is tried again by the next element that asks.
   */
  function markdownIt() {
    markdownLoading =
      markdownLoading ||
      import(MARKDOWN).then(
        (module) => configured(module.default),
        () => {
          markdownLoading = null;
          return null;
        },
      );
    return markdownLoading;
  }

  /**
   * Raw HTML shown as text (`html: false`); bare addresses linked, but only those
   * `validateLink` lets through (https:, http:, mailto:), opened in a new tab without
   * the opener or a referrer; an image becomes its alt text (no request leaves the page
   * because a model wrote an address); a line break is a line break, as in a chat.
   */
  function configured(markdownit) {
    const md = markdownit({ html: false, linkify: true, breaks: true, typographer: false });
    md.validateLink = (url) => SAFE_LINK.test(url);
    const rules = md.renderer.rules;
    rules.image = (tokens, i, options, env, self) =>
      md.utils.escapeHtml(self.renderInlineAsText(tokens[i].children || [], options, env));
    rules.link_open = (tokens, i, options, env, self) => {
      tokens[i].attrSet("target", "_blank");
      tokens[i].attrSet("rel", "noopener noreferrer");
      return self.renderToken(tokens, i, options);
    };
    return md;
  }

  /**
   * `text` rendered as Markdown, as nodes: parsed in a template (inert: nothing in it runs
   * or loads), then held to the tags and attributes above, so that even a markdown-it bug
   * could not put a script, an image or a javascript: link on the page.
   */
  function markdownNodes(md, text) {
    const template = document.createElement("template");
    template.innerHTML = md.render(text); // markdown-it's HTML, `html: false`: see above
    for (const element of [...template.content.querySelectorAll("*")]) {
      if (!TAGS.has(element.tagName)) {
        element.replaceWith(element.textContent);
        continue;
      }
      const allowed = ATTRIBUTES[element.tagName] || [];
      for (const { name, value } of [...element.attributes]) {
        const safe =
          allowed.includes(name) &&
          (name !== "href" || SAFE_LINK.test(value)) &&
          (name !== "style" || ALIGNED.test(value));
        if (!safe) element.removeAttribute(name);
      }
    }
    return template.content;
  }

  // ---- cards -------------------------------------------------------------------------

  /** An element with a class and, if given, its text (as text, never HTML). */
  function make(tag, className, text) {
    const element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined) element.textContent = text;
    return element;
  }

  const listed = (value) => (Array.isArray(value) ? value : []);
  const isText = (value) => typeof value === "string";

  /** A tool's input as a few lines of text, `name: value`, cut short when long. */
  function summary(input) {
    const shown = (value) => (isText(value) ? value : String(JSON.stringify(value)));
    const lines =
      input && typeof input === "object" && !Array.isArray(input)
        ? Object.entries(input).map(([name, value]) => `${name}: ${shown(value)}`)
        : [shown(input)];
    const text = lines.join("\n");
    return text.length > SUMMARY_MAX ? `${text.slice(0, SUMMARY_MAX - 1)}…` : text;
  }

  function isHttps(url) {
    try {
      return isText(url) && new URL(url).protocol === "https:";
    } catch (error) {
      return false;
    }
  }

  /**
   * A tool's card (turnkeeper.Card's JSON): its title, its label and value pairs as a
   * description list, its table, its https: links (any other address is dropped); all
   * as text. Null for anything that is not a card.
   */
  function cardElement(card) {
    if (!card || !isText(card.title)) return null;
    const body = make("div", "card-body");
    body.append(make("h3", "card-title", card.title));
    const fields = listed(card.fields).filter((f) => f && isText(f.label) && isText(f.value));
    if (fields.length) {
      const list = make("dl", "card-fields");
      for (const field of fields) {
        const pair = make("div");
        pair.append(make("dt", "", field.label), make("dd", "", field.value));
        list.append(pair);
      }
      body.append(list);
    }
    const table = cardTable(listed(card.columns).filter(isText), listed(card.rows));
    if (table) body.append(table);
    const links = listed(card.links).filter((l) => l && isText(l.text) && isHttps(l.url));
    if (links.length) {
      const list = make("ul", "card-links");
      for (const link of links) {
        const anchor = make("a", "", link.text);
        anchor.href = link.url;
        anchor.target = "_blank";
        anchor.rel = "noopener noreferrer";
        const item = make("li");
        item.append(anchor);
        list.append(item);
      }
      body.append(list);
    }
    return body;
  }

  /** The card's table, headings first, in a box that scrolls sideways on a narrow screen. */
  function cardTable(columns, rows) {
    const cells = rows.filter(Array.isArray);
    if (!columns.length && !cells.length) return null;
    const table = make("table");
    if (columns.length) {
      const head = make("tr");
      for (const column of columns) {
        const heading = make("th", "", column);
        heading.scope = "col";
        head.append(heading);
      }
      table.append(make("thead"));
      table.tHead.append(head);
    }
    const body = make("tbody");
    for (const row of cells) {
      const line = make("tr");
      for (const cell of row) line.append(make("td", "", isText(cell) ? cell : ""));
      body.append(line);
    }
    table.append(body);
    const box = make("div", "card-table");
    box.append(table);
    return box;
  }

  // ---- errors --------------------------------------------------------------------------

  /** A 401: the assistant's readers sign in, and this one is not signed in (any more). */
  class SignInNeeded extends Error {}

  /** The server answered, with a status the widget did not ask for. */
  class HttpError extends Error {
    constructor(status) {
      super(`HTTP ${status}`);
      this.status = status;
    }
  }

  /** A 409: the conversation has a turn that is not done (another tab's); `turnId` is it. */
  class Busy extends Error {
    constructor(turnId) {
      super("busy");
      this.turnId = turnId;
    }
  }

  /**
   * What to tell the reader of a failed request: that the assistant cannot be reached only
   * when it could not be (the request never got an answer); that it is unavailable when
   * it answered with a server error; that something went wrong otherwise.
   */
  function troubleKey(error) {
    if (error instanceof HttpError) {
      return error.status >= 500 ? "errors.ai_unavailable" : "errors.ai_failed";
    }
    return error instanceof TypeError ? "ui.connection_trouble" : "errors.ai_failed";
  }

  /** The running turn a 409's body names, or null. */
  async function busyTurn(response) {
    try {
      const body = await response.json();
      return isText(body.turn_id) ? body.turn_id : null;
    } catch (error) {
      return null;
    }
  }

  // ---- the element -------------------------------------------------------------------

  class TurnkeeperChat extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      this.api = (this.getAttribute("api") || FOLDER).replace(/\/+$/, "");
      this.storageKey = `turnkeeper-chat:${this.api}`;
      this.rendered = new Set();
      this.turn = null;
      this.failures = 0;
      this.waiting = false; // told the conversation is busy elsewhere, until its turn ends
      this.epoch = 0; // one more each time the reader changes conversations
      this.attachShadow({ mode: "open" });
      document.addEventListener("visibilitychange", () => this.turn && this.schedule(0));
      this.start();
    }

    async start() {
      const markdown = markdownIt(); // fetched while the catalogs are
      const wanted = wantedLocales(this.getAttribute("lang"));
      while (!(await this.load(wanted))) {
        await new Promise((resolve) => setTimeout(resolve, RETRY_MAX_MS));
      }
      this.markdown = (await markdown) || (await markdownIt());
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
      this.history = find(".history");
      this.historyList = find(".history-list");
      this.section.lang = this.lang;
      find(".title").textContent = this.name;
      this.input.placeholder = this.text("ui.placeholder") || "";
      this.input.setAttribute("aria-label", this.text("ui.placeholder") || "");
      this.sendButton.textContent = this.text("ui.send") || "";
      this.stopButton.textContent = this.text("ui.stop") || "";
      find(".history-toggle").textContent = this.text("ui.conversations") || "";
      find(".new").textContent = this.text("ui.new_conversation") || "";
      find(".threads").hidden = !this.users; // only a signed-in reader has a list
      this.listen(find(".compose"));
      this.listenToThreads(find(".new"));
    }

    listen(form) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.send();
      });
      this.input.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
          event.preventDefault(); // while the assistant works, the draft waits: kept, unsent
          this.send();
        }
      });
      this.section.addEventListener("keydown", (event) => {
        if (event.key !== "Escape") return;
        if (this.history.open) {
          event.preventDefault();
          this.history.open = false;
          this.history.querySelector("summary").focus();
        } else if (this.turn) {
          event.preventDefault();
          this.stop();
        }
      });
      this.stopButton.addEventListener("click", () => this.stop());
    }

    listenToThreads(newButton) {
      newButton.addEventListener("click", () => this.switchTo(null));
      this.history.addEventListener("toggle", () => this.history.open && this.listThreads());
    }

    /** A bubble for one published message, or nothing when it has nothing to show. */
    bubble(message) {
      const user = message.role === "user";
      const content = this.content(message, user);
      if (!content) return null;
      const item = make("li", `bubble ${user ? "user" : "bot"}`);
      if ("key" in message) item.classList.add("notice");
      if (message.card) item.classList.add("card");
      if (message.is_error) item.classList.add("error");
      if (message.id) item.dataset.id = message.id;
      item.append(make("span", "who", user ? this.text("ui.you") || "" : this.name), content);
      this.log.append(item);
      this.log.scrollTop = this.log.scrollHeight;
      return item;
    }

    /**
     * What a bubble holds: a tool's card; the model's text as Markdown; the reader's words,
     * or a notice in the reader's language, as text (a notice is never Markdown).
     */
    content(message, user) {
      if ("card" in message) return cardElement(message.card);
      const text = "text" in message ? message.text : this.text(message.key);
      if (typeof text !== "string" || !text) return null;
      if (user || "key" in message || !this.markdown) return make("p", "text", text);
      const body = make("div", "text markdown");
      body.append(markdownNodes(this.markdown, text));
      return body;
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

    /**
     * While a turn runs, Stop stands in for Send; the text box stays editable (the next
     * question can be written meanwhile, only sending waits). No `aria-busy`: it would
     * hold back the live regions that say what is going on.
     */
    setBusy(busy) {
      this.sendButton.hidden = busy;
      this.sendButton.disabled = busy;
      this.stopButton.hidden = !busy;
      this.stopButton.disabled = !busy;
      this.caption.textContent = busy ? this.text("ui.working") || "" : "";
    }

    /**
     * After a request: `error` if it failed, none if it went through. Failures are said
     * after TROUBLE_AFTER in a row (what to say: `troubleKey`); while the reader waits for
     * another tab's turn, that is what the area says.
     */
    setTrouble(failing, error) {
      this.failures = failing ? this.failures + 1 : 0;
      if (failing) this.say(this.text(troubleKey(error)));
      else if (this.waiting) this.say(this.text("ui.busy"));
      this.trouble.hidden = this.failures < TROUBLE_AFTER && !this.waiting;
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

    /** What is kept of a conversation once no turn of it is being followed. */
    kept(conversation) {
      return { conversation_id: conversation.conversation_id, token: conversation.token };
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

    /** Show the saved conversation (the one open when the page was last left). */
    async restore() {
      const saved = this.saved();
      if (!saved || !saved.conversation_id || !(saved.token || this.users)) {
        if (this.users) await this.checkSignedIn();
        return;
      }
      this.conversation = saved;
      await this.open(saved);
    }

    /**
     * Show a conversation's transcript, then follow its running turn: the server names it
     * (`running_turn_id`), whichever tab or window started it; a server that does not
     * say leaves the one this tab saved.
     */
    async open(saved) {
      const epoch = this.epoch;
      const id = encodeURIComponent(saved.conversation_id);
      let response = null;
      let failure = null;
      try {
        response = await this.call(`/api/conversations/${id}?limit=${this.pageSize()}`);
        if (response.status !== 404 && !response.ok) throw new HttpError(response.status);
      } catch (error) {
        if (error instanceof SignInNeeded) return this.askToSignIn(); // kept for after sign-in
        failure = error;
      }
      if (epoch !== this.epoch) return; // the reader has gone to another conversation
      if (failure) {
        this.setTrouble(true, failure);
        this.trouble.hidden = false;
        return setTimeout(() => epoch === this.epoch && this.open(saved), RETRY_MAX_MS);
      }
      if (response.status === 404) return this.save(null);
      const transcript = await response.json();
      this.setTrouble(false);
      this.show(transcript.messages || []);
      this.offerEarlier(saved, transcript.before);
      const running = "running_turn_id" in transcript ? transcript.running_turn_id : saved.turn_id;
      if (running) this.follow(running);
      else if (saved.turn_id) this.save(this.kept(saved)); // that turn is done
    }

    /** Transcript messages per request: the `page-size` attribute, else PAGE_SIZE. */
    pageSize() {
      const given = Number.parseInt(this.getAttribute("page-size") || "", 10);
      return given > 0 ? Math.min(given, 1000) : PAGE_SIZE;
    }

    /** Atop the log, a button that loads the messages before `before`, while there are some. */
    offerEarlier(conversation, before) {
      const shown = this.log.querySelector(".earlier-row");
      if (shown) shown.remove();
      if (!Number.isInteger(before) || before <= 0) return;
      const row = make("li", "earlier-row");
      const button = make("button", "earlier", this.text("ui.earlier") || "");
      button.type = "button";
      button.addEventListener("click", () => this.loadEarlier(conversation, before, button));
      row.append(button);
      this.log.prepend(row);
      return button;
    }

    /** The page of messages before `before`, put above those shown, the view kept still. */
    async loadEarlier(conversation, before, button) {
      const epoch = this.epoch;
      const id = encodeURIComponent(conversation.conversation_id);
      button.disabled = true;
      let transcript;
      try {
        const path = `/api/conversations/${id}?before=${before}&limit=${this.pageSize()}`;
        const response = await this.call(path);
        if (!response.ok) throw new HttpError(response.status);
        transcript = await response.json();
      } catch (error) {
        if (epoch !== this.epoch) return;
        button.disabled = false;
        return error instanceof SignInNeeded ? this.askToSignIn() : this.setTrouble(true, error);
      }
      if (epoch !== this.epoch) return;
      this.setTrouble(false);
      const anchor = button.parentElement.nextSibling;
      const fromBottom = this.log.scrollHeight - this.log.scrollTop;
      for (const message of transcript.messages || []) {
        if (message.id && this.rendered.has(message.id)) continue;
        if (message.id) this.rendered.add(message.id);
        const item = this.bubble(message);
        if (item) this.log.insertBefore(item, anchor);
      }
      this.log.scrollTop = this.log.scrollHeight - fromBottom;
      const next = this.offerEarlier(conversation, transcript.before);
      (next || this.input).focus();
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
      if (response.status !== 201) throw new HttpError(response.status);
      const { conversation_id, token } = await response.json();
      this.save({ conversation_id, token });
    }

    async send() {
      const question = this.input.value;
      if (!question.trim() || this.turn || !this.section) return;
      const fromButton = this.shadowRoot.activeElement === this.sendButton;
      this.input.value = "";
      this.setBusy(true);
      if (fromButton) this.input.focus(); // the button is hidden now: focus stays in reach
      const pending = this.bubble({ role: "user", text: question });
      const turn = { id: null, version: 0, pending, quiet: 0 };
      this.turn = turn;
      try {
        const turnId = await this.startTurn(question);
        if (turn !== this.turn) return; // the reader has gone to another conversation
        this.follow(turnId);
        this.setTrouble(false);
      } catch (error) {
        if (turn !== this.turn) return;
        this.turn = null;
        pending.remove();
        // Nothing the reader typed is lost: the question, then what was written meanwhile.
        this.input.value = [question, this.input.value].filter((text) => text).join("\n");
        this.setBusy(false);
        this.refused(error);
      }
    }

    /** A question the server did not take: say why; a busy conversation's turn is followed. */
    refused(error) {
      if (error instanceof SignInNeeded) return this.askToSignIn();
      if (error instanceof Busy) {
        this.waiting = Boolean(error.turnId); // said until that turn ends
        this.say(this.text("ui.busy"));
        this.trouble.hidden = false;
        if (error.turnId) this.follow(error.turnId);
        return;
      }
      this.setTrouble(true, error);
      this.trouble.hidden = false;
    }

    async startTurn(question) {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await this.ensureConversation();
        const id = encodeURIComponent(this.conversation.conversation_id);
        const body = JSON.stringify({ text: question, locale: this.lang });
        const path = `/api/conversations/${id}/turns`;
        const response = await this.call(path, { method: "POST", body });
        if (response.status === 202) return (await response.json()).turn_id;
        if (response.status === 409) throw new Busy(await busyTurn(response));
        if (response.status !== 404) throw new HttpError(response.status);
        this.save(null); // the server no longer knows this conversation: start a new one
      }
      throw new HttpError(404);
    }

    /** Poll turn `turnId` until it is done (this tab's, or one another tab or a reload left). */
    follow(turnId) {
      this.turn = this.turn || { version: 0, pending: null, quiet: 0 };
      this.turn.id = turnId;
      this.save({ ...this.conversation, turn_id: turnId });
      this.setBusy(true);
      if (this.turn.stopping) this.cancel(this.turn); // Stop was pressed before the turn had an id
      this.schedule(0);
    }

    // ---- approvals: a tool call that waits for the reader's yes ---------------------

    /** A card per tool use the turn waits for; the cards of uses no longer waiting go. */
    askFor(turn, approvals) {
      const waiting = listed(approvals).filter((a) => a && isText(a.tool_use_id) && isText(a.tool));
      const ids = new Set(waiting.map((a) => a.tool_use_id));
      for (const card of this.log.querySelectorAll(".approval")) {
        if (!ids.has(card.dataset.use)) card.remove();
      }
      for (const approval of waiting) {
        const shown = `.approval[data-use="${CSS.escape(approval.tool_use_id)}"]`;
        if (!this.log.querySelector(shown)) this.log.append(this.approvalCard(turn, approval));
      }
      this.log.scrollTop = this.log.scrollHeight;
    }

    /** What the assistant wants to do (its caption, in the reader's words), the input, and
     *  Approve and Deny. Text only: nothing of the input is read as HTML. */
    approvalCard(turn, approval) {
      const item = make("li", "bubble bot approval");
      item.dataset.use = approval.tool_use_id;
      const unknown = this.text("ui.approval_unknown") || "{tool}";
      const what = this.text(approval.key) || unknown.replace("{tool}", approval.tool);
      const approve = make("button", "approve", this.text("ui.approve") || "");
      const deny = make("button", "deny", this.text("ui.deny") || "");
      approve.type = deny.type = "button";
      approve.addEventListener("click", () => this.decide(turn, item, true));
      deny.addEventListener("click", () => this.decide(turn, item, false));
      const actions = make("div", "approval-actions");
      actions.append(approve, deny);
      const title = make("p", "approval-title", this.text("ui.approval_title") || "");
      item.setAttribute("role", "group");
      item.setAttribute("aria-label", `${title.textContent} ${what}`);
      item.append(make("span", "who", this.name), title, make("p", "approval-what", what));
      item.append(make("pre", "approval-input", summary(approval.input)), actions);
      return item;
    }

    /** The reader's decision, sent; the poll then follows the turn as usual. */
    async decide(turn, item, approved) {
      const buttons = item.querySelectorAll("button");
      for (const button of buttons) button.disabled = true;
      try {
        const path = `/api/turns/${encodeURIComponent(turn.id)}/approvals`;
        const body = JSON.stringify({ tool_use_id: item.dataset.use, approved });
        const response = await this.call(path, { method: "POST", body });
        // 409: decided meanwhile (in another tab), or the turn ended: the poll says how.
        if (!response.ok && response.status !== 409) throw new HttpError(response.status);
        item.remove();
        this.input.focus();
      } catch (error) {
        for (const button of buttons) button.disabled = false;
        if (error instanceof SignInNeeded) return this.askToSignIn();
        this.setTrouble(true, error);
      }
      turn.quiet = 0;
      if (turn === this.turn) this.schedule(0);
    }

    /** Stop, by click or keyboard: asked of the server; focus goes to the text box at once. */
    stop() {
      const turn = this.turn;
      if (!turn || turn.stopping) return;
      turn.stopping = true;
      this.input.focus();
      this.stopButton.disabled = true;
      if (turn.id) this.cancel(turn);
    }

    async cancel(turn) {
      try {
        const path = `/api/turns/${encodeURIComponent(turn.id)}/cancel`;
        const response = await this.call(path, { method: "POST" });
        if (!response.ok && response.status !== 404) throw new HttpError(response.status);
      } catch (error) {
        turn.stopping = false;
        this.stopButton.disabled = false;
        if (error instanceof SignInNeeded) this.askToSignIn();
        else this.setTrouble(true, error);
      }
      turn.quiet = 0;
      if (turn === this.turn) this.schedule(0);
    }

    /** The turn is done: Send again, and focus back in the text box if it was in the widget. */
    finish() {
      clearTimeout(this.timer);
      this.turn = null;
      this.save(this.kept(this.conversation));
      const hadFocus = this.shadowRoot.activeElement !== null;
      this.setBusy(false);
      if (this.waiting) {
        this.waiting = false;
        this.setTrouble(false);
      }
      if (hadFocus) this.input.focus();
    }

    // ---- the reader's conversations (readers sign in) ------------------------------

    /**
     * Leave the conversation shown (a turn of it runs on, unfollowed here) for `next`, one
     * of the reader's earlier ones, or none: a new one, made by the next question.
     */
    switchTo(next) {
      if (this.turn && !this.turn.id) return; // a question on its way: it goes where it was asked
      this.epoch += 1;
      clearTimeout(this.timer);
      this.turn = null;
      this.waiting = false;
      this.setBusy(false);
      this.setTrouble(false);
      this.log.replaceChildren();
      this.rendered.clear();
      this.history.open = false;
      this.save(next);
      if (next) this.open(next);
      this.input.focus();
    }

    /** The reader's conversations, newest first, each a button that opens it. */
    async listThreads() {
      let threads;
      try {
        const response = await this.call("/api/conversations");
        if (!response.ok) throw new HttpError(response.status);
        threads = listed((await response.json()).conversations);
      } catch (error) {
        if (error instanceof SignInNeeded) return this.askToSignIn();
        this.setTrouble(true, error);
        this.trouble.hidden = false; // the reader asked for the list: said at once
        return;
      }
      const known = threads.filter((thread) => thread && isText(thread.conversation_id));
      const none = make("li", "history-empty", this.text("ui.no_conversations") || "");
      const items = known.map((thread) => this.thread(thread));
      this.historyList.replaceChildren(...(items.length ? items : [none]));
    }

    /** One earlier conversation: its title (its first question) and when it was started. */
    thread(listedThread) {
      const { conversation_id: id, title, created_at: created } = listedThread;
      const button = make("button", "thread");
      button.type = "button";
      if (this.conversation && this.conversation.conversation_id === id) {
        button.setAttribute("aria-current", "true");
      }
      button.append(make("span", "thread-title", isText(title) ? title : ""));
      const when = new Date(created);
      if (isText(created) && !Number.isNaN(when.getTime())) {
        const format = { dateStyle: "medium", timeStyle: "short" };
        const time = make("time", "thread-time", when.toLocaleString(this.lang, format));
        time.dateTime = created;
        button.append(time);
      }
      button.addEventListener("click", () => this.switchTo({ conversation_id: id }));
      const item = make("li");
      item.append(button);
      return item;
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
        if (response.status !== 200 && response.status !== 204) {
          throw new HttpError(response.status);
        }
        state = response.status === 200 ? await response.json() : null;
      } catch (error) {
        if (turn !== this.turn) return;
        // Signed out mid-turn: no timer polls again; the tab shown again, or a reload, does.
        if (error instanceof SignInNeeded) return this.askToSignIn();
        this.setTrouble(true, error);
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
      this.askFor(turn, state.done ? [] : state.approvals);
      if (state.done) return this.finish();
      const working = state.status !== "waiting"; // the approval card says what it waits for
      const caption = this.text(state.activity) || this.text("ui.working") || "";
      this.caption.textContent = working ? caption : "";
      this.schedule(this.nextDelay(turn));
    }
  }

  if (!customElements.get("turnkeeper-chat")) {
    customElements.define("turnkeeper-chat", TurnkeeperChat);
  }
})();
