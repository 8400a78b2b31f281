// A stream refused by a node (a full node's 503, or a refusal a page on another origin only sees
// as a TypeError) goes on at once to the next node of `streams`; only when every node refused in
// a row does it wait, as long as the longest Retry-After heard.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { connect } from "../likes.js";
import { fakeNet } from "./fakenet.js";

let net;
let open = [];

// startWith serves /sse from fakenet on the nodes not in refuse, and answers refuse[host](url)
// on the others; it records every stream request's host and time.
function startWith(refuse, streams) {
  net = fakeNet().install();
  const fake = globalThis.fetch;
  const tries = [];
  globalThis.fetch = (url, init) => {
    const u = new URL(String(url));
    if (u.pathname === "/sse") {
      tries.push({ host: u.host, at: performance.now() });
      net.wake();
    }
    if (u.pathname === "/sse" && refuse[u.host]) return refuse[u.host]();
    return fake(url, init);
  };
  const likes = connect({ streams, writer: "http://writer.test", session: false, posts: ["42"] });
  open.push(likes);
  return tries;
}

const full = (secs) => () => Promise.resolve(new Response('{"error":"node full"}\n', {
  status: 503, headers: { "Content-Type": "application/json", "Retry-After": String(secs) },
}));

afterEach(() => {
  open.forEach((l) => l.close());
  open = [];
  net.restore();
});

test("a full node's 503 sends the stream to the next node at once, not after its Retry-After", async () => {
  const tries = startWith({ "full.test": full(30) }, ["http://full.test", "http://free.test"]);
  await net.until(() => net.open().length === 1, "a stream on the free node");
  assert.deepEqual(tries.map((t) => t.host), ["full.test", "free.test"]);
});

test("a refusal seen as a TypeError (no CORS headers) also moves on to the next node", async () => {
  const tries = startWith({ "old.test": () => Promise.reject(new TypeError("Failed to fetch")) }, ["http://old.test", "http://free.test"]);
  await net.until(() => net.open().length === 1, "a stream on the free node");
  assert.deepEqual(tries.map((t) => t.host), ["old.test", "free.test"]);
});

test("when every node refused, the stream waits the longest Retry-After before the next round", async () => {
  const tries = startWith({ "a.test": full(1), "b.test": full(1) }, ["http://a.test", "http://b.test"]);
  await net.until(() => tries.length >= 3, "a second round");
  assert.deepEqual(tries.slice(0, 3).map((t) => t.host), ["a.test", "b.test", "a.test"]);
  assert.ok(tries[1].at - tries[0].at < 500, "no wait between the nodes of one round");
  assert.ok(tries[2].at - tries[1].at >= 1000, `waited ${tries[2].at - tries[1].at} ms after both refused; want the Retry-After (1 s)`);
});
