// The CommonJS builds (dist/, written by build.mjs before the tests) load with require() and
// export what the ES modules do.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

test("require() loads the CommonJS builds", () => {
  const likes = require("../dist/likes.cjs");
  const elements = require("../dist/likes-elements.cjs");
  assert.equal(typeof likes.connect, "function");
  assert.equal(typeof elements.LikeButton, "function");
  assert.throws(() => elements.defaultStreams(), /configure\(\{ streams/, "a CommonJS build has no streams default");
});
