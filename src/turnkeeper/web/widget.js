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
 * the conversation's running turn, whichever tab or window started it, watching its
 * event stream (the answer grows as it is written) and polling its published state
 * (which it settles on; polling alone when there is no stream). The token travels only in the Authorization header, never
 * in a URL; when the assistant's readers sign in, no token is sent at all (the host
 * page's own cookie says who the reader is), a 401 asks them to sign in, and the
 * reader's earlier conversations are offered. A long transcript is read a page at a
 * time (`page-size` messages, default 100): the newest, then older ones when the reader
 * presses "Show earlier messages". Every label comes from the server's
 * catalogs; a key no catalog knows shows nothing.
 *
 * What the model wrote is shown as Markdown, rendered by markdown-it (vendored next
 * to this file, vendor/README.md) with raw HTML off; everything else (the reader's
 * words, notices, a tool's card) is set as text (widget/markdown.js says how).
 *
 * This file only loads the widget, whose code is the ES modules in widget/, served as
 * they are: the element, the controller (widget/element.js); the API client, every
 * failure an outcome (widget/client.js); the transcript renderer (widget/transcript.js);
 * and the parts they use. It imports them itself, so a page may load this file as a
 * classic script (above) or as a module (`<script type="module" src=".../widget.js">`).
 */
(() => {
  // Imported by its full address: a classic script from another origin resolves a relative
  // import() against nothing. As a module, this file has no currentScript, and needs none.
  const script = document.currentScript;
  const element = script ? new URL("widget/element.js", script.src).href : "./widget/element.js";
  import(element).then(({ TurnkeeperChat }) => {
    if (!customElements.get("turnkeeper-chat")) {
      customElements.define("turnkeeper-chat", TurnkeeperChat);
    }
  });
})();
