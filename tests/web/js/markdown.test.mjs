// markdown-it as the widget configures it, the vendored file itself (found where the widget
// looks for it), and the tags and attributes the widget keeps of its HTML.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import {
  allowed,
  allowedTag,
  MARKDOWN,
  markdownIt,
} from "../../../src/turnkeeper/web/widget/markdown.js";

const md = await markdownIt();

describe("the vendored markdown-it, configured for model text", () => {
  test("the widget finds it in web/vendor/, beside widget.js", () => {
    const path = fileURLToPath(MARKDOWN);
    assert.match(path, /src\/turnkeeper\/web\/vendor\/markdown-it\.esm\.min\.mjs$/);
    assert.match(readFileSync(path, "utf-8"), /^\/\*! markdown-it 15\.0\.3/);
    assert.notEqual(md, null);
  });

  test("Markdown is drawn; a line break is a line break", () => {
    assert.equal(md.render("**bold** and *em*"), "<p><strong>bold</strong> and <em>em</em></p>\n");
    assert.equal(md.render("one\ntwo"), "<p>one<br>\ntwo</p>\n");
  });

  test("raw HTML stays text", () => {
    const html = md.render('<img src=x onerror="window.pwned = 1"><script>x()</script>');
    assert.ok(!html.includes("<img"), html);
    assert.ok(!html.includes("<script"), html);
    assert.ok(html.includes("&lt;img"), html);
  });

  test("links only to https:, http: and mailto:, in a new tab, without opener or referrer", () => {
    const html = md.render(
      "[a](https://a.example) [b](http://b.example) [c](mailto:c@x.example) " +
        "[d](javascript:alert(1)) [e](data:text/html,hi) [f](ftp://f.example) [g](tel:123) " +
        "and https://bare.example",
    );
    const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
    assert.deepEqual(hrefs, [
      "https://a.example",
      "http://b.example",
      "mailto:c@x.example",
      "https://bare.example",
    ]);
    assert.equal((html.match(/target="_blank" rel="noopener noreferrer"/g) || []).length, 4);
  });

  test("an image is its alt text: no request leaves the page", () => {
    const html = md.render("see ![the *chart*](https://images.example/x.png)");
    assert.equal(html, "<p>see the chart</p>\n");
  });

  test("every tag markdown-it makes from a rich answer is one the widget keeps", () => {
    const answer = [
      "# Title",
      "## Sub",
      "> quoted",
      "",
      "1. one",
      "2. two",
      "",
      "- x",
      "",
      "```js\ncode()\n```",
      "",
      "`inline` ~~gone~~ ---",
      "",
      "---",
      "",
      "| a | b |",
      "|:--|--:|",
      "| 1 | 2 |",
      "",
      "[link](https://x.example)",
    ].join("\n");
    const tags = new Set([...md.render(answer).matchAll(/<([a-z0-9]+)/g)].map((m) => m[1]));
    assert.ok(tags.has("table") && tags.has("blockquote") && tags.has("pre"), [...tags]);
    for (const tag of tags) assert.ok(allowedTag(tag.toUpperCase()), tag);
  });
});

describe("what the widget keeps of markdown-it's HTML", () => {
  test("tags: markdown-it's own; never a script, an image, a frame", () => {
    for (const tag of ["P", "A", "TABLE", "CODE", "PRE", "H3"]) assert.equal(allowedTag(tag), true);
    for (const tag of ["SCRIPT", "IMG", "IFRAME", "STYLE", "SVG", "FORM", "INPUT"]) {
      assert.equal(allowedTag(tag), false, tag);
    }
  });

  test("attributes: a safe link, a list's start, a code language, a cell's alignment", () => {
    assert.equal(allowed("A", "href", "https://x.example"), true);
    assert.equal(allowed("A", "href", "mailto:x@x.example"), true);
    assert.equal(allowed("A", "href", "javascript:alert(1)"), false);
    assert.equal(allowed("A", "href", " javascript:alert(1)"), false);
    assert.equal(allowed("A", "onclick", "x()"), false);
    assert.equal(allowed("OL", "start", "3"), true);
    assert.equal(allowed("CODE", "class", "language-js"), true);
    assert.equal(allowed("TD", "style", "text-align:right"), true);
    assert.equal(allowed("TD", "style", "background:url(https://x.example)"), false);
    assert.equal(allowed("P", "style", "text-align:right"), false);
    assert.equal(allowed("P", "class", "x"), false);
  });
});
