// The likes live page: the configured posts with like buttons, live counts and "watching now",
// all from likes.js, the client library this node serves to any site. The page only renders what
// the library reports; the liked state comes from the writer (GET /likes), never from storage.

import { connect } from "../client/likes.js";

const NOTICE_MS = 6000;
const numbers = new Intl.NumberFormat();
const config = readConfig();
const storage = openStorage();
const views = new Map(); // post id -> its elements
const connection = document.getElementById("connection");
let noticeTimer = 0;
let likes = null;

// readConfig parses the JSON block the server rendered into the page.
function readConfig() {
  try {
    const c = JSON.parse(document.getElementById("likes-config").textContent);
    return {
      writerURL: typeof c.writerURL === "string" ? c.writerURL : "",
      posts: Array.isArray(c.posts) ? c.posts.map(String) : [],
      token: typeof c.token === "string" ? c.token : "",
      heartbeatMs: Number.isFinite(c.heartbeatMs) ? c.heartbeatMs : undefined,
    };
  } catch {
    return { writerURL: "", posts: [], token: "" };
  }
}

// openStorage wraps localStorage, which throws when disabled (some private modes), and falls back
// to memory. It keeps only a pasted token, not the user's likes (likes.js keeps the session).
function openStorage() {
  const memory = new Map();
  let local = null;
  try {
    local = window.localStorage;
    local.setItem("likes.probe", "1");
    local.removeItem("likes.probe");
  } catch {
    local = null;
  }
  return {
    get(key) {
      if (!memory.has(key) && local) memory.set(key, local.getItem(key));
      return memory.get(key) ?? null;
    },
    set(key, value) {
      memory.set(key, value);
      try { if (local) local.setItem(key, value); } catch { /* quota: memory still holds it */ }
    },
    remove(key) {
      memory.delete(key);
      try { if (local) local.removeItem(key); } catch { /* nothing to undo */ }
    },
  };
}

// ---- identity -------------------------------------------------------------------------------

// token returns the bearer token the user pasted, else the one the server configured, else "".
function token() {
  return storage.get("likes.token") || config.token;
}

// showIdentity names who the likes are by: the token, or this browser's anonymous session (taken
// from the writer at the first like, so a visitor who only reads starts none).
function showIdentity() {
  const t = token();
  const s = likes && likes.session;
  document.getElementById("who").textContent = t ? "bearer token …" + t.slice(-6)
    : s ? "anonymous session " + s.user_id : "anonymous (a session starts at your first like)";
}

// ---- rendering ------------------------------------------------------------------------------

function renderPosts() {
  const list = document.getElementById("posts");
  const template = document.getElementById("post-template");
  for (const id of config.posts) {
    const node = template.content.firstElementChild.cloneNode(true);
    list.appendChild(node);
    views.set(id, renderPost(node, id));
  }
}

function renderPost(node, id) {
  const titleID = "post-title-" + views.size;
  node.dataset.post = id;
  node.querySelector(".post-card").setAttribute("aria-labelledby", titleID);
  const title = node.querySelector(".post-title");
  title.id = titleID;
  title.textContent = postTitle(id);
  node.querySelector(".post-id").textContent = "post " + id;
  const avatar = node.querySelector(".post-avatar");
  avatar.textContent = initials(id);
  avatar.style.setProperty("--hue", String(hue(id)));
  const button = node.querySelector(".like");
  button.setAttribute("aria-describedby", titleID);
  button.addEventListener("click", () => toggle(id));
  return {
    button,
    value: node.querySelector(".count-value"),
    unit: node.querySelector(".count-unit"),
    watching: node.querySelector(".watching"),
    watchingValue: node.querySelector(".watching-value"),
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

function hue(text) { // FNV-1a, for a stable avatar colour per post
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % 360;
}

// show renders one post as the library reports it.
function show(post) {
  const v = views.get(post.id);
  if (!v) return;
  if (post.count !== null && v.value.dataset.count !== String(post.count)) {
    const changed = v.value.dataset.count !== "";
    v.value.textContent = numbers.format(post.count);
    v.value.dataset.count = String(post.count);
    v.unit.textContent = post.count === 1 ? "like" : "likes";
    if (changed) {
      v.value.classList.remove("bump");
      void v.value.offsetWidth; // restart the animation
      v.value.classList.add("bump");
    }
  }
  if (post.watching !== null) {
    v.watchingValue.textContent = numbers.format(post.watching);
    v.watchingValue.dataset.watching = String(post.watching);
    v.watching.hidden = false;
  }
  v.button.setAttribute("aria-pressed", post.liked ? "true" : "false");
  v.button.setAttribute("aria-busy", post.pending ? "true" : "false");
  v.button.title = post.liked ? "Unlike" : "Like";
}

function showState(state, connects) {
  const labels = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…", closed: "Closed" };
  connection.dataset.state = state;
  connection.dataset.connects = String(connects);
  connection.querySelector(".connection-label").textContent = labels[state] || state;
}

// showNotice shows a message for a few seconds, or until replaced when sticky.
function showNotice(text, sticky) {
  const el = document.getElementById("notice");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => { el.hidden = true; }, NOTICE_MS);
}

// describe turns a LikeError into a sentence for the notice.
function describe(err) {
  const wait = Math.max(1, Math.ceil((err.retryAfter || 0) / 1000));
  switch (err.status) {
    case 0: return "Could not save the like: " + err.message + " (" + (config.writerURL || location.origin) + ").";
    case 401:
    case 403: return "The writer refused your identity: " + err.message + ".";
    case 429: return "Too many likes at once. Try again in " + wait + " s.";
    case 503: return "The writer is unavailable right now. Try again in " + wait + " s.";
    default: return "The like was not saved: " + err.message + ".";
  }
}

async function toggle(id) {
  try {
    await likes.toggle(id);
  } catch (err) {
    showNotice(describe(err));
  }
}

// ---- token form -----------------------------------------------------------------------------

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

// identityChanged shows the new identity and asks the writer which posts it likes.
function identityChanged() {
  showIdentity();
  likes.setToken(token());
}

// ---- start ----------------------------------------------------------------------------------

function start() {
  document.getElementById("writer").textContent = config.writerURL || location.origin;
  showIdentity();
  renderPosts();
  if (!config.posts.length) {
    showNotice("No posts are configured (PAGE_POSTS).", true);
    return;
  }
  likes = connect({
    streams: new URL(".", location.href).href, // this node, also under a path prefix
    writer: config.writerURL,
    posts: config.posts,
    token: token(),
    heartbeat: config.heartbeatMs,
  });
  likes.addEventListener("update", (e) => show(e.detail));
  likes.addEventListener("session", showIdentity);
  showIdentity(); // a session kept from an earlier visit
  likes.addEventListener("state", (e) => showState(e.detail.state, e.detail.connects));
  likes.addEventListener("error", (e) => showNotice("Could not load your likes: " + e.detail.message + "."));
  wireTokenForm();
  showState(likes.state, likes.connects);
}

start();
