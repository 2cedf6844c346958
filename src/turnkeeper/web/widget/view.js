/**
 * The widget's fixed parts: the markup its shadow root holds (nothing in it comes from the
 * model or the server), labelled from the reader's catalog (the list of the reader's
 * conversations is threads.js's).
 */

/** The folder widget.js is served from: its style sheet, and the API's default address. */
const HOME = new URL("../", import.meta.url);
export const STYLE = new URL("widget.css", HOME).href;
export const FOLDER = HOME.href.replace(/\/+$/, "");

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

/**
 * The chat in `root`, labelled: `lang`, the reader's locale; `name`, the assistant's;
 * `text`, a catalog's lookup; `users`, whether readers sign in (only they have a list of
 * conversations). Its parts, by what they are.
 */
export function build(root, { lang, name, text, users }) {
  const style = document.createElement("link");
  style.rel = "stylesheet";
  style.href = STYLE;
  const template = document.createElement("template");
  template.innerHTML = TEMPLATE; // fixed markup only: nothing from the model or the server
  root.append(style, template.content);
  const find = (selector) => root.querySelector(selector);
  const parts = {
    section: find(".chat"),
    log: find(".log"),
    caption: find(".caption"),
    troubleArea: find(".trouble"),
    input: find(".question"),
    sendButton: find(".send"),
    stopButton: find(".stop"),
    history: find(".history"),
    historyList: find(".history-list"),
    compose: find(".compose"),
    newButton: find(".new"),
  };
  parts.section.lang = lang;
  find(".title").textContent = name;
  parts.input.placeholder = text("ui.placeholder") || "";
  parts.input.setAttribute("aria-label", text("ui.placeholder") || "");
  parts.sendButton.textContent = text("ui.send") || "";
  parts.stopButton.textContent = text("ui.stop") || "";
  find(".history-toggle").textContent = text("ui.conversations") || "";
  parts.newButton.textContent = text("ui.new_conversation") || "";
  find(".threads").hidden = !users;
  // Unseen until its stylesheet is in (or failed: then shown as it is), so the reader never
  // sees the bare markup flash first, at the browser's sizes.
  parts.section.style.visibility = "hidden";
  const show = () => parts.section.style.removeProperty("visibility");
  style.addEventListener("load", show, { once: true });
  style.addEventListener("error", show, { once: true });
  return parts;
}
