// A Likes against a fake network (test/fakenet.js): ordering by ts, reactions and their deltas,
// follow and unfollow over streams, and react() with its 429.
import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import { connect, ReactionError, LikeError } from "../likes.js";
import { fakeNet, nextUpdate, frame } from "./fakenet.js";

const T = 1764700000000000; // a post version: unix microseconds
let net;
let open = [];

function start(options) {
  net = fakeNet().install();
  const likes = connect({ streams: "http://fanout.test", writer: "http://writer.test", session: false, ...options });
  open.push(likes);
  return likes;
}

afterEach(() => {
  open.forEach((l) => l.close());
  open = [];
  net.restore();
});

test("counts are ordered by ts: an older frame or read never replaces a newer one", async () => {
  const likes = start({ posts: ["42"] });
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  s.write(frame("42", 5, T + 5));
  await nextUpdate(likes, "42", (p) => p.count === 5);
  s.write(frame("42", 3, T + 3) + frame("42", 6, T + 6));
  const p = await nextUpdate(likes, "42");
  assert.equal(p.count, 6, "the frame at ts+3 was dropped, the one at ts+6 shown");
  net.reply("GET", "/counts", 200, { posts: [{ post_id: "42", count: 4, ts: T + 4, reactions: { clap: 1 } }] });
  await likes.refresh();
  assert.equal(likes.post("42").count, 6, "an older read does not win over the stream");
});

test("a failover's epoch orders after every ts before it: the new primary's lower count is shown", async () => {
  const likes = start({ posts: ["42"] });
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  s.write(frame("42", 5, T + 5));
  await nextUpdate(likes, "42", (p) => p.count === 5);
  // The failover discarded the like behind count 5: the new primary holds 4 at an older ts.
  s.write(`id: ${2 ** 52 + T + 4}\nevent: count\ndata: {"post_id":"42","count":4,"ts":${T + 4},"epoch":1}\n\n`);
  const p = await nextUpdate(likes, "42");
  assert.equal(p.count, 4, "epoch 1 replaces epoch 0 whatever their ts");
  s.write(frame("42", 6, T + 6)); // a late frame of epoch 0
  net.reply("GET", "/counts", 200, { posts: [{ post_id: "42", count: 7, ts: T + 7, reactions: {} }] });
  await likes.refresh();
  assert.equal(likes.post("42").count, 4, "nothing of epoch 0 wins over epoch 1, stream or read");
  net.reply("GET", "/counts", 200, { posts: [{ post_id: "42", count: 5, ts: T + 5, epoch: 1, reactions: {} }] });
  await likes.refresh();
  assert.equal(likes.post("42").count, 5, "and epoch 1 goes on by ts");
});

test("reactions: the first state gives no delta, a newer one gives the growth, an older one nothing", async () => {
  const likes = start({ posts: ["42"] });
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  s.write(frame("42", 1, T + 1, { clap: 12, heart: 3 }));
  let p = await nextUpdate(likes, "42", (p) => p.reactions.clap === 12);
  assert.deepEqual(p.reactionDeltas, {}, "the snapshot tells what was there, not what just happened");
  s.write(frame("42", 1, T + 2, { clap: 15, heart: 3, wow: 1 }));
  p = await nextUpdate(likes, "42", (p) => p.reactions.clap === 15);
  assert.deepEqual(p.reactionDeltas, { clap: 3, wow: 1 }, "coalesced reactions arrive as one jump");
  s.write(frame("42", 1, T + 1, { clap: 99 }) + frame("42", 2, T + 3, { clap: 15, heart: 3, wow: 1 }));
  p = await nextUpdate(likes, "42", (p) => p.count === 2);
  assert.deepEqual(p.reactions, { clap: 15, heart: 3, wow: 1 }, "the old frame's reactions were dropped");
  assert.deepEqual(p.reactionDeltas, {});
});

test("a read's reactions ({} for none) make the first stream state a delta", async () => {
  net = fakeNet();
  net.reply("GET", "/counts", 200, { posts: [{ post_id: "7", count: 0, ts: T, reactions: {} }] });
  net.install();
  const likes = connect({ streams: "http://fanout.test", writer: "http://writer.test", session: false, posts: ["7"] });
  open.push(likes);
  await nextUpdate(likes, "7", (p) => p.count === 0);
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  s.write(frame("7", 0, T + 1, { fire: 2 }));
  const p = await nextUpdate(likes, "7", (p) => p.reactions.fire === 2);
  assert.deepEqual(p.reactionDeltas, { fire: 2 });
});

test("follow spreads posts over streams of postsPerStream, reusing the ones that did not change", async () => {
  const likes = start({ posts: ["a", "b"], postsPerStream: 3 });
  const [first] = await net.until(() => net.open().length === 1 && net.open(), "the first stream");
  assert.deepEqual(first.posts, ["a", "b"]);
  first.write(frame("a", 1, T + 1));
  await nextUpdate(likes, "a", (p) => p.count === 1);

  net.reply("GET", "/counts", 200, { posts: [{ post_id: "c", count: 9, ts: T, reactions: {} }] });
  const before = net.requests.length;
  const read = likes.follow(["c", "d", "e", "a"]);
  await net.until(() => net.open().length === 2, "two streams");
  const [x, y] = net.open();
  assert.deepEqual([x.posts, y.posts].sort(), [["a", "b", "c"], ["d", "e"]], "c fills the first stream, d and e a new one");
  assert.ok(first.ended, "the first stream reconnected with its new posts");
  const full = net.open().find((s) => s.posts.length === 3);
  assert.equal(full.lastEventId, null, "a reshaped stream starts from a full snapshot, not a resume");
  await read;
  const reads = net.requests.slice(before).filter((r) => r.url.startsWith("/counts"));
  assert.deepEqual(reads.map((r) => r.url), ["/counts?posts=c,d,e"], "only the new posts are read");
  assert.equal(likes.post("c").count, 9);

  const untouched = net.open().find((s) => s.posts.length === 2);
  likes.unfollow(["c"]);
  await net.until(() => net.open().length === 2 && net.open().some((s) => s.posts.join() === "a,b"), "the first stream without c");
  assert.ok(!untouched.ended, "the stream of d and e kept its connection");
  likes.unfollow(["d", "e"]);
  await net.until(() => untouched.ended, "the emptied stream closed");
  assert.equal(net.open().length, 1);
  assert.equal(likes.post("d"), undefined);
  assert.throws(() => likes.follow(["bad id"]), TypeError);
});

test("react shows at once, takes the reply, and after a 429 refuses locally until Retry-After", async () => {
  net = fakeNet();
  net.reply("GET", "/likes", 200, { posts: [{ post_id: "42", count: 0, ts: T, reactions: { clap: 2 }, liked: false }] });
  net.install();
  const likes = connect({ streams: "http://fanout.test", writer: "http://writer.test", user: "ann", posts: ["42"] });
  open.push(likes);
  await nextUpdate(likes, "42", (p) => p.reactions.clap === 2);

  net.reply("POST", "/react/42/clap", 200, { post_id: "42", kind: "clap", count: 5, ts: T + 1 });
  const shown = nextUpdate(likes, "42", (p) => p.reactions.clap === 3);
  const reply = await likes.react("42", "clap");
  assert.deepEqual((await shown).reactionDeltas, { clap: 1 }, "the user's own reaction floats at once");
  assert.equal(reply.count, 5);
  assert.equal(likes.post("42").reactions.clap, 5, "the reply's count, as no newer state arrived");
  const sent = net.requests.find((r) => r.url === "/react/42/clap");
  assert.equal(sent.method, "POST");
  assert.equal(sent.headers["X-User-ID"], "ann");

  net.reply("POST", "/react/42/heart", 429, { error: "too soon", retry_after_ms: 300 }, { "Retry-After": "1" });
  const err = await likes.react("42", "heart").catch((e) => e);
  assert.ok(err instanceof ReactionError && err instanceof LikeError, "a typed error");
  assert.deepEqual([err.status, err.retryAfter, err.kind, err.local], [429, 300, "heart", false], "retry_after_ms is exact");
  assert.equal(likes.post("42").reactions.heart, undefined, "the optimistic heart was undone");
  assert.ok(likes.post("42").reactBlockedUntil > Date.now());

  const n = net.requests.length;
  const local = await likes.react("42", "clap").catch((e) => e);
  assert.ok(local.local && local.status === 429 && local.retryAfter > 0 && local.retryAfter <= 300, "refused here: " + local.message);
  assert.equal(net.requests.length, n, "no request while the Retry-After runs");

  await new Promise((resolve) => setTimeout(resolve, local.retryAfter + 20)); // the wait the writer named
  net.reply("POST", "/react/42/clap", 200, { post_id: "42", kind: "clap", count: 6, ts: T + 2 });
  assert.equal((await likes.react("42", "clap")).count, 6, "taken again once the wait has passed");
  await assert.rejects(likes.react("42", "no such kind!"), ReactionError);
  await assert.rejects(likes.react("43", "clap"), /not followed/);
});

test("an empty Likes is idle and follows later", async () => {
  const likes = start({ posts: [] });
  assert.equal(likes.state, "idle");
  likes.follow(["1"]);
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  s.write(frame("1", 2, T));
  await nextUpdate(likes, "1", (p) => p.count === 2);
  assert.equal(likes.state, "live");
});

test("the user's own reaction floats once: the stream's state that includes it brings no delta", async () => {
  net = fakeNet();
  net.reply("GET", "/likes", 200, { posts: [{ post_id: "9", count: 0, ts: T, reactions: {}, liked: false }] });
  net.install();
  const likes = connect({ streams: "http://fanout.test", writer: "http://writer.test", user: "bo", posts: ["9"] });
  open.push(likes);
  await nextUpdate(likes, "9", (p) => p.count === 0);
  const [s] = await net.until(() => net.open().length === 1 && net.open(), "a stream");
  let floated = 0;
  likes.addEventListener("update", (e) => { floated += e.detail.reactionDeltas.clap || 0; });
  net.reply("POST", "/react/9/clap", 200, { post_id: "9", kind: "clap", count: 1, ts: T + 1 });
  const sent = likes.react("9", "clap");
  s.write(frame("9", 0, T + 1, { clap: 1 })); // the stream may bring it before the reply
  await sent;
  s.write(frame("9", 0, T + 2, { clap: 2 })); // someone else's
  await nextUpdate(likes, "9", (p) => p.reactions.clap === 2);
  assert.equal(floated, 2, "one float for the user's clap, one for the other's");
});
