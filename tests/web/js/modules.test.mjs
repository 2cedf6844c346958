// The widget's files hold together: widget.js loads as a classic script or a module and
// imports the element; every relative import names a file that is there; the element's
// module links (its whole import graph loads).
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import vm from "node:vm";

const WEB = join(dirname(fileURLToPath(import.meta.url)), "../../../src/turnkeeper/web");
const MODULES = readdirSync(join(WEB, "widget")).filter((name) => name.endsWith(".js"));

test("widget.js is a classic script (no static import) that imports the element", () => {
  const source = readFileSync(join(WEB, "widget.js"), "utf-8");
  assert.doesNotThrow(() => new vm.Script(source, { filename: "widget.js" }));
  assert.match(source, /new URL\("widget\/element\.js", script\.src\)/); // classic
  assert.match(source, /"\.\/widget\/element\.js"/); // module
  assert.match(source, /import\(element\)/);
  assert.match(source, /customElements\.define\("turnkeeper-chat", TurnkeeperChat\)/);
});

test("the widget is three or more modules, each importing only files that are there", () => {
  assert.ok(MODULES.length >= 3, MODULES);
  for (const name of MODULES) {
    const source = readFileSync(join(WEB, "widget", name), "utf-8");
    const imports = [...source.matchAll(/from "([^"]+)"/g)].map((m) => m[1]);
    for (const path of imports) {
      assert.match(path, /^\.\/[a-z]+\.js$/, `${name} imports ${path}: only its neighbours`);
      assert.ok(existsSync(join(WEB, "widget", path)), `${name} imports ${path}`);
    }
  }
});

test("the element's module and everything it imports load", async () => {
  globalThis.HTMLElement ??= class {};
  const { TurnkeeperChat } = await import("../../../src/turnkeeper/web/widget/element.js");
  assert.equal(Object.getPrototypeOf(TurnkeeperChat), globalThis.HTMLElement);
  for (const method of ["connectedCallback", "send", "poll", "stop", "switchTo"]) {
    assert.equal(typeof TurnkeeperChat.prototype[method], "function", method);
  }
});
