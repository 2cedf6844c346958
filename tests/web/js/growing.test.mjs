// Markdown as it grows: a streamed answer cut anywhere renders (with the vendored
// markdown-it, as the widget configures it) without its raw syntax showing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { growing } from "../../../src/turnkeeper/web/widget/growing.js";
import { markdownIt } from "../../../src/turnkeeper/web/widget/markdown.js";

const md = await markdownIt();
const rendered = (text) => md.render(growing(text));
/** What a reader would see: the rendered HTML's text. */
const seen = (text) => rendered(text).replace(/<[^>]+>/g, "");

const ANSWER = `**Shipped** today, in *two* parcels:

1. Watch for the ~~courier~~ van
2. Keep the \`A-1001\` reference

\`\`\`python
print("tracking")
\`\`\`

Questions? [Write to us](https://shop.example/help), or_not.`;

describe("growing", () => {
  test("open emphasis is closed at the end: bold shows as bold, never as **", () => {
    assert.equal(rendered("Your order has **shipp"), "<p>Your order has <strong>shipp</strong></p>\n");
    assert.equal(rendered("in *tw"), "<p>in <em>tw</em></p>\n");
    assert.equal(rendered("**bold *and em"), "<p><strong>bold <em>and em</em></strong></p>\n");
    assert.equal(rendered("the ~~old"), "<p>the <s>old</s></p>\n");
  });

  test("an open code fence is closed: the code shows as code, never as ```", () => {
    assert.equal(
      rendered("Run:\n\n```python\nprint(1)"),
      '<p>Run:</p>\n<pre><code class="language-python">print(1)\n</code></pre>\n',
    );
    assert.equal(
      rendered("```\ncode\n``"),
      "<pre><code>code\n</code></pre>\n",
      "a closing fence on its way is not shown as code",
    );
  });

  test("an open code span shows as code", () => {
    assert.equal(rendered("keep the `A-10"), "<p>keep the <code>A-10</code></p>\n");
  });

  test("a marker with nothing after it yet, a fence being typed, a link not whole: left out", () => {
    assert.equal(growing("Hello **"), "Hello ");
    assert.equal(growing("Hello *"), "Hello ");
    assert.equal(growing("Hello `"), "Hello ");
    assert.equal(growing("Hello\n``"), "Hello\n");
    assert.equal(growing("see [Write to"), "see ");
    assert.equal(growing("see [Write to us](https://shop.exa"), "see ");
  });

  test("every prefix of an answer renders without a raw marker", () => {
    for (let end = 1; end <= ANSWER.length; end += 1) {
      const text = seen(ANSWER.slice(0, end));
      assert.doesNotMatch(text, /\*|~~|`|\[|\]\(/, `cut after ${end}: ${JSON.stringify(text)}`);
    }
  });

  test("a text with nothing open is rendered as it is", () => {
    for (const whole of [
      ANSWER,
      "2 * 3 = 6, and 4 * 5",
      "* one\n* two",
      "snake_case_name",
      "**done**",
      "a \\*literal\\* star",
      "see [this](https://example.com)",
      "",
    ]) {
      assert.equal(growing(whole), whole, whole);
    }
  });
});
