// fakenet stands in for the network of one test: it replaces globalThis.fetch, records every
// request, holds each stream open until the test writes frames to it or ends it, and answers
// writer requests with what the test queued. Only the transport is fake: likes.js parses real
// bytes from a real ReadableStream inside a real Response.

export function fakeNet() {
  const net = {
    requests: [], // {method, url, headers}
    streams: [], // open and ended streams, in order: {url, posts, lastEventId, write(text), end()}
    replies: new Map(), // "METHOD /path" -> [{status, body, headers}], taken in order
    waiters: [],
    install() {
      this.saved = globalThis.fetch;
      globalThis.fetch = (url, init = {}) => this.fetch(String(url), init);
      return this;
    },
    restore() {
      globalThis.fetch = this.saved;
    },
    // reply queues an answer to the next request of method to path (without the query).
    reply(method, path, status, body, headers = {}) {
      const key = method + " " + path;
      if (!this.replies.has(key)) this.replies.set(key, []);
      this.replies.get(key).push({ status, body, headers });
    },
    async fetch(url, init) {
      const u = new URL(url, "http://fake.test");
      const method = init.method || "GET";
      this.requests.push({ method, url: u.pathname + u.search, headers: init.headers || {} });
      this.wake();
      if (u.pathname === "/sse") return this.stream(u, init.signal);
      const queued = this.replies.get(method + " " + u.pathname);
      const r = queued && queued.length ? queued.shift() : { status: 200, body: { posts: [] } };
      return new Response(JSON.stringify(r.body), { status: r.status, headers: { "Content-Type": "application/json", ...r.headers } });
    },
    stream(u, signal) {
      let controller;
      const body = new ReadableStream({ start(c) { controller = c; } });
      const s = {
        url: u.pathname + u.search,
        posts: u.searchParams.get("posts").split(","),
        lastEventId: u.searchParams.get("lastEventId"),
        ended: false,
        write(text) { controller.enqueue(new TextEncoder().encode(text)); },
        end() { if (!s.ended) { s.ended = true; controller.close(); } },
      };
      signal?.addEventListener("abort", () => {
        if (s.ended) return;
        s.ended = true;
        controller.error(new DOMException("aborted", "AbortError"));
        net.wake();
      });
      this.streams.push(s);
      this.wake();
      return Promise.resolve(new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } }));
    },
    // open returns the streams not ended.
    open() {
      return this.streams.filter((s) => !s.ended);
    },
    // until resolves once check() is truthy, re-checked after every request and stream change;
    // it rejects after 2 s with what, so a test fails instead of hanging.
    until(check, what) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("timed out waiting for " + what)), 2000);
        const test = () => {
          const v = check();
          if (!v) return false;
          clearTimeout(timer);
          resolve(v);
          return true;
        };
        if (!test()) this.waiters.push(test);
      });
    },
    wake() {
      queueMicrotask(() => { this.waiters = this.waiters.filter((w) => !w()); });
    },
  };
  return net;
}

// nextUpdate resolves with the next "update" event of likes for post (any post when omitted)
// that satisfies check.
export function nextUpdate(likes, post, check = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no update of " + post)), 2000);
    const on = (e) => {
      if ((post && e.detail.id !== post) || !check(e.detail)) return;
      clearTimeout(timer);
      likes.removeEventListener("update", on);
      resolve(e.detail);
    };
    likes.addEventListener("update", on);
  });
}

// frame is one count event and, when counts is given, the reactions event of the same frame.
export function frame(post, count, ts, counts) {
  let s = `id: ${ts}\nevent: count\ndata: {"post_id":"${post}","count":${count},"ts":${ts}}\n\n`;
  if (counts) s += `event: reactions\ndata: ${JSON.stringify({ post_id: post, counts, ts })}\n\n`;
  return s;
}

// Node 18 (Debian 12's nodejs) has CustomEvent only behind a flag; browsers and Node 19+ have it.
globalThis.CustomEvent ??= class CustomEvent extends Event {
  constructor(type, init = {}) {
    super(type, init);
    this.detail = init.detail ?? null;
  }
};
