/**
 * What the model wrote, as Markdown, safely: rendered by markdown-it (vendored beside
 * widget.js, vendor/README.md; imported from there, so one script tag is all a page needs)
 * with raw HTML off, links only to https:, http: and mailto:, images as their alt text;
 * its HTML, held to the tags markdown-it makes from text, is the only HTML the widget ever
 * inserts. Without markdown-it (it could not be loaded), answers are shown as plain text.
 */

/** The folder widget.js is served from: this module's folder's parent. */
const HOME = new URL("../", import.meta.url);
export const MARKDOWN = new URL("vendor/markdown-it.esm.min.mjs", HOME).href;

/** The only addresses a link may have: in Markdown, and (https: alone) on a card. */
export const SAFE_LINK = /^(https?:|mailto:)/i;
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

let loading = null;

/**
 * markdown-it configured for model text, imported once per page from the vendor folder
 * beside widget.js; null if it cannot be (the answers are then shown as text). A failed
 * import is tried again by the next element that asks.
 */
export function markdownIt() {
  loading =
    loading ||
    import(MARKDOWN).then(
      (module) => configured(module.default),
      () => {
        loading = null;
        return null;
      },
    );
  return loading;
}

/**
 * Raw HTML shown as text (`html: false`); bare addresses linked, but only those
 * `validateLink` lets through (https:, http:, mailto:), opened in a new tab without
 * the opener or a referrer; an image becomes its alt text (no request leaves the page
 * because a model wrote an address); a line break is a line break, as in a chat.
 */
export function configured(markdownit) {
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

/** Whether an element's attribute may stay: one its tag may have, a safe link, an alignment. */
export function allowed(tagName, name, value) {
  return (
    (ATTRIBUTES[tagName] || []).includes(name) &&
    (name !== "href" || SAFE_LINK.test(value)) &&
    (name !== "style" || ALIGNED.test(value))
  );
}

/** Whether an element of this tag may stay (else it is replaced by its text). */
export const allowedTag = (tagName) => TAGS.has(tagName);

/**
 * `text` rendered as Markdown, as nodes: parsed in a template (inert: nothing in it runs
 * or loads), then held to the tags and attributes above, so that even a markdown-it bug
 * could not put a script, an image or a javascript: link on the page.
 */
export function markdownNodes(md, text) {
  const template = document.createElement("template");
  template.innerHTML = md.render(text); // markdown-it's HTML, `html: false`: see above
  for (const element of [...template.content.querySelectorAll("*")]) {
    if (!allowedTag(element.tagName)) {
      element.replaceWith(element.textContent);
      continue;
    }
    for (const { name, value } of [...element.attributes]) {
      if (!allowed(element.tagName, name, value)) element.removeAttribute(name);
    }
  }
  return template.content;
}
