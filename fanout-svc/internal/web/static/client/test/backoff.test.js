// The reconnect backoff: doubling per failure, capped at 30 s, jittered over the upper half.
import { test } from "node:test";
import assert from "node:assert/strict";
import { backoffDelay } from "../likes.js";

test("doubles per failure in a row from the retry hint", () => {
  const top = () => 1; // the ceiling itself
  assert.deepEqual([0, 1, 2, 3].map((f) => backoffDelay(2000, f, top)), [2000, 4000, 8000, 16000]);
});

test("capped at 30 s however many failures", () => {
  assert.equal(backoffDelay(2000, 10, () => 1), 30000);
  assert.equal(backoffDelay(2000, 1000, () => 1), 30000);
});

test("jitter spreads over the upper half of the ceiling", () => {
  assert.equal(backoffDelay(2000, 2, () => 0), 4000);
  assert.equal(backoffDelay(2000, 2, () => 0.5), 6000);
  for (let i = 0; i < 100; i++) {
    const d = backoffDelay(1000, 3);
    assert.ok(d >= 4000 && d <= 8000, "delay " + d);
  }
});
