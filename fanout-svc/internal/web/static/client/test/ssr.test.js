// Server rendering imports the elements in node, with no DOM: the import must neither throw nor
// touch customElements or HTMLElement.
import { test } from "node:test";
import assert from "node:assert/strict";

test("the elements import without a DOM", async () => {
  assert.equal(globalThis.HTMLElement, undefined, "this test runs without a DOM");
  assert.equal(globalThis.customElements, undefined, "this test runs without a DOM");
  const m = await import("../likes-elements.js");
  assert.equal(typeof m.LikeButton, "function");
  assert.equal(typeof m.ReactionBar, "function");
  assert.equal(m.likes(), null, "no connection opened on import");
});
