// The likes live page: the configured posts, each with a <like-button>, a <reaction-bar> and
// "watching now", or in talk mode (?mode=talk) one post as a presenter's screen with a big
// reaction bar whose emoji float up live, or after the talk (?mode=after) that post's likes and
// reactions over time, from the writer's timeline (GET /posts/{id}/timeline), with its peaks. It is built on likes-elements.js, the custom elements
// this node serves to any site, and renders only what the library reports; the liked state comes
// from the writer (GET /likes), never from storage.

import { configure } from "../client/likes-elements.js";

const NOTICE_MS = 6000;
const numbers = new Intl.NumberFormat(document.documentElement.lang || navigator.language);
const config = readConfig();
const params = new URLSearchParams(location.search);
const mode = ["talk", "after"].includes(params.get("mode")) ? params.get("mode") : "feed";
const talk = mode === "talk";
const storage = openStorage();
const views = new Map(); // post id -> its "watching" elements
let talkView = null; // talk mode's post and its numbers
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
      reactions: Array.isArray(c.reactions) && c.reactions.length ? c.reactions.map(String) : null,
    };
  } catch {
    return { writerURL: "", posts: [], token: "", reactions: null };
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
    views.set(id, renderPost(node, id));
    list.appendChild(node); // the elements join the shared connection as they connect
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
  node.querySelector("like-button").setAttribute("post", id);
  const bar = node.querySelector("reaction-bar");
  bar.setAttribute("aria-label", "React to " + postTitle(id));
  bar.setAttribute("kinds", kinds().join(","));
  bar.setAttribute("post", id);
  return {
    watching: node.querySelector(".watching"),
    watchingValue: node.querySelector(".watching-value"),
  };
}

// renderTalk shows one post, ?post= or the first, as a talk's screen: its title, the total of
// its reactions, how many watch, and a big reaction bar.
function renderTalk() {
  const id = config.posts.includes(params.get("post")) ? params.get("post") : config.posts[0];
  document.getElementById("talk").hidden = false;
  document.getElementById("posts").hidden = true;
  document.getElementById("talk-title").textContent = postTitle(id);
  const bar = document.getElementById("talk-bar");
  bar.setAttribute("kinds", kinds().join(","));
  bar.setAttribute("post", id);
  talkView = { id, total: document.getElementById("talk-total"), unit: document.getElementById("talk-unit"), watching: document.getElementById("talk-watching") };
}

// renderAfter charts one post's timeline, ?post= or the first, over ?from= to ?to= (unix seconds
// or RFC 3339; default the last hour): a column per step, likes and each kind stacked, and the
// busiest steps listed. It reads once; reload for newer seconds.
async function renderAfter() {
  const id = config.posts.includes(params.get("post")) ? params.get("post") : config.posts[0];
  document.getElementById("after").hidden = false;
  document.getElementById("posts").hidden = true;
  document.getElementById("after-title").textContent = postTitle(id);
  const url = new URL((config.writerURL || location.origin) + "/posts/" + encodeURIComponent(id) + "/timeline");
  for (const k of ["from", "to", "step"]) if (params.get(k)) url.searchParams.set(k, params.get(k));
  let tl;
  try {
    const res = await fetch(url);
    tl = await res.json();
    if (!res.ok) throw new Error(tl.error || "HTTP " + res.status);
  } catch (err) {
    showNotice("Could not read the timeline: " + err.message + ".", true);
    return;
  }
  const csv = new URL(url);
  csv.searchParams.set("format", "csv");
  document.getElementById("after-csv").href = csv.href;
  const series = [["likes", "likes"], ...kinds().map((k) => [k, k])].filter(([key]) => tl.series[key]);
  const steps = tl.series.likes.length;
  const totals = Array.from({ length: steps }, (_, i) => series.reduce((a, [key]) => a + tl.series[key][i], 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const peak = Math.max(1, ...totals);
  const chart = document.getElementById("after-chart");
  const svg = "http://www.w3.org/2000/svg";
  const w = 960 / steps;
  series.forEach(([key], s) => {
    for (let i = 0; i < steps; i++) {
      const v = tl.series[key][i];
      if (!v) continue;
      const below = series.slice(0, s).reduce((a, [k]) => a + tl.series[k][i], 0);
      const rect = document.createElementNS(svg, "rect");
      rect.setAttribute("x", String(i * w));
      rect.setAttribute("width", String(Math.max(w - 1, 1)));
      rect.setAttribute("y", String(320 - ((below + v) / peak) * 300));
      rect.setAttribute("height", String((v / peak) * 300));
      rect.setAttribute("class", "after-bar");
      rect.style.setProperty("--hue", String(s === 0 ? 350 : hue(key)));
      chart.append(rect);
    }
  });
  const legend = document.getElementById("after-legend");
  for (const [key, label] of series) {
    const item = document.createElement("span");
    item.className = "after-key";
    item.style.setProperty("--hue", String(key === "likes" ? 350 : hue(key)));
    item.textContent = label + " " + numbers.format(tl.series[key].reduce((a, b) => a + b, 0));
    legend.append(item);
  }
  const time = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  const peaks = document.getElementById("after-peaks");
  for (const p of tl.peaks) {
    const li = document.createElement("li");
    li.textContent = time.format(new Date(p.t * 1000)) + ": " + numbers.format(p.likes) + " likes, " + numbers.format(p.reactions) + " reactions";
    peaks.append(li);
  }
  document.getElementById("after-span").textContent = time.format(new Date(tl.from * 1000)) + "–" + time.format(new Date(tl.to * 1000));
  const shown = document.getElementById("after-total");
  shown.textContent = numbers.format(total);
  shown.dataset.total = String(total);
}

// kinds are the reactions the page offers: REACTION_KINDS as the node was configured.
function kinds() {
  return config.reactions || ["heart", "clap", "laugh", "wow", "fire"];
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

// show renders what the elements do not: the "watching" numbers, and talk mode's total.
function show(post) {
  if (talkView && post.id === talkView.id) {
    const total = Object.values(post.reactions).reduce((a, b) => a + b, 0);
    talkView.total.textContent = numbers.format(total);
    talkView.total.dataset.total = String(total);
    talkView.unit.textContent = total === 1 ? "reaction" : "reactions";
    if (post.watching !== null) {
      talkView.watching.textContent = numbers.format(post.watching);
      talkView.watching.dataset.watching = String(post.watching);
    }
  }
  const v = views.get(post.id);
  if (!v || post.watching === null) return;
  v.watchingValue.textContent = numbers.format(post.watching);
  v.watchingValue.dataset.watching = String(post.watching);
  v.watching.hidden = false;
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

// describe turns a LikeError or ReactionError into a sentence for the notice.
function describe(err) {
  const wait = Math.max(1, Math.ceil((err.retryAfter || 0) / 1000));
  if (err.op === "react" && err.status === 429) return "One reaction at a time: react again in " + wait + " s.";
  if (err.op === "react" && err.status === 400) return "The writer does not know that reaction: " + err.message + ".";
  switch (err.status) {
    case 0: return "Could not save the like: " + err.message + " (" + (config.writerURL || location.origin) + ").";
    case 401:
    case 403: return "The writer refused your identity: " + err.message + ".";
    case 429: return "Too many likes at once. Try again in " + wait + " s.";
    case 503: return "The writer is unavailable right now. Try again in " + wait + " s.";
    default: return "The like was not saved: " + err.message + ".";
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
  if (likes) likes.setToken(token());
}

// ---- start ----------------------------------------------------------------------------------

function start() {
  document.getElementById("writer").textContent = config.writerURL || location.origin;
  document.body.dataset.mode = mode;
  document.getElementById("mode-" + mode).setAttribute("aria-current", "page");
  showIdentity();
  if (!config.posts.length) {
    showNotice("No posts are configured (PAGE_POSTS).", true);
    return;
  }
  configure({
    streams: new URL(".", location.href).href, // this node, also under a path prefix
    writer: config.writerURL,
    token: token(),
    heartbeat: config.heartbeatMs,
    kinds: kinds(),
  });
  document.addEventListener("likes-connect", (e) => connected(e.detail));
  document.addEventListener("likes-error", (e) => showNotice(describe(e.detail)));
  if (talk) renderTalk();
  else if (mode === "after") renderAfter();
  else renderPosts();
  wireTokenForm();
}

// connected wires the page to the elements' shared connection once it opens.
function connected(l) {
  likes = l;
  likes.addEventListener("update", (e) => show(e.detail));
  likes.addEventListener("session", showIdentity);
  likes.addEventListener("state", (e) => showState(e.detail.state, e.detail.connects));
  likes.addEventListener("error", (e) => showNotice("Could not load your likes: " + e.detail.message + "."));
  showIdentity(); // a session kept from an earlier visit
  showState(likes.state, likes.connects);
}

start();
