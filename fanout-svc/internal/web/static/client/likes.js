// likes.js: live like counts, reactions, "watching now" numbers and the user's own likes for any
// page. A dependency-free ES module served by fanout-svc at /client/likes.js (and published as
// the npm package @likes/client). See the README, "The client library", for the API and a
// copy-paste example; likes.d.ts declares its types.
//
// It reads the stream with fetch() rather than EventSource, for three reasons a reader of the
// README should know: EventSource never surfaces the ": ping" heartbeat comments, so it cannot
// tell a silent dead socket from a quiet post (fetch sees every byte, which is what the silence
// watchdog needs); it gives up for good after an HTTP error such as a full node's 503 and never
// shows the Retry-After (fetch sees the status and honours it); and it can only resume through
// its own Last-Event-ID header, where a new request may go to another node with the
// lastEventId query parameter the server also accepts (a plain GET: no CORS preflight).

const POST_ID = /^[A-Za-z0-9_-]{1,64}$/;
const KIND = /^[A-Za-z0-9_-]{1,64}$/; // a reaction kind, as REACTION_KINDS names them
const DEFAULT_HEARTBEAT_MS = 15000; // fanout-svc's default HEARTBEAT_INTERVAL
const DEFAULT_RETRY_MS = 2000; // until the server's retry: arrives
const MAX_BACKOFF_MS = 30000;
const REQUEST_TIMEOUT_MS = 10000;
const SILENT_HEARTBEATS = 3; // the watchdog's patience, in heartbeat intervals

/** LikeError is how like() and unlike() fail, after the optimistic change was undone. */
export class LikeError extends Error {
  constructor(message, { post, op, status = 0, retryAfter = 0, local = false }) {
    super(message);
    this.name = "LikeError";
    this.post = post; // the post id
    this.op = op; // "like", "unlike" or "react"
    this.status = status; // the writer's HTTP status; 0: no answer (network or timeout)
    this.retryAfter = retryAfter; // ms to wait before the writer takes changes again; 0: none
    this.local = local; // true: refused here, without a request, because a Retry-After runs
  }
}

/**
 * ReactionError is how react() fails. A 429 means this user reacted to the post less than the
 * writer's REACTION_INTERVAL ago: retryAfter says how long until the next reaction is taken, and
 * until then react() refuses locally (local: true) without asking the writer.
 */
export class ReactionError extends LikeError {
  constructor(message, fields) {
    super(message, { ...fields, op: "react" });
    this.name = "ReactionError";
    this.kind = fields.kind; // the reaction kind, e.g. "clap"
  }
}

/**
 * connect follows posts live and returns a Likes. Options:
 *   streams   fanout base URL, or a list of them tried in turn ("" = this page's origin)
 *   writer    writer-svc base URL ("" = this page's origin)
 *   posts     post ids to follow (more later with follow(), fewer with unfollow())
 *   token     the site's bearer token, or a function returning one (or a promise of one)
 *   user      X-User-ID to send when there is no token (only a writer run with
 *             TRUST_USER_HEADER=true, behind a gateway, believes it)
 *   session   without a token or user: take an anonymous session from the writer (POST
 *             /session) at the first like and keep it in localStorage, so the user's likes
 *             survive a reload (default true; false: no identity, counts only)
 *   heartbeat the fanout's HEARTBEAT_INTERVAL in ms (default 15000): the watchdog reconnects
 *             after three intervals of silence
 *   postsPerStream (64, MAX_POSTS_PER_STREAM), postsPerRead (100, MAX_POSTS_PER_READ)
 */
export function connect(options) {
  return new Likes(options);
}

/**
 * Likes is one page's live view of its posts. It dispatches "update", "state", "session" and
 * "error" events.
 */
export class Likes extends EventTarget {
  #opts;
  #posts = new Map(); // id -> internal post state
  #streams = []; // each follows at most postsPerStream posts
  #reshaped = new Set(); // streams whose posts changed, restarted together in a microtask
  #closed = false;
  #blocked = null; // {until, status, message}: a Retry-After from the writer still running
  #reads = 0; // GET /likes generation, so an older answer never overwrites a newer one
  #sessions = null; // Sessions: this browser's anonymous session with the writer, when on

  constructor(options = {}) {
    super();
    this.#opts = normalize(options);
    if (this.#opts.session) {
      this.#sessions = new Sessions(this.#opts.writer, (s) => this.dispatchEvent(new CustomEvent("session", { detail: s })));
    }
    this.#add(this.#opts.posts).forEach((s) => s.start());
    if (typeof addEventListener === "function") {
      addEventListener("online", this.#online);
      addEventListener("pagehide", this.#pagehide);
      addEventListener("pageshow", this.#pageshow);
    }
    this.refresh();
  }

  /**
   * state is "connecting", "live", "reconnecting" or "closed", over all of this page's streams;
   * "idle" while it follows no post.
   */
  get state() {
    if (this.#closed) return "closed";
    if (!this.#streams.length) return "idle";
    if (this.#streams.every((s) => s.live)) return "live";
    return this.#streams.some((s) => s.connects > 0) ? "reconnecting" : "connecting";
  }

  /** connects counts the stream connections that came up, the first included. */
  get connects() {
    return this.#streams.reduce((n, s) => n + s.connects, 0);
  }

  /**
   * post returns what is known of one post: {id, count, watching, liked, pending, reactions,
   * reactBlockedUntil}, or undefined when it is not followed.
   */
  post(id) {
    const p = this.#posts.get(id);
    if (!p) return undefined;
    // count and watching are null until known; pending is "like" or "unlike" while one is sent;
    // reactions is {kind: count} ({} until known, and for a post nobody reacted to);
    // reactBlockedUntil is the Date.now() until which react() refuses locally, 0 when it does not.
    return {
      id, count: p.count, watching: p.watching, liked: p.liked, pending: p.pending ? p.pending.op : null,
      reactions: { ...p.reactions }, reactBlockedUntil: p.reactUntil > Date.now() ? p.reactUntil : 0,
    };
  }

  /** posts returns post(id) for every followed post, in order. */
  posts() {
    return [...this.#posts.keys()].map((id) => this.post(id));
  }

  /**
   * follow adds posts: they go into the streams with room first (each follows at most
   * postsPerStream), new streams take the rest, and the user's likes of them are read. Streams
   * whose posts did not change keep their connections. Throws TypeError on a bad post id.
   */
  follow(ids) {
    const fresh = checkPosts(ids).filter((id) => !this.#posts.has(id));
    if (this.#closed || !fresh.length) return Promise.resolve();
    this.#add(fresh).forEach((s) => s.start());
    this.#restartReshaped();
    this.#emitState();
    return this.#read(this.#reads, fresh);
  }

  /**
   * unfollow stops following posts: each stream that held one reconnects without it, one left
   * empty closes, the others keep their connections.
   */
  unfollow(ids) {
    if (this.#closed) return;
    const gone = new Set(checkPosts(ids).filter((id) => this.#posts.has(id)));
    if (!gone.size) return;
    for (const id of gone) this.#posts.delete(id);
    for (const s of this.#streams) {
      const left = s.posts.filter((id) => !gone.has(id));
      if (left.length === s.posts.length) continue;
      s.posts = left;
      this.#reshaped.add(s);
    }
    for (const s of this.#streams.filter((s) => !s.posts.length)) {
      s.stop();
      this.#reshaped.delete(s);
    }
    this.#streams = this.#streams.filter((s) => s.posts.length);
    this.#restartReshaped();
    this.#emitState();
  }

  /** like likes a post: shown at once, undone if the writer refuses. */
  like(id) {
    return this.#change(id, true);
  }

  /** unlike removes the user's like: shown at once, undone if the writer refuses. */
  unlike(id) {
    return this.#change(id, false);
  }

  /** toggle likes a post not liked and unlikes a liked one. */
  toggle(id) {
    const p = this.#posts.get(id);
    return this.#change(id, !(p && p.liked));
  }

  /**
   * react sends one reaction of kind to a post (POST /react/{id}/{kind}). It shows at once (the
   * kind's count, and a delta of one in the update), is undone if the writer refuses, and
   * resolves with the writer's reply {post_id, kind, count, ts}. It rejects with a ReactionError:
   * after a 429 (one reaction per user per post per REACTION_INTERVAL) it carries retryAfter, and
   * until that has passed react() refuses the post locally, without a request.
   */
  async react(id, kind) {
    const p = this.#posts.get(id);
    if (!p) throw new ReactionError("post " + id + " is not followed", { post: id, kind });
    if (!KIND.test(String(kind))) throw new ReactionError("reaction kind " + JSON.stringify(kind) + " is not 1-64 of A-Z a-z 0-9 _ -", { post: id, kind });
    const now = Date.now();
    if (p.reactUntil > now) {
      throw new ReactionError("wait before reacting to this post again", { post: id, kind, status: 429, retryAfter: p.reactUntil - now, local: true });
    }
    const blocked = this.#blocked;
    if (blocked && blocked.status === 503 && blocked.until > now) {
      throw new ReactionError(blocked.message, { post: id, kind, status: 503, retryAfter: blocked.until - now, local: true });
    }
    const before = p.rseen;
    p.reactions[kind] = (p.reactions[kind] || 0) + 1;
    this.#emit(p, { [kind]: 1 });
    try {
      const url = this.#opts.writer + "/react/" + encodeURIComponent(id) + "/" + encodeURIComponent(kind);
      const reply = await this.#authorized(await this.#identity(true), true, (headers) => request(url, "POST", headers));
      // As with a like: the stream's newer state may already include later reactions.
      if (reply && Number.isFinite(reply.count) && p.rseen === before) p.reactions[kind] = reply.count;
      return reply;
    } catch (err) {
      if (p.rseen === before) {
        p.reactions[kind] = Math.max(0, p.reactions[kind] - 1);
        if (!p.reactions[kind]) delete p.reactions[kind];
      }
      const e = new ReactionError(err && err.message ? err.message : String(err), {
        post: id, kind, status: err instanceof LikeError ? err.status : 0, retryAfter: err instanceof LikeError ? err.retryAfter : 0,
      });
      if (e.status === 429 && e.retryAfter > 0) p.reactUntil = Date.now() + e.retryAfter;
      if (e.status === 503 && e.retryAfter > 0) this.#blocked = { until: Date.now() + e.retryAfter, status: 503, message: e.message };
      throw e;
    } finally {
      this.#emit(p);
    }
  }

  /** setToken changes the bearer token (a new login) and reloads which posts the user likes. */
  setToken(token) {
    this.#opts.token = token || "";
    return this.#identityChanged();
  }

  /**
   * session is this browser's anonymous session ({user_id, expires_at} in unix seconds), or null
   * before the first like took one. A "session" event says when it is taken or renewed.
   */
  get session() {
    const s = this.#sessions && this.#sessions.current();
    return s ? { user_id: s.user_id, expires_at: s.expires_at } : null;
  }

  /** setUser changes the X-User-ID sent without a token and reloads the user's likes. */
  setUser(user) {
    this.#opts.user = user || "";
    return this.#identityChanged();
  }

  /**
   * refresh reads the counts and the user's likes with GET /likes (GET /counts without an
   * identity). It runs at connect, after every reconnect (another device may have liked
   * meanwhile) and after setToken or setUser. A failure is dispatched as an "error" event.
   */
  refresh() {
    if (this.#closed) return Promise.resolve();
    return this.#read(++this.#reads, [...this.#posts.keys()]);
  }

  /** reconnect drops every stream and opens it again now, skipping any backoff. */
  reconnect() {
    this.#streams.forEach((s) => s.restart());
  }

  /** close stops every stream and timer; the Likes is "closed" for good. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    if (typeof removeEventListener === "function") {
      removeEventListener("online", this.#online);
      removeEventListener("pagehide", this.#pagehide);
      removeEventListener("pageshow", this.#pageshow);
    }
    this.#streams.forEach((s) => s.stop());
    this.#emitState();
  }

  // ---- inside --------------------------------------------------------------------------------

  // #add starts following ids (new, valid): into the streams with room, in order, then into new
  // streams, which it returns unstarted. The streams that changed are marked for
  // #restartReshaped.
  #add(ids) {
    for (const id of ids) {
      this.#posts.set(id, {
        id, count: null, ts: 0, epoch: 0, watching: null, watchTS: 0, liked: false, pending: null, seen: 0, changes: 0,
        reactions: {}, rts: 0, repoch: 0, rknown: false, rseen: 0, reactUntil: 0,
      });
    }
    const max = this.#opts.postsPerStream;
    let i = 0;
    for (const s of this.#streams) {
      if (i >= ids.length) break;
      if (s.posts.length >= max) continue;
      const take = ids.slice(i, i + max - s.posts.length);
      s.posts = s.posts.concat(take);
      i += take.length;
      this.#reshaped.add(s);
    }
    const created = [];
    for (; i < ids.length; i += max) {
      const s = new Stream(ids.slice(i, i + max), this.#streams.length, this.#opts, {
        closed: () => this.#closed,
        event: (type, data) => this.#onEvent(type, data),
        live: (reconnected) => this.#onLive(reconnected),
      });
      this.#streams.push(s);
      created.push(s);
    }
    return created;
  }

  // #restartReshaped reconnects, once, every stream whose posts changed, from a full snapshot.
  #restartReshaped() {
    for (const s of this.#reshaped) s.reshape();
    this.#reshaped.clear();
  }

  #identityChanged() {
    for (const p of this.#posts.values()) {
      if (p.pending || !p.liked) continue;
      p.liked = false;
      p.changes++;
      this.#emit(p);
    }
    return this.refresh();
  }

  // #read is one read of ids, dispatching a failure as an "error" event unless a newer refresh
  // (generation) started meanwhile.
  async #read(generation, ids) {
    try {
      await this.#readLikes(generation, ids);
    } catch (err) {
      const e = err instanceof LikeError ? err : new LikeError(String(err && err.message), {});
      if (generation === this.#reads && !this.#closed) this.dispatchEvent(new CustomEvent("error", { detail: e }));
    }
  }

  // #readLikes reads ids with GET /likes in chunks of postsPerRead, applied unless a newer refresh
  // started meanwhile. A read never starts a session: a visitor who has liked nothing has no
  // likes to read.
  async #readLikes(generation, ids) {
    const who = await this.#identity(false);
    const path = Object.keys(who.headers).length ? "/likes" : "/counts";
    const marks = new Map(ids.map((id) => [id, this.#posts.get(id)?.changes]));
    for (let i = 0; i < ids.length; i += this.#opts.postsPerRead) {
      const chunk = ids.slice(i, i + this.#opts.postsPerRead);
      const url = this.#opts.writer + path + "?posts=" + chunk.map(encodeURIComponent).join(",");
      const body = await this.#authorized(who, false, (headers) => request(url, "GET", headers));
      if (generation !== this.#reads || this.#closed) return;
      for (const r of (body && Array.isArray(body.posts)) ? body.posts : []) {
        const p = this.#posts.get(String(r.post_id));
        if (!p) continue;
        this.#applyCount(p, r.count, r.ts, r.epoch);
        const deltas = this.#applyReactions(p, r.reactions, r.ts, r.epoch);
        // A like sent after this read started knows better than the read does.
        if (path === "/likes" && !p.pending && p.changes === marks.get(p.id)) p.liked = r.liked === true;
        this.#emit(p, deltas);
      }
    }
  }

  // #onEvent handles one event of a stream: a count, a post's reactions, or a watching number
  // (reactions and watching carry no id, so they never move the stream's resume point).
  #onEvent(type, data) {
    let u;
    try {
      u = JSON.parse(data);
    } catch {
      return;
    }
    const p = u && this.#posts.get(String(u.post_id));
    if (!p) return;
    if (type === "count") {
      if (this.#applyCount(p, u.count, u.ts, u.epoch)) this.#emit(p);
    } else if (type === "reactions") {
      const deltas = this.#applyReactions(p, u.counts, u.ts, u.epoch);
      if (deltas) this.#emit(p, deltas);
    } else if (type === "watching" && Number.isFinite(u.watching) && u.watching >= 0) {
      // ts is the start of the interval the number was counted in, the same on every node: a
      // number from an older interval (a node behind another after a reconnect) is dropped.
      const ts = Number.isFinite(u.ts) ? u.ts : 0;
      if (ts < p.watchTS) return;
      p.watchTS = ts;
      if (u.watching === p.watching) return;
      p.watching = u.watching;
      this.#emit(p);
    }
  }

  #onLive(reconnected) {
    this.#emitState();
    if (reconnected) this.refresh();
  }

  #online = () => {
    if (this.state !== "live") this.reconnect();
  };

  // A page kept in the back/forward cache keeps its fetches open; its streams would go on counting
  // it as watching. They are closed when it goes in and reopened (resuming) when it comes back.
  #pagehide = (e) => {
    if (e.persisted) this.#streams.forEach((s) => s.pause());
  };

  #pageshow = (e) => {
    if (e.persisted) this.#streams.forEach((s) => s.resume());
  };

  // #applyCount takes a count from the stream or a read if it is newer than what the post shows:
  // states are ordered by epoch, then ts (the post's version, strictly increasing within an
  // epoch), so an older answer can never win. The epoch rises when the writer's Redis fails over:
  // the new primary's state replaces what the post shows even if its ts is lower, because the
  // failover discarded the changes behind the higher one. That is the one case where a count goes
  // down without an unlike: back to what the new primary holds.
  #applyCount(p, count, ts, epoch) {
    if (!Number.isFinite(count)) return false;
    ts = Number.isFinite(ts) ? ts : 0;
    epoch = Number.isFinite(epoch) ? epoch : 0;
    if (p.count !== null && !newer(epoch, ts, p.epoch, p.ts)) return false;
    p.ts = ts;
    p.epoch = epoch;
    p.seen++;
    if (p.count === count) return false;
    p.count = count;
    return true;
  }

  // #applyReactions takes a post's whole reaction state if it is newer (by ts, the post's version)
  // than the one shown, and returns the deltas it brings, {kind: n} for each kind that grew:
  // {} for the first state known (it tells what was there, not what just happened), null when
  // the state is not newer. The deltas are against what the page shows, the user's own optimistic
  // reaction included, so that one floats once.
  #applyReactions(p, counts, ts, epoch) {
    const next = reactionCounts(counts);
    if (!next) return null;
    ts = Number.isFinite(ts) ? ts : 0;
    epoch = Number.isFinite(epoch) ? epoch : 0;
    if (p.rknown && !newer(epoch, ts, p.repoch, p.rts)) return null;
    const deltas = {};
    if (p.rknown) {
      for (const [kind, n] of Object.entries(next)) {
        const grew = n - (p.reactions[kind] || 0);
        if (grew > 0) deltas[kind] = grew;
      }
    }
    p.reactions = next;
    p.rts = ts;
    p.repoch = epoch;
    p.rknown = true;
    p.rseen++;
    return deltas;
  }

  async #change(id, like) {
    const p = this.#posts.get(id);
    const op = like ? "like" : "unlike";
    if (!p) throw new LikeError("post " + id + " is not followed", { post: id, op });
    if (p.pending) return p.pending.promise;
    if (p.liked === like) return { post_id: id, count: p.count, liked: false };
    const blocked = this.#blocked;
    if (blocked && blocked.until > Date.now()) {
      throw new LikeError(blocked.message, { post: id, op, status: blocked.status, retryAfter: blocked.until - Date.now(), local: true });
    }
    const before = { liked: p.liked, count: p.count, seen: p.seen };
    p.liked = like;
    if (p.count !== null) p.count = Math.max(0, p.count + (like ? 1 : -1));
    p.changes++;
    const promise = this.#send(p, op, before);
    p.pending = { op, promise };
    this.#emit(p);
    return promise;
  }

  async #send(p, op, before) {
    try {
      const url = this.#opts.writer + "/like/" + encodeURIComponent(p.id);
      const reply = await this.#authorized(await this.#identity(true), true, (headers) => request(url, op === "like" ? "POST" : "DELETE", headers));
      // The stream brings the new count within a blink; the reply's count is taken only when no
      // newer count arrived meanwhile, since that one may already include later likes.
      if (reply && Number.isFinite(reply.count) && p.seen === before.seen) p.count = reply.count;
      return reply;
    } catch (err) {
      p.liked = before.liked;
      if (p.seen === before.seen) p.count = before.count;
      const e = err instanceof LikeError ? err : new LikeError(String(err && err.message), {});
      e.post = p.id;
      e.op = op;
      if (e.retryAfter > 0 && (e.status === 429 || e.status === 503)) {
        this.#blocked = { until: Date.now() + e.retryAfter, status: e.status, message: e.message };
      }
      throw e;
    } finally {
      p.pending = null;
      this.#emit(p);
    }
  }

  // #identity returns the headers that name the user: the site's token, else X-User-ID, else this
  // browser's session, which is taken from the writer only when create is set (a like). session is
  // the session token used, so that a refusal of it can renew it.
  async #identity(create) {
    let token = this.#opts.token;
    if (typeof token === "function") token = await token();
    if (token) return { headers: { Authorization: "Bearer " + token }, session: "" };
    if (this.#opts.user) return { headers: { "X-User-ID": this.#opts.user }, session: "" };
    const session = this.#sessions ? await this.#sessions.token(create) : "";
    return { headers: session ? { Authorization: "Bearer " + session } : {}, session };
  }

  // #authorized sends with id's headers; when the writer refuses a session token (401: expired
  // past its grace, or signed with a key it no longer holds) the session is renewed once and the
  // request sent again with the new token.
  async #authorized(id, create, send) {
    try {
      return await send(id.headers);
    } catch (err) {
      if (!id.session || !(err instanceof LikeError) || err.status !== 401) throw err;
      await this.#sessions.renew(id.session);
      const again = await this.#identity(create);
      if (!again.session || again.session === id.session) throw err;
      return send(again.headers);
    }
  }

  // #emit dispatches an update of p, unless it is no longer followed. deltas are the reactions
  // that just arrived, {kind: n}, so that a page can float one emoji per reaction.
  #emit(p, deltas) {
    if (this.#posts.get(p.id) !== p) return;
    this.dispatchEvent(new CustomEvent("update", { detail: { ...this.post(p.id), reactionDeltas: deltas || {} } }));
  }

  #emitState() {
    this.dispatchEvent(new CustomEvent("state", { detail: { state: this.state, connects: this.connects } }));
  }
}

// newer reports whether the state (epoch, ts) supersedes (oldEpoch, oldTS): a later epoch, or a
// later ts within one (see #applyCount).
function newer(epoch, ts, oldEpoch, oldTS) {
  return epoch > oldEpoch || (epoch === oldEpoch && ts > oldTS);
}

// reactionCounts checks a reactions object from the writer or the stream: {kind: count} with
// valid kinds and counts; null when it is not one.
function reactionCounts(v) {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out = {};
  for (const [kind, n] of Object.entries(v)) {
    if (KIND.test(kind) && Number.isFinite(n) && n > 0) out[kind] = n;
  }
  return out;
}

// normalize checks the options once, so a mistake fails at connect() and not at the first like.
function normalize(o) {
  const list = Array.isArray(o.streams) ? o.streams : [o.streams ?? ""];
  const streams = list.map((s) => baseURL(String(s)));
  if (!streams.length) throw new TypeError("likes: streams must name at least one fanout URL");
  return {
    streams,
    writer: baseURL(String(o.writer ?? "")),
    posts: checkPosts(o.posts || []),
    token: o.token || "",
    user: o.user || "",
    session: o.session !== false,
    heartbeat: positive(o.heartbeat, DEFAULT_HEARTBEAT_MS),
    postsPerStream: positive(o.postsPerStream, 64),
    postsPerRead: positive(o.postsPerRead, 100),
  };
}

// checkPosts returns ids as distinct strings, or throws a TypeError naming the first bad one.
function checkPosts(ids) {
  if (!Array.isArray(ids)) throw new TypeError("likes: posts must be a list of post ids");
  const posts = [...new Set(ids.map(String))];
  const bad = posts.find((id) => !POST_ID.test(id));
  if (bad !== undefined) throw new TypeError("likes: post id " + JSON.stringify(bad) + " is not 1-64 of A-Z a-z 0-9 _ -");
  return posts;
}

function baseURL(s) {
  return s.replace(/\/+$/, "");
}

function positive(v, fallback) {
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

// Sessions keeps this browser's anonymous session with one writer: {token, user_id, expires_at,
// taken_at}, taken with POST /session at the first like, kept in localStorage under
// "likes.session:" and the writer's URL (so every tab and every reload is the same user), and
// renewed with POST /session/refresh when less than half its life, at most RENEW_BEFORE_S, is
// left. All requests share one renewal in flight, so a burst of likes starts one session.
class Sessions {
  constructor(writer, changed) {
    this.writer = writer;
    this.key = "likes.session:" + (writer || (typeof location === "object" ? location.origin : ""));
    this.changed = changed;
    this.memory = null; // where the session lives when localStorage is unavailable
    this.pending = null; // the renewal in flight
    this.off = false; // the writer serves no sessions (404: SESSIONS=false, a site that requires login)
  }

  // current returns the stored session, read anew each time: another tab may have renewed it.
  current() {
    try {
      const s = JSON.parse(localStorage.getItem(this.key));
      if (s && typeof s.token === "string" && s.token && Number.isFinite(s.expires_at)) return s;
    } catch { /* no storage, or not ours: memory */ }
    return this.memory;
  }

  #store(s) {
    this.memory = s;
    try {
      localStorage.setItem(this.key, JSON.stringify(s));
    } catch { /* disabled or full: memory holds it for this page */ }
  }

  // token returns a session token good for a while: the stored one, a renewed one, or, when
  // create is set, a new session's; "" when there is none and create is not set.
  async token(create) {
    const s = this.current();
    if (s && !due(s)) return s.token;
    if ((!s && !create) || this.off) return "";
    const got = await this.#obtain(s);
    return got ? got.token : "";
  }

  // renew replaces a session token the writer refused, unless another request already did.
  async renew(refused) {
    const s = this.current();
    if (s && s.token === refused && !this.off) await this.#obtain({ ...s, expires_at: 0 });
  }

  #obtain(old) {
    if (!this.pending) {
      this.pending = this.#fetch(old).finally(() => {
        this.pending = null;
      });
    }
    return this.pending;
  }

  // #fetch refreshes old for the same user when the writer still allows it, else starts a session
  // for a new anonymous user (a refresh refused past SESSION_MAX_AGE, or an unknown key). null: the
  // writer has no sessions, and requests go without an identity (the writer says what it needs).
  async #fetch(old) {
    let body = null;
    if (old) {
      try {
        body = await request(this.writer + "/session/refresh", "POST", { Authorization: "Bearer " + old.token });
      } catch (err) {
        if (!(err instanceof LikeError) || err.status !== 401) throw err;
      }
    }
    if (!body) {
      try {
        body = await request(this.writer + "/session", "POST", {});
      } catch (err) {
        if (!(err instanceof LikeError) || err.status !== 404) throw err;
        this.off = true;
        return null;
      }
    }
    if (!body || typeof body.token !== "string" || !body.token || !Number.isFinite(body.expires_at)) {
      throw new LikeError("the writer sent no session", {});
    }
    const s = { token: body.token, user_id: String(body.user_id), expires_at: body.expires_at, taken_at: Date.now() / 1000 };
    this.#store(s);
    this.changed({ user_id: s.user_id, expires_at: s.expires_at });
    return s;
  }
}

const RENEW_BEFORE_S = 300;

// due reports whether a session should be renewed before its next use.
function due(s) {
  const now = Date.now() / 1000;
  const life = Number.isFinite(s.taken_at) ? s.expires_at - s.taken_at : RENEW_BEFORE_S * 2;
  return s.expires_at - now < Math.min(RENEW_BEFORE_S, life / 2);
}

// request sends one writer request and returns its JSON body, or throws a LikeError that says
// what the writer answered (status, the wait in ms from the body's retry_after_ms, which is
// exact, else from Retry-After, which is rounded up to seconds, and its error text).
async function request(url, method, headers) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
  let resp;
  let body = null;
  try {
    resp = await fetch(url, {
      method, headers: { Accept: "application/json", ...headers }, mode: "cors", credentials: "omit", cache: "no-store", signal: abort.signal,
    });
    body = await resp.json().catch(() => null);
  } catch {
    throw new LikeError(abort.signal.aborted ? "the writer did not answer in time" : "could not reach the writer", {});
  } finally {
    clearTimeout(timer);
  }
  if (!resp.ok) {
    const message = body && typeof body.error === "string" ? body.error : "HTTP " + resp.status;
    const exact = body && Number.isFinite(body.retry_after_ms) && body.retry_after_ms > 0 ? body.retry_after_ms : 0;
    throw new LikeError(message, { status: resp.status, retryAfter: exact || retryAfterMs(resp) });
  }
  return body;
}

// retryAfterMs reads Retry-After (seconds or an HTTP date) in ms; 0 when absent.
function retryAfterMs(resp) {
  const v = resp.headers.get("Retry-After");
  if (!v) return 0;
  if (/^\d+$/.test(v.trim())) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : 0;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * backoffDelay is the wait before reconnect attempt number failures (0 for the first after a
 * success): the server's retry hint doubled per failure in a row, capped at 30 s, and jittered
 * over the upper half of that ceiling so that viewers that failed together do not return
 * together. random is Math.random, or a fixed value in tests.
 */
export function backoffDelay(retry, failures, random = Math.random) {
  const ceiling = Math.min(MAX_BACKOFF_MS, retry * 2 ** failures);
  return ceiling / 2 + random() * ceiling / 2;
}

/**
 * EventStreamParser parses text/event-stream by the WHATWG rules (fields, comments, CR, LF and
 * CRLF line ends, also split across chunks, multi-line data, id and retry) and calls
 * onEvent(type, data) for each event with data, onId(id) for each event that set an id (the
 * resume point; an event may carry only an id) and onRetry(ms) for each valid retry field.
 * Comments, such as the ": ping" heartbeat, call nothing: a reader that needs to see them sees
 * the bytes.
 */
export class EventStreamParser {
  #buf = "";
  #event = { type: "", data: [], id: null };

  constructor({ onEvent = () => {}, onId = () => {}, onRetry = () => {} } = {}) {
    this.onEvent = onEvent;
    this.onId = onId;
    this.onRetry = onRetry;
  }

  /** push parses the next decoded chunk of the stream. */
  push(text) {
    const buf = this.#buf + text;
    let start = 0;
    for (;;) {
      const cr = buf.indexOf("\r", start);
      const lf = buf.indexOf("\n", start);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0 || (end === cr && end === buf.length - 1)) break; // a CR may start a CRLF
      const line = buf.slice(start, end);
      start = end + (buf[end] === "\r" && buf[end + 1] === "\n" ? 2 : 1);
      this.#line(line);
    }
    this.#buf = buf.slice(start);
  }

  #line(line) {
    const event = this.#event;
    if (line === "") {
      if (event.id !== null) this.onId(event.id);
      if (event.data.length) this.onEvent(event.type || "message", event.data.join("\n"));
      this.#event = { type: "", data: [], id: null };
      return;
    }
    if (line[0] === ":") return; // a comment: the heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value[0] === " ") value = value.slice(1);
    if (field === "event") event.type = value;
    else if (field === "data") event.data.push(value);
    else if (field === "id" && !value.includes("\0")) event.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.onRetry(Number(value));
  }
}

// Stream is one /sse?posts= connection and its reconnect loop. Every byte that arrives, the
// ": ping" heartbeat comments included, rearms the silence watchdog; when it fires (no response
// head, or nothing at all for three heartbeat intervals) the request is aborted and the stream
// reconnects, to the next URL in the list when there are several.
class Stream {
  constructor(posts, index, options, hooks) {
    this.posts = posts; // Likes changes them (follow, unfollow) and then calls reshape()
    this.options = options;
    this.hooks = hooks; // closed(), event(type, data), live(reconnected)
    this.next = index; // spreads a page's streams over the URLs, then walks them on failure
    this.live = false;
    this.connects = 0;
    this.lastId = "";
    this.retry = DEFAULT_RETRY_MS;
    this.failures = 0;
    this.refusals = 0; // nodes that refused in a row: when all have, wait
    this.hinted = 0; // the longest Retry-After of those refusals, in ms
    this.reshaped = false; // the next connection follows other posts: not a reconnect
    this.abort = null; // aborts the current request
    this.wake = new AbortController(); // cuts a backoff short
    this.hurry = false; // reconnect without waiting
    this.paused = false; // no request until resume()
    this.stopped = false;
  }

  start() {
    this.#loop();
  }

  stop() {
    this.stopped = true;
    if (this.abort) this.abort.abort();
    this.wake.abort();
  }

  restart() {
    this.hurry = true;
    this.failures = 0;
    if (this.abort) this.abort.abort();
    this.wake.abort();
  }

  // reshape reconnects now with the changed posts and no resume point: a resume would bring only
  // what changed since, which says nothing of a post the stream did not follow before.
  reshape() {
    this.lastId = "";
    this.reshaped = true;
    this.restart();
  }

  // pause ends the current request and holds the loop until resume() or stop().
  pause() {
    this.paused = true;
    if (this.abort) this.abort.abort();
    this.wake.abort();
  }

  resume() {
    if (!this.paused) return;
    this.paused = false;
    this.hurry = true;
    this.wake.abort();
  }

  #over() {
    return this.stopped || this.hooks.closed();
  }

  async #loop() {
    while (!this.#over()) {
      if (this.paused) {
        await sleep(2 ** 31 - 1, this.wake.signal); // the longest a timer takes; resume() cuts it
        this.wake = new AbortController();
        continue;
      }
      const wait = await this.#session();
      this.#setLive(false);
      if (this.#over()) return;
      if (!this.hurry && !this.paused) await sleep(wait, this.wake.signal);
      this.hurry = false;
      this.wake = new AbortController();
    }
  }

  // #session runs one request to its end and returns how long to wait before the next.
  async #session() {
    const o = this.options;
    const base = o.streams[this.next % o.streams.length];
    let url = base + "/sse?posts=" + this.posts.map(encodeURIComponent).join(",");
    if (this.lastId) url += "&lastEventId=" + encodeURIComponent(this.lastId);
    const abort = new AbortController();
    this.abort = abort;
    let silent = false;
    let watchdog = 0;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        abort.abort();
      }, SILENT_HEARTBEATS * o.heartbeat);
    };
    arm();
    try {
      const resp = await fetch(url, { headers: { Accept: "text/event-stream" }, mode: "cors", credentials: "omit", cache: "no-store", signal: abort.signal });
      if (!resp.ok || !String(resp.headers.get("Content-Type")).startsWith("text/event-stream")) {
        resp.body?.cancel().catch(() => {});
        return this.#refused(retryAfterMs(resp));
      }
      this.failures = 0;
      this.refusals = 0;
      this.hinted = 0;
      this.connects++;
      this.#setLive(true);
      await this.#read(resp.body, arm);
      return this.retry; // the server closed the stream (a drain or a restart): its hint says when
    } catch {
      if (this.#over()) return 0;
      if (silent) {
        this.next++; // a silent node may be stuck or cut off: try the next one
        return this.retry;
      }
      if (this.live) return this.retry;
      // No answer: a node that is down, or (to a page on another origin) a refusal without CORS
      // headers, which fetch reports as the same TypeError. Another node may take us.
      return this.#refused(0);
    } finally {
      clearTimeout(watchdog);
    }
  }

  // #refused moves to the next node after a refusal (a full or draining node's 503, a 429) or a
  // failed request, and returns the wait before it: none while a node of the list has not refused
  // in this round, else the longest Retry-After the round heard (jittered, so that a refused crowd
  // does not return together) or, with no hint, the backoff.
  #refused(hintMs) {
    this.next++;
    this.refusals++;
    this.hinted = Math.max(this.hinted, hintMs);
    if (this.refusals < this.options.streams.length) return 0;
    const hinted = this.hinted;
    this.refusals = 0;
    this.hinted = 0;
    return hinted > 0 ? hinted * (1 + Math.random() / 2) : backoffDelay(this.retry, this.failures++);
  }

  #setLive(live) {
    if (this.live === live) return;
    this.live = live;
    const reconnected = live && this.connects > 1 && !this.reshaped;
    if (live) this.reshaped = false;
    this.hooks.live(reconnected);
  }

  // #read parses the event stream until it ends.
  async #read(body, arm) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parser = new EventStreamParser({
      onEvent: (type, data) => this.hooks.event(type, data),
      onId: (id) => { this.lastId = id; },
      onRetry: (ms) => { this.retry = ms; },
    });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      arm();
      parser.push(decoder.decode(value, { stream: true }));
    }
  }
}
