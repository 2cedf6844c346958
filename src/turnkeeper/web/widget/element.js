/**
 * <turnkeeper-chat>, the element: the controller. It holds the widget's state (the
 * conversation, the turn it follows) and decides what happens when: the reader's
 * actions, the polls and their answers. The requests and how they fail are the API
 * client's (client.js), the bubbles the transcript renderer's (transcript.js), what the
 * reader is told of failures the trouble area's (trouble.js), the fixed parts the view's
 * (view.js); the pace of polls is timing.js's, the pages paging.js's. A turn is watched
 * live through its event stream (stream.js, folded by live.js): the answer grows as it is
 * written; its published state, polled, stays what the widget settles on.
 */

import { loadCatalogs } from "./catalogs.js";
import { Api } from "./client.js";
import { fold, emptyLive, movesState } from "./live.js";
import { wantedLocales } from "./locale.js";
import { markdownIt } from "./markdown.js";
import { earlierCursor, pageSize } from "./paging.js";
import { kept, openable, Saved } from "./saved.js";
import { answers } from "./rating.js";
import { pollDelay, RETRY_MAX_MS, retryDelay } from "./timing.js";
import { Watch } from "./stream.js";
import { Threads } from "./threads.js";
import { Transcript } from "./transcript.js";
import { Trouble } from "./trouble.js";
import { build, FOLDER } from "./view.js";

export class TurnkeeperChat extends HTMLElement {
  connectedCallback() {
    if (this.shadowRoot) return;
    const base = (this.getAttribute("api") || FOLDER).replace(/\/+$/, "");
    this.saved = new Saved(`turnkeeper-chat:${base}`);
    // The token only when readers do not sign in (their cookie says who they are).
    const token = () => (!this.users && this.conversation && this.conversation.token) || null;
    this.client = new Api(base, { token });
    this.turn = null;
    this.epoch = 0; // one more each time the reader changes conversations
    this.attachShadow({ mode: "open" });
    document.addEventListener("visibilitychange", () => this.turn && this.schedule(0));
    this.start();
  }

  async start() {
    const markdown = markdownIt(); // fetched while the catalogs are
    const wanted = wantedLocales(this.getAttribute("lang"));
    let loaded; // the assistant's description and the reader's catalog (catalogs.js)
    while (!(loaded = await loadCatalogs(this.client, wanted))) {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MAX_MS));
    }
    Object.assign(this, loaded); // its catalog, name and users
    this.build((await markdown) || (await markdownIt()));
    await this.restore();
  }

  /** The reader's sentence for `key`, else English, else null: never the key itself. */
  text(key) {
    return this.catalog.text(key);
  }

  /** The caption for activity `key` (null: none), else "Working…". */
  working = (key) => this.text(key) || this.text("ui.working") || "";

  /** The chat's parts (view.js), its renderer and trouble area, and what keys and clicks do. */
  build(markdown) {
    const text = (key) => this.text(key);
    const labels = { lang: this.catalog.lang, name: this.name, text, users: this.users };
    Object.assign(this, build(this.shadowRoot, labels));
    this.transcript = new Transcript(this.log, { text, name: this.name, markdown });
    this.trouble = new Trouble(this.troubleArea, text, this.catalog.lang);
    this.compose.addEventListener("submit", (event) => {
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
    this.newButton.addEventListener("click", () => this.switchTo(null));
    this.threads = new Threads(this); // the reader's conversations, if they sign in
  }

  // ---- the conversation ------------------------------------------------------------

  save(value) {
    this.saved.write(value);
    this.conversation = value;
  }

  /** Show the saved conversation (the one open when the page was last left); readers who
   *  sign in and are not are told so at once, before any question is lost. */
  async restore() {
    const saved = this.saved.read();
    if (openable(saved, this.users)) {
      this.conversation = saved;
      await this.open(saved);
    } else if (this.users && (await this.client.conversations()).kind === "sign-in") {
      this.trouble.signIn();
    }
  }

  /**
   * Show a conversation's transcript (its newest page), then follow its running turn: the
   * server names it (`running_turn_id`), whichever tab or window started it; a server that
   * does not say leaves the one this tab saved.
   */
  async open(saved) {
    const epoch = this.epoch;
    const limit = pageSize(this.getAttribute("page-size"));
    const page = await this.client.transcript(saved.conversation_id, { limit });
    if (page.kind === "sign-in") return this.trouble.signIn(); // kept for after sign-in
    if (epoch !== this.epoch) return; // the reader has gone to another conversation
    if (page.kind === "gone") return this.save(null);
    if (!page.ok) {
      this.trouble.failed(page, true);
      return setTimeout(() => epoch === this.epoch && this.open(saved), RETRY_MAX_MS);
    }
    const transcript = page.body;
    this.trouble.cleared();
    this.show(transcript.messages);
    this.offerEarlier(saved, earlierCursor(transcript));
    const running = "running_turn_id" in transcript ? transcript.running_turn_id : saved.turn_id;
    this.offerRatings(transcript.messages, (m) => m.turn_id, running, transcript.ratings);
    if (running) this.follow(running);
    else if (saved.turn_id) this.save(kept(saved)); // that turn is done
  }

  /** Published messages, below those shown; the first of the reader's claims the question
   *  this tab sent and has drawn already. */
  show(messages) {
    const pending = this.turn && this.turn.pending;
    if (this.transcript.show(messages, pending)) this.turn.pending = null;
  }

  /** Atop the log, a button that loads the messages before `before`, while there are some. */
  offerEarlier(conversation, before) {
    const load = (button) => this.loadEarlier(conversation, before, button);
    return this.transcript.offerEarlier(before, load);
  }

  /** The page of messages before `before`, put above those shown, the view kept still. */
  async loadEarlier(conversation, before, button) {
    const epoch = this.epoch;
    button.disabled = true;
    const limit = pageSize(this.getAttribute("page-size"));
    const page = await this.client.transcript(conversation.conversation_id, { before, limit });
    if (epoch !== this.epoch) return;
    if (!page.ok) {
      button.disabled = false;
      return this.trouble.failed(page);
    }
    this.trouble.cleared();
    this.transcript.prepend(page.body.messages, button.parentElement.nextSibling);
    this.offerRatings(page.body.messages, (m) => m.turn_id, null, page.body.ratings);
    const next = this.offerEarlier(conversation, earlierCursor(page.body));
    (next || this.input).focus();
  }

  // ---- a question, and the turn that answers it --------------------------------------

  async send() {
    const question = this.input.value;
    if (!question.trim() || this.turn || !this.section) return;
    const fromButton = this.shadowRoot.activeElement === this.sendButton;
    this.input.value = "";
    this.threads.close(); // the list never covers the answer or an approval card
    this.setBusy(true);
    if (fromButton) this.input.focus(); // the button is hidden now: focus stays in reach
    const pending = this.transcript.question(question);
    const turn = { id: null, version: 0, pending, quiet: 0 };
    this.turn = turn;
    const started = await this.startTurn(question);
    if (turn !== this.turn) return; // the reader has gone to another conversation
    if (started.ok) {
      this.follow(started.body.turn_id);
      this.trouble.cleared();
      return;
    }
    this.turn = null;
    pending.remove();
    // Nothing the reader typed is lost: the question, then what was written meanwhile.
    this.input.value = [question, this.input.value].filter((text) => text).join("\n");
    this.setBusy(false);
    this.refused(started);
  }

  /** The question, asked in this tab's conversation, or a new one when there is none or
   *  the server no longer knows it. */
  async startTurn(question) {
    let started = null;
    for (let attempt = 0; attempt < 2; attempt += 1) {
      if (!this.conversation) {
        const made = await this.client.createConversation();
        if (!made.ok) return made;
        const { conversation_id, token } = made.body;
        this.save({ conversation_id, token });
      }
      const id = this.conversation.conversation_id;
      started = await this.client.startTurn(id, question, this.catalog.lang);
      if (started.kind !== "gone") return started;
      this.save(null); // the server no longer knows this conversation: start a new one
    }
    return started;
  }

  /** A question the server did not take: say why; a busy conversation's turn is followed. */
  refused(outcome) {
    if (outcome.kind !== "busy") return this.trouble.failed(outcome, true);
    this.trouble.busy(outcome.turnId); // said until that turn ends
    if (outcome.turnId) this.follow(outcome.turnId);
  }

  /** Poll turn `turnId` until it is done (this tab's, or one another tab or a reload left). */
  follow(turnId) {
    this.turn = this.turn || { version: 0, pending: null, quiet: 0 };
    this.turn.id = turnId;
    this.save({ ...this.conversation, turn_id: turnId });
    this.setBusy(true);
    if (this.turn.stopping) this.cancel(this.turn); // Stop was pressed before the turn had an id
    this.schedule(0);
    this.watch(this.turn);
  }

  /** Watch the turn's events as they are written (its whole log: a reload shows the answer
   *  so far); the state is polled when an event says it moved (not sooner than a failed
   *  poll's backoff), and seldom otherwise while the stream is read. */
  watch(turn) {
    if (turn.watch) turn.watch.stop();
    let live = emptyLive();
    const poll = () => turn === this.turn && !this.trouble.failures && this.schedule(0);
    turn.watch = new Watch(this.client, turn.id, {
      event: (event) => {
        if (turn !== this.turn) return;
        this.transcript.live((live = fold(live, event)));
        if (event.type === "activity") this.caption.textContent = this.working(live.activity);
        if (movesState(event)) poll();
      },
      live: (reading) => (turn.streaming = reading) || poll(),
      ended: (action) => poll((turn.waits = action === "wait")), // "wait": read on when it goes on
    });
    turn.watch.resume();
  }

  schedule(delay) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.poll(), delay);
  }

  async poll() {
    const turn = this.turn;
    if (!turn || !turn.id) return;
    if (turn.polling) return void (turn.again = true); // once this poll is answered
    [turn.polling, turn.again] = [true, false];
    const polled = await this.client.turnState(turn.id, turn.version);
    turn.polling = false;
    if (turn !== this.turn) return;
    if (turn.again) this.schedule(0); // an event asked for the state meanwhile
    if (polled.kind === "gone") return this.finish();
    if (!polled.ok) {
      // Signed out mid-turn: no timer polls again; the tab shown again, or a reload, does.
      if (!this.trouble.failed(polled)) return;
      this.schedule(retryDelay(this.trouble.failures, polled.retryAfter));
      return;
    }
    this.trouble.cleared();
    this.apply(turn, polled.body);
  }

  apply(turn, state) {
    const hidden = () => document.visibilityState === "hidden";
    const delay = () => pollDelay(turn.quiet, hidden(), turn.streaming);
    if (!state) {
      turn.quiet += 1;
      return this.schedule(delay());
    }
    turn.version = state.version;
    turn.quiet = 0;
    this.show(state.messages);
    const decide = (card, approved) => this.decide(turn, card, approved);
    this.transcript.approvals(state.done ? [] : state.approvals, decide);
    if (state.done) this.offerRatings(state.messages, () => state.turn_id);
    if (state.done) return this.finish();
    const working = state.status !== "waiting"; // the approval card says what it waits for
    this.caption.textContent = working ? this.working(state.activity) : "";
    if (working && turn.waits) {
      turn.waits = false;
      turn.watch.resume();
    }
    this.schedule(delay());
  }

  /** The reader's decision on an approval card, sent; the poll then follows the turn. */
  async decide(turn, card, approved) {
    const buttons = card.querySelectorAll("button");
    for (const button of buttons) button.disabled = true;
    const decided = await this.client.decide(turn.id, card.dataset.use, approved);
    // "busy": decided meanwhile (in another tab), or the turn ended: the poll says how.
    if (decided.ok || decided.kind === "busy") {
      card.remove();
      this.input.focus();
    } else {
      for (const button of buttons) button.disabled = false;
      if (!this.trouble.failed(decided)) return;
    }
    turn.quiet = 0;
    if (turn === this.turn) this.schedule(0);
  }

  /** Thumbs under the answers of `messages` (`turnOf`: a message's turn), as `ratings` says. */
  offerRatings(messages, turnOf, running = null, ratings = null) {
    const rate = async (turnId, rating) => {
      const rated = await this.client.rate(turnId, rating);
      return rated.ok || (this.trouble.failed(rated, true) && false);
    };
    this.transcript.offerRatings(answers(messages, turnOf, running, ratings), rate);
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
    const cancelled = await this.client.cancel(turn.id);
    if (!cancelled.ok && cancelled.kind !== "gone") {
      turn.stopping = false;
      this.stopButton.disabled = false;
      this.trouble.failed(cancelled);
    }
    turn.quiet = 0;
    if (turn === this.turn) this.schedule(0);
  }

  /** The turn is done: Send again, and focus back in the text box if it was in the widget. */
  finish() {
    clearTimeout(this.timer);
    if (this.turn && this.turn.watch) this.turn.watch.stop();
    this.transcript.endLive();
    this.turn = null;
    this.save(kept(this.conversation));
    const hadFocus = this.shadowRoot.activeElement !== null;
    this.setBusy(false);
    if (this.trouble.waiting) this.trouble.reset();
    if (hadFocus) this.input.focus();
  }

  // ---- the reader's conversations (readers sign in) --------------------------------

  /**
   * Leave the conversation shown (a turn of it runs on, unfollowed here) for `next`, one
   * of the reader's earlier ones, or none: a new one, made by the next question.
   */
  switchTo(next, { keepList = false } = {}) {
    if (this.turn && !this.turn.id) return; // a question on its way: it goes where it was asked
    this.epoch += 1;
    clearTimeout(this.timer);
    if (this.turn && this.turn.watch) this.turn.watch.stop();
    this.turn = null;
    this.setBusy(false);
    this.trouble.reset();
    this.transcript.clear();
    this.history.open = keepList && this.history.open;
    this.save(next);
    if (next) this.open(next);
    this.input.focus();
  }

  // ---- what the reader is told -----------------------------------------------------

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
}
