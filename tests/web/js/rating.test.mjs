// Which answers take thumbs, and which thumb each shows pressed: the rating the reader
// gave that turn, as the transcript page says (`ratings`), so a reload shows it again.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { answers } from "../../../src/turnkeeper/web/widget/rating.js";

const turnOf = (message) => message.turn_id;
const page = [
  { id: "m1", role: "user", text: "one", turn_id: "t_1" },
  { id: "m2", role: "bot", text: "looking", turn_id: "t_1" },
  { id: "m3", role: "bot", text: "first", turn_id: "t_1" },
  { id: "m4", role: "user", text: "two", turn_id: "t_2" },
  { id: "m5", role: "bot", text: "second", turn_id: "t_2" },
  { id: "m6", role: "user", text: "three", turn_id: "t_3" },
  { id: "m7", role: "bot", key: "notices.stopped", turn_id: "t_3" },
  { id: "m8", role: "user", text: "four", turn_id: "t_4" },
];

describe("answers", () => {
  test("each turn's last text of the model's, pressed as the page rates the turn", () => {
    const ratings = { t_1: "down", t_2: "up" };
    assert.deepEqual(answers(page, turnOf, null, ratings), [
      { turnId: "t_1", id: "m3", rating: "down" },
      { turnId: "t_2", id: "m5", rating: "up" },
    ]);
  });

  test("a turn not rated shows neither thumb pressed", () => {
    assert.deepEqual(answers(page, turnOf, null, { t_1: "up" }), [
      { turnId: "t_1", id: "m3", rating: "up" },
      { turnId: "t_2", id: "m5", rating: null },
    ]);
  });

  test("no ratings (a server that does not say them), or ratings not an object: none pressed", () => {
    for (const ratings of [undefined, null, "up", 3, ["up"]]) {
      const rated = answers(page, turnOf, null, ratings).map((answer) => answer.rating);
      assert.deepEqual(rated, [null, null], String(ratings));
    }
  });

  test("a rating that is not up or down, or a name the object only inherits: none pressed", () => {
    const odd = JSON.parse('{"t_1": "meh", "t_2": {"rating": "up"}}');
    assert.deepEqual(
      answers(page, turnOf, null, odd).map((answer) => answer.rating),
      [null, null],
    );
    const inherited = [{ id: "m9", role: "bot", text: "hi", turn_id: "toString" }];
    assert.deepEqual(answers(inherited, turnOf, null, {}), [
      { turnId: "toString", id: "m9", rating: null },
    ]);
  });

  test("the turn still running has no thumbs, rated or not", () => {
    const ratings = { t_1: "up", t_2: "down" };
    assert.deepEqual(answers(page, turnOf, "t_2", ratings), [
      { turnId: "t_1", id: "m3", rating: "up" },
    ]);
  });

  test("a done turn's state (no ratings given): its answer unpressed", () => {
    const state = page.slice(3, 5);
    assert.deepEqual(answers(state, () => "t_2"), [{ turnId: "t_2", id: "m5", rating: null }]);
  });
});
