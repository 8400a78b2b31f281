// The event-stream parser against the WHATWG rules, including every way a frame can be cut
// into chunks by the network.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventStreamParser } from "../likes.js";

function parse(chunks) {
  const got = [];
  const p = new EventStreamParser({
    onEvent: (type, data) => got.push(["event", type, data]),
    onId: (id) => got.push(["id", id]),
    onRetry: (ms) => got.push(["retry", ms]),
  });
  for (const c of chunks) p.push(c);
  return got;
}

const FRAME = 'retry: 2000\n: ping\nid: 1764700000000000\nevent: count\ndata: {"post_id":"42","count":3,"ts":1764700000000000}\n\n' +
  'event: reactions\ndata: {"post_id":"42","counts":{"clap":2},"ts":1764700000000000}\n\n';
const WANT = [
  ["retry", 2000],
  ["id", "1764700000000000"],
  ["event", "count", '{"post_id":"42","count":3,"ts":1764700000000000}'],
  ["event", "reactions", '{"post_id":"42","counts":{"clap":2},"ts":1764700000000000}'],
];

test("a count and its reactions event in one frame", () => {
  assert.deepEqual(parse([FRAME]), WANT);
});

test("the same frame split at every boundary", () => {
  for (let i = 1; i < FRAME.length; i++) {
    assert.deepEqual(parse([FRAME.slice(0, i), FRAME.slice(i)]), WANT, "split at " + i);
  }
});

test("CR, LF and CRLF line ends, a CRLF split between chunks", () => {
  for (const nl of ["\r", "\n", "\r\n"]) {
    // A CR at the end of what arrived may be the first half of a CRLF: the parser holds it
    // until the next byte, here a heartbeat.
    const text = FRAME.replaceAll("\n", nl) + ": ping" + nl;
    assert.deepEqual(parse([text]), WANT, JSON.stringify(nl));
    const cut = text.indexOf("\r\n") + 1;
    if (cut > 0) assert.deepEqual(parse([text.slice(0, cut), text.slice(cut)]), WANT, "CR|LF");
  }
});

test("multi-line data, default type, fields without a value or a space", () => {
  assert.deepEqual(parse(["data:a\ndata: b\ndata\n\n"]), [["event", "message", "a\nb\n"]]);
  assert.deepEqual(parse(["event: x\n\n"]), [], "no data: no event");
  assert.deepEqual(parse(["id: 7\n\n"]), [["id", "7"]], "an id alone still moves the resume point");
});

test("bad id and retry fields are ignored", () => {
  assert.deepEqual(parse(["id: a\0b\nretry: soon\ndata: x\n\n"]), [["event", "message", "x"]]);
});

test("an unterminated event is not dispatched", () => {
  assert.deepEqual(parse(["data: x\n"]), []);
});
