// The likes live page: renders the configured posts, follows their counts over one EventSource and
// sends likes to the writer. Plain script, no build step, no dependencies.
"use strict";

(function () {
  const STREAM_PATH = "sse"; // relative, so the page also works under a path prefix
  const REQUEST_TIMEOUT_MS = 10000;
  const FIRST_BACKOFF_MS = 1000;
  const MAX_BACKOFF_MS = 30000;
  const NOTICE_MS = 6000;

  const config = readConfig();
  const storage = openStorage();
  const numbers = new Intl.NumberFormat();
  const posts = new Map(); // post id -> view state, see renderPost
  const connection = document.getElementById("connection");

  let source = null; // the one EventSource of this page
  let backoff = FIRST_BACKOFF_MS;
  let retryTimer = 0;
  let connects = 0;
  let noticeTimer = 0;

  // readConfig parses the JSON block the server rendered into the page.
  function readConfig() {
    const fallback = { writerURL: "", posts: [], token: "" };
    try {
      const c = JSON.parse(document.getElementById("likes-config").textContent);
      return {
        writerURL: typeof c.writerURL === "string" ? c.writerURL : "",
        posts: Array.isArray(c.posts) ? c.posts.map(String) : [],
        token: typeof c.token === "string" ? c.token : "",
      };
    } catch (err) {
      return fallback;
    }
  }

  // openStorage wraps localStorage, which throws when disabled (some private modes), and falls
  // back to memory so the page still works for the life of the tab.
  function openStorage() {
    const memory = new Map();
    let local = null;
    try {
      local = window.localStorage;
      local.setItem("likes.probe", "1");
      local.removeItem("likes.probe");
    } catch (err) {
      local = null;
    }
    return {
      get(key) {
        if (memory.has(key)) return memory.get(key);
        const v = local ? local.getItem(key) : null;
        if (v !== null) memory.set(key, v);
        return v;
      },
      set(key, value) {
        memory.set(key, value);
        try { if (local) local.setItem(key, value); } catch (err) { /* quota: memory still holds it */ }
      },
      remove(key) {
        memory.delete(key);
        try { if (local) local.removeItem(key); } catch (err) { /* nothing to undo */ }
      },
    };
  }

  // ---- identity -----------------------------------------------------------------------------

  // userID returns this browser's anonymous user id, creating it on first use. It satisfies the
  // writer's rule: 1-128 printable ASCII characters without spaces or colons.
  function userID() {
    let id = storage.get("likes.user");
    if (!id || !/^[\x21-\x39\x3b-\x7e]{1,128}$/.test(id)) {
      const bytes = new Uint8Array(12);
      crypto.getRandomValues(bytes); // works on plain http too, unlike crypto.randomUUID
      id = "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      storage.set("likes.user", id);
    }
    return id;
  }

  // token returns the bearer token the user pasted, else the one the server configured, else "".
  function token() {
    return storage.get("likes.token") || config.token;
  }

  // identityKey names whose likes the liked set in storage records.
  function identityKey() {
    const t = token();
    return t ? "token-" + hash(t) : "user-" + userID();
  }

  function hash(text) { // FNV-1a, to key storage by token without storing it twice
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h.toString(16);
  }

  function showIdentity() {
    const t = token();
    document.getElementById("who").textContent = t ? "bearer token …" + t.slice(-6) : userID();
  }

  // ---- liked posts, remembered per identity -------------------------------------------------

  function loadLiked() {
    try {
      const list = JSON.parse(storage.get("likes.liked." + identityKey()) || "[]");
      return new Set(Array.isArray(list) ? list.map(String) : []);
    } catch (err) {
      return new Set();
    }
  }

  function saveLiked() {
    const liked = [];
    for (const [id, p] of posts) if (p.liked) liked.push(id);
    storage.set("likes.liked." + identityKey(), JSON.stringify(liked));
  }

  function syncLiked() {
    const liked = loadLiked();
    for (const [id, p] of posts) showLiked(p, liked.has(id));
  }

  // ---- rendering ----------------------------------------------------------------------------

  function renderPosts() {
    const list = document.getElementById("posts");
    const template = document.getElementById("post-template");
    for (const id of config.posts) {
      if (posts.has(id)) continue;
      const node = template.content.firstElementChild.cloneNode(true);
      list.appendChild(node);
      posts.set(id, renderPost(node, id));
    }
    syncLiked();
  }

  function renderPost(node, id) {
    const titleID = "post-title-" + posts.size;
    node.dataset.post = id;
    node.querySelector(".post-card").setAttribute("aria-labelledby", titleID);
    const title = node.querySelector(".post-title");
    title.id = titleID;
    title.textContent = postTitle(id);
    node.querySelector(".post-id").textContent = "post " + id;
    const avatar = node.querySelector(".post-avatar");
    avatar.textContent = initials(id);
    avatar.style.setProperty("--hue", String(parseInt(hash(id), 16) % 360));
    const button = node.querySelector(".like");
    button.setAttribute("aria-describedby", titleID);
    button.addEventListener("click", () => toggleLike(id));
    return {
      node,
      button,
      value: node.querySelector(".count-value"),
      unit: node.querySelector(".count-unit"),
      count: null, // newest count shown, null before the first
      version: 0, // ts of the newest stream update on the current connection
      streamed: 0, // stream updates applied, to tell whether a like response is already stale
      liked: false,
      busy: false,
    };
  }

  // postTitle turns an id into a heading: "42" -> "Post #42", "launch-day" -> "Launch day".
  function postTitle(id) {
    if (/^[0-9]+$/.test(id)) return "Post #" + id;
    const words = id.replace(/[-_]+/g, " ").trim();
    return words ? words.charAt(0).toUpperCase() + words.slice(1) : id;
  }

  // initials gives the avatar its letters: "launch-day" -> "LD", "cats" -> "C", "42" -> "#".
  function initials(id) {
    if (/^[0-9]+$/.test(id)) return "#";
    return id.split(/[-_]+/).filter(Boolean).slice(0, 2).map((w) => w.charAt(0).toUpperCase()).join("") || "#";
  }

  function showCount(p, count) {
    if (p.count === count) return;
    const changed = p.count !== null;
    p.count = count;
    p.value.textContent = numbers.format(count);
    p.value.dataset.count = String(count);
    p.unit.textContent = count === 1 ? "like" : "likes";
    if (changed) {
      p.value.classList.remove("bump");
      void p.value.offsetWidth; // restart the animation
      p.value.classList.add("bump");
    }
  }

  function showLiked(p, liked) {
    p.liked = liked;
    p.button.setAttribute("aria-pressed", liked ? "true" : "false");
    p.button.title = liked ? "Unlike" : "Like";
  }

  function showBusy(p, busy) {
    p.busy = busy;
    p.button.setAttribute("aria-busy", busy ? "true" : "false");
  }

  // showNotice shows a message for a few seconds, or until replaced when sticky.
  function showNotice(text, sticky) {
    const el = document.getElementById("notice");
    el.textContent = text;
    el.hidden = false;
    clearTimeout(noticeTimer);
    if (!sticky) noticeTimer = setTimeout(() => { el.hidden = true; }, NOTICE_MS);
  }

  function setState(state) {
    const labels = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" };
    connection.dataset.state = state;
    connection.dataset.connects = String(connects);
    connection.querySelector(".connection-label").textContent = labels[state];
  }

  // ---- the stream ---------------------------------------------------------------------------

  // connect opens the page's one EventSource for all its posts. The browser reconnects by itself
  // after a network error (honouring the server's retry: and sending Last-Event-ID); after an
  // HTTP error such as 503 it gives up, so connect schedules a new EventSource with jittered
  // exponential backoff.
  function connect() {
    clearTimeout(retryTimer);
    if (source) source.close();
    const es = new EventSource(STREAM_PATH + "?posts=" + config.posts.map(encodeURIComponent).join(","));
    source = es;
    es.onopen = () => {
      if (es !== source) return;
      // Each connection starts with a snapshot of every post: accept it even if its version is
      // not newer than what an earlier connection showed.
      for (const p of posts.values()) p.version = 0;
      backoff = FIRST_BACKOFF_MS;
      connects++;
      setState("live");
    };
    es.onerror = () => {
      if (es !== source) return;
      setState(connects ? "reconnecting" : "connecting");
      if (es.readyState === EventSource.CLOSED) scheduleReconnect();
    };
    es.addEventListener("count", (event) => {
      if (es === source) applyUpdate(event.data);
    });
  }

  function scheduleReconnect() {
    if (source) source.close();
    source = null;
    const wait = backoff / 2 + Math.random() * backoff / 2;
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, wait);
  }

  // applyUpdate shows one count event: {"post_id":"42","count":123,"ts":...}. Within one
  // connection the ts (the post's version) only grows; anything older is ignored.
  function applyUpdate(data) {
    let u;
    try {
      u = JSON.parse(data);
    } catch (err) {
      return;
    }
    const p = u && posts.get(String(u.post_id));
    if (!p || typeof u.count !== "number" || !Number.isFinite(u.count)) return;
    const ts = typeof u.ts === "number" ? u.ts : 0;
    if (p.version && ts <= p.version) return;
    p.version = ts;
    p.streamed++;
    showCount(p, u.count);
  }

  // ---- likes --------------------------------------------------------------------------------

  async function toggleLike(id) {
    const p = posts.get(id);
    if (!p || p.busy) return;
    const like = !p.liked;
    const streamedBefore = p.streamed;
    showBusy(p, true);
    showLiked(p, like); // optimistic; undone below if the writer refuses
    try {
      const reply = await sendLike(like ? "POST" : "DELETE", id);
      saveLiked();
      // The stream normally brings the new count within a blink; the reply's count is shown only
      // if no stream update arrived meanwhile, since that one may already be newer.
      if (typeof reply.count === "number" && p.streamed === streamedBefore) showCount(p, reply.count);
    } catch (err) {
      showLiked(p, !like);
      showNotice(err.message);
    } finally {
      showBusy(p, false);
    }
  }

  async function sendLike(method, id) {
    const headers = { Accept: "application/json" };
    const t = token();
    if (t) headers.Authorization = "Bearer " + t;
    else headers["X-User-ID"] = userID();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
    let resp;
    let body = null;
    try {
      resp = await fetch(config.writerURL + "/like/" + encodeURIComponent(id), {
        method, headers, mode: "cors", credentials: "omit", cache: "no-store", signal: abort.signal,
      });
      body = await resp.json().catch(() => null);
    } catch (err) {
      throw new Error(abort.signal.aborted
        ? "The writer did not answer in time. Try again."
        : "Could not reach the writer at " + (config.writerURL || location.origin) + ".");
    } finally {
      clearTimeout(timer);
    }
    if (!resp.ok) throw new Error(describeFailure(resp.status, body));
    return body || {};
  }

  function describeFailure(status, body) {
    const detail = body && typeof body.error === "string" ? body.error : "HTTP " + status;
    if (status === 401 || status === 403) return "The writer refused your identity: " + detail + ".";
    if (status === 429) return "Too many likes at once: " + detail + ".";
    if (status === 503) return "The writer is unavailable right now. Try again in a moment.";
    return "The like was not saved: " + detail + ".";
  }

  // ---- token form ---------------------------------------------------------------------------

  function wireTokenForm() {
    const form = document.getElementById("token-form");
    const input = document.getElementById("token");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (!/^[\x21-\x7e]+$/.test(value)) {
        showNotice("A token is printable characters without spaces.");
        return;
      }
      storage.set("likes.token", value);
      input.value = "";
      identityChanged();
    });
    document.getElementById("token-forget").addEventListener("click", () => {
      storage.remove("likes.token");
      input.value = "";
      identityChanged();
    });
  }

  function identityChanged() {
    showIdentity();
    syncLiked();
  }

  // ---- start --------------------------------------------------------------------------------

  function start() {
    document.getElementById("writer").textContent = config.writerURL || location.origin;
    showIdentity();
    wireTokenForm();
    renderPosts();
    if (!config.posts.length) {
      showNotice("No posts are configured (PAGE_POSTS).", true);
      return;
    }
    setState("connecting");
    connect();
    // A laptop waking up or a phone regaining signal: try now instead of waiting out the backoff.
    window.addEventListener("online", () => {
      if (connection.dataset.state !== "live") connect();
    });
    // Restored from the back/forward cache with the stream closed.
    window.addEventListener("pageshow", (event) => {
      if (event.persisted && (!source || source.readyState === EventSource.CLOSED)) connect();
    });
  }

  start();
})();
