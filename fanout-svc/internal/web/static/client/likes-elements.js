// likes-elements.js: <like-button post="42"> and <reaction-bar post="42" kinds="clap,heart">,
// defined by importing this module once. Every element of a page shares one Likes connection
// (likes.js), configured with configure() before or after the elements appear; the posts it
// follows are the posts of the elements in the document, added and dropped as they come and go.
//
// The elements render into their own light DOM (no shadow root), so a site's CSS, its tests and
// its Content-Security-Policy see ordinary buttons: the look comes from one constructed style
// sheet adopted by the document, themable with the --likes-* custom properties the README lists.

import { connect } from "./likes.js";

/** DEFAULT_KINDS are writer-svc's default REACTION_KINDS. */
export const DEFAULT_KINDS = ["heart", "clap", "laugh", "wow", "fire"];

/** DEFAULT_EMOJI shows each default kind; configure({emoji}) adds or replaces some. */
export const DEFAULT_EMOJI = { heart: "❤️", clap: "👏", laugh: "😂", wow: "😮", fire: "🔥" };

const DEFAULT_MAX_FLOATS = 12; // emoji floated per update of a post, whatever the deltas add up to
const FLOAT_MS = 1600; // the float animation's length; an emoji is removed after it at the latest

const settings = {
  options: null, // connect()'s options, without posts
  kinds: DEFAULT_KINDS,
  emoji: { ...DEFAULT_EMOJI },
  maxFloats: DEFAULT_MAX_FLOATS,
};

/**
 * configure sets the options of the page's shared Likes: connect()'s options (streams, writer,
 * token, user, session, heartbeat, postsPerStream, postsPerRead) without posts, and for the
 * elements kinds (a <reaction-bar>'s default kinds), emoji ({kind: text}) and maxFloats (emoji
 * floated per update, 0: none). Called after the connection was opened, it reopens it with the
 * new options. Without it the streams are this module's own origin and the writer the page's.
 */
export function configure(options = {}) {
  const { kinds, emoji, maxFloats, posts: _ignored, ...connectOptions } = options;
  if (kinds) settings.kinds = [...kinds].map(String);
  if (emoji) settings.emoji = { ...DEFAULT_EMOJI, ...emoji };
  if (Number.isFinite(maxFloats) && maxFloats >= 0) settings.maxFloats = maxFloats;
  settings.options = connectOptions;
  registry.reopen();
}

/** likes returns the page's shared Likes, or null while no element has asked for one. */
export function likes() {
  return registry.likes;
}

// Registry owns the shared Likes: which elements show which post (each post followed while at
// least one element shows it), the follows and unfollows of one task batched into one call, and
// every update handed to the elements of its post.
class Registry {
  likes = null;
  #views = new Map(); // post id -> Set of elements
  #queued = false;

  add(post, view) {
    let set = this.#views.get(post);
    if (!set) this.#views.set(post, (set = new Set()));
    set.add(view);
    this.#schedule();
    const known = this.likes && this.likes.post(post);
    if (known) view.render({ ...known, reactionDeltas: {} });
  }

  remove(post, view) {
    const set = this.#views.get(post);
    if (!set) return;
    set.delete(view);
    if (!set.size) this.#views.delete(post);
    this.#schedule();
  }

  // #schedule syncs the followed posts with the elements once the current task's elements have
  // all connected or gone: a page that renders 50 buttons changes its streams once.
  #schedule() {
    if (this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      this.#sync();
    });
  }

  #sync() {
    const wanted = [...this.#views.keys()];
    if (!this.likes) {
      if (wanted.length) this.#open(wanted);
      return;
    }
    const followed = this.likes.posts().map((p) => p.id);
    const gone = followed.filter((id) => !this.#views.has(id));
    if (gone.length) this.likes.unfollow(gone);
    const fresh = wanted.filter((id) => !followed.includes(id));
    if (fresh.length) this.likes.follow(fresh);
  }

  #open(posts) {
    const options = settings.options || { streams: defaultStreams() };
    this.likes = connect({ ...options, posts });
    this.likes.addEventListener("update", (e) => {
      for (const view of this.#views.get(e.detail.id) || []) view.render(e.detail);
    });
    document.dispatchEvent(new CustomEvent("likes-connect", { detail: this.likes }));
  }

  // reopen closes the shared Likes and opens one with the current settings, for the same posts.
  reopen() {
    if (!this.likes) return;
    this.likes.close();
    this.likes = null;
    this.#schedule();
  }
}

const registry = new Registry();

// ---- shared pieces --------------------------------------------------------------------------

// formats returns the page's number formats, compact for the eye ("1.2K") and full for the
// label a screen reader speaks, in the document's language.
function formats() {
  const lang = document.documentElement.lang || navigator.language;
  return {
    compact: new Intl.NumberFormat(lang, { notation: "compact" }),
    full: new Intl.NumberFormat(lang),
  };
}

// reducedMotion is read at each update, so a change of the user's setting counts at once.
function reducedMotion() {
  return typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

const SVG = "http://www.w3.org/2000/svg";

function heart() {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "like-heart");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", "M12 20.6 3.9 12.6a4.9 4.9 0 0 1 8.1-5.8 4.9 4.9 0 0 1 8.1 5.8Z");
  svg.appendChild(path);
  return svg;
}

// ElementBase is HTMLElement in a browser and a stand-in class during server rendering (node, no
// DOM), so that importing this module there defines nothing and throws nothing.
const ElementBase = globalThis.HTMLElement ?? class {};

// defaultStreams is the fanout node this module was loaded from, when it was: a page importing
// https://node/client/likes-elements.js reads streams from https://node. Bundled into an app,
// import.meta.url is the app's own bundle, which serves no stream, so there is no default and
// configure({ streams }) must name the fanout URLs.
export function defaultStreams() {
  const url = new URL(import.meta.url || "about:blank"); // none in a CommonJS build
  if (!url.pathname.endsWith("/client/likes-elements.js")) {
    throw new TypeError("likes: the elements were bundled; call configure({ streams: [fanout URLs] }) before the first element connects");
  }
  return new URL("..", url).href;
}

// PostElement is what both elements share: the post attribute, joining and leaving the registry.
class PostElement extends ElementBase {
  static observedAttributes = ["post"];
  #post = "";

  get post() {
    return this.#post;
  }

  // Setting post sets the attribute: React 19 and Vue set a custom element's props as properties
  // when the element has one, so <like-button post={id}> arrives here.
  set post(id) {
    this.setAttribute("post", String(id));
  }

  connectedCallback() {
    if (!this.firstElementChild) this.build();
    this.#join(this.getAttribute("post") || "");
  }

  disconnectedCallback() {
    this.#join("");
  }

  attributeChangedCallback() {
    if (this.isConnected) this.#join(this.getAttribute("post") || "");
  }

  #join(post) {
    if (post === this.#post) return;
    if (this.#post) registry.remove(this.#post, this);
    this.#post = post;
    if (post) registry.add(post, this);
  }

  // report dispatches a refused like or reaction as a "likes-error" event (bubbling), so the
  // page can say why; detail is the LikeError or ReactionError.
  report(err) {
    this.dispatchEvent(new CustomEvent("likes-error", { detail: err, bubbles: true }));
  }
}

/**
 * LikeButton is <like-button post="42">: a real <button> with aria-pressed for the user's like,
 * its count in compact notation, and a label that says the full count. Click, Enter or Space
 * toggle the like.
 */
export class LikeButton extends PostElement {
  build() {
    this.button = el("button", "like");
    this.button.type = "button";
    this.button.setAttribute("aria-pressed", "false");
    this.label = el("span", "like-label", this.getAttribute("label") || "Like");
    this.count = el("span", "count-value", "–");
    this.count.dataset.count = "";
    this.count.setAttribute("aria-hidden", "true");
    this.button.append(heart(), this.label, this.count);
    this.button.addEventListener("click", () => this.#toggle());
    this.append(this.button);
    this.#label(null);
  }

  render(p) {
    const { compact } = formats();
    if (p.count !== null && this.count.dataset.count !== String(p.count)) {
      this.count.textContent = compact.format(p.count);
      this.count.dataset.count = String(p.count);
    }
    this.button.setAttribute("aria-pressed", p.liked ? "true" : "false");
    this.button.setAttribute("aria-busy", p.pending ? "true" : "false");
    this.#label(p.count);
  }

  #label(count) {
    const name = this.getAttribute("label") || "Like";
    const n = count === null ? "" : ", " + formats().full.format(count) + (count === 1 ? " like" : " likes");
    this.button.setAttribute("aria-label", name + n);
  }

  async #toggle() {
    const l = registry.likes;
    if (!l || !this.post) return;
    try {
      await l.toggle(this.post);
    } catch (err) {
      this.report(err);
    }
  }
}

/**
 * ReactionBar is <reaction-bar post="42" kinds="clap,heart">: one real <button> per kind with
 * its emoji, its count and a label, in a labelled group. A click sends one reaction. Each
 * reaction that arrives, anyone's, floats its emoji up from its button (at most maxFloats per
 * update), unless the user asked for reduced motion. While the writer's REACTION_INTERVAL runs
 * after a refusal the buttons are aria-disabled.
 */
export class ReactionBar extends PostElement {
  static observedAttributes = ["post", "kinds"];
  #buttons = new Map(); // kind -> {button, count}
  #unblock = 0;

  attributeChangedCallback(name) {
    if (name === "kinds" && this.firstElementChild) {
      this.replaceChildren();
      this.build();
      const p = registry.likes && this.post && registry.likes.post(this.post);
      if (p) this.render({ ...p, reactionDeltas: {} });
      return;
    }
    super.attributeChangedCallback();
  }

  build() {
    this.setAttribute("role", "group");
    if (!this.hasAttribute("aria-label")) this.setAttribute("aria-label", "Reactions");
    const kinds = (this.getAttribute("kinds") || "").split(",").map((k) => k.trim()).filter(Boolean);
    this.#buttons.clear();
    for (const kind of kinds.length ? kinds : settings.kinds) {
      const button = el("button", "reaction");
      button.type = "button";
      button.dataset.kind = kind;
      const emoji = el("span", "reaction-emoji", settings.emoji[kind] || kind);
      emoji.setAttribute("aria-hidden", "true");
      const count = el("span", "reaction-count", "0");
      count.dataset.count = "0";
      count.setAttribute("aria-hidden", "true");
      button.append(emoji, count);
      button.addEventListener("click", () => this.#react(kind));
      this.#buttons.set(kind, { button, count });
      this.#label(kind, 0);
      this.append(button);
    }
    this.floats = el("span", "reaction-floats");
    this.floats.setAttribute("aria-hidden", "true");
    this.append(this.floats);
  }

  render(p) {
    const { compact } = formats();
    for (const [kind, v] of this.#buttons) {
      const n = p.reactions[kind] || 0;
      if (v.count.dataset.count === String(n)) continue;
      v.count.textContent = compact.format(n);
      v.count.dataset.count = String(n);
      this.#label(kind, n);
    }
    this.#blocked(p.reactBlockedUntil);
    this.#float(p.reactionDeltas || {});
  }

  #label(kind, n) {
    const name = kind.charAt(0).toUpperCase() + kind.slice(1).replace(/[-_]+/g, " ");
    this.#buttons.get(kind).button.setAttribute("aria-label", name + ", " + formats().full.format(n) + (n === 1 ? " reaction" : " reactions"));
  }

  // #blocked marks the buttons aria-disabled (still focusable, so the keyboard does not lose its
  // place) until the time the library refuses reactions locally.
  #blocked(until) {
    clearTimeout(this.#unblock);
    const wait = until - Date.now();
    for (const { button } of this.#buttons.values()) button.setAttribute("aria-disabled", wait > 0 ? "true" : "false");
    if (wait > 0) this.#unblock = setTimeout(() => this.#blocked(0), wait);
  }

  // #float sends up one emoji per new reaction, over the kinds in turn, at most maxFloats.
  #float(deltas) {
    if (reducedMotion() || !this.isConnected) return;
    const queue = Object.entries(deltas).filter(([kind]) => this.#buttons.has(kind));
    let left = settings.maxFloats;
    while (left > 0 && queue.some(([, n]) => n > 0)) {
      for (const entry of queue) {
        if (entry[1] <= 0 || left <= 0) continue;
        entry[1]--;
        left--;
        this.#floatOne(entry[0]);
      }
    }
  }

  #floatOne(kind) {
    const { button } = this.#buttons.get(kind);
    const f = el("span", "reaction-float", settings.emoji[kind] || kind);
    f.dataset.kind = kind;
    // Where it starts (over its button) and how it drifts: CSSOM, which a strict CSP allows.
    f.style.setProperty("--likes-float-x", button.offsetLeft + button.offsetWidth / 2 + "px");
    f.style.setProperty("--likes-float-drift", Math.round((Math.random() - 0.5) * 60) + "px");
    f.style.setProperty("--likes-float-delay", Math.round(Math.random() * 250) + "ms");
    const done = () => f.remove();
    f.addEventListener("animationend", done, { once: true });
    setTimeout(done, 3 * FLOAT_MS); // also when no animation runs (a hidden tab, a site's CSS)
    this.floats.append(f);
  }

  async #react(kind) {
    const l = registry.likes;
    if (!l || !this.post) return;
    try {
      await l.react(this.post, kind);
    } catch (err) {
      this.report(err);
    }
  }
}

// The elements' look, adopted once by the document: a constructed sheet, which a strict
// Content-Security-Policy allows (no inline <style>). :where() keeps every rule at zero
// specificity, so any rule of the site wins.
const CSS = `
:where(like-button, reaction-bar) {
  display: inline-flex; align-items: center; gap: var(--likes-gap, 0.375em); font-size: var(--likes-size, 1em);
}
:where(reaction-bar) { position: relative; flex-wrap: wrap; }
:where(like-button .like, reaction-bar .reaction) {
  display: inline-flex; align-items: center; gap: var(--likes-gap, 0.375em);
  min-height: 2.75em; min-width: 2.75em; padding: 0 0.9em;
  border: 1px solid var(--likes-border, color-mix(in srgb, currentColor 20%, transparent));
  border-radius: var(--likes-radius, 999px); background: var(--likes-bg, transparent); color: var(--likes-text, inherit);
  font: inherit; font-weight: 600; cursor: pointer; font-variant-numeric: tabular-nums;
}
:where(like-button .like, reaction-bar .reaction):hover { border-color: var(--likes-accent, #e11d48); }
:where(like-button .like, reaction-bar .reaction):focus-visible { outline: 3px solid var(--likes-focus, #2563eb); outline-offset: 2px; }
:where(like-button .like[aria-pressed="true"]) {
  background: var(--likes-accent-soft, #ffe4ea); border-color: var(--likes-accent, #e11d48); color: var(--likes-accent, #e11d48);
}
:where(like-button .like[aria-busy="true"]) { cursor: progress; opacity: 0.7; }
:where(reaction-bar .reaction[aria-disabled="true"]) { cursor: not-allowed; opacity: 0.55; }
:where(like-button .like-heart) { width: 1.15em; height: 1.15em; fill: none; stroke: currentColor; stroke-width: 2; stroke-linejoin: round; }
:where(like-button .like[aria-pressed="true"] .like-heart) { fill: currentColor; }
:where(reaction-bar .reaction-emoji) { font-size: var(--likes-emoji-size, 1.2em); line-height: 1; }
:where(reaction-bar .reaction-floats) { position: absolute; inset: 0; pointer-events: none; overflow: visible; }
:where(reaction-bar .reaction-float) {
  position: absolute; left: var(--likes-float-x); bottom: 50%; font-size: var(--likes-float-size, 1.6em); line-height: 1;
  translate: -50% 0; opacity: 0;
  animation: likes-float var(--likes-float-duration, ${FLOAT_MS}ms) ease-out var(--likes-float-delay, 0ms) forwards;
}
@keyframes likes-float {
  0% { opacity: 0; transform: translate(0, 0) scale(0.6); }
  15% { opacity: 1; transform: translate(calc(var(--likes-float-drift) * 0.2), -0.6em) scale(1.1); }
  100% { opacity: 0; transform: translate(var(--likes-float-drift), calc(-1 * var(--likes-float-distance, 6em))) scale(1); }
}
@media (prefers-reduced-motion: reduce) { :where(reaction-bar .reaction-float) { display: none; } }
`;

function adoptStyles() {
  if (typeof CSSStyleSheet !== "function" || !("adoptedStyleSheets" in document)) return;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);
  document.adoptedStyleSheets = [sheet, ...document.adoptedStyleSheets];
}

if (globalThis.customElements && !customElements.get("like-button")) {
  adoptStyles();
  customElements.define("like-button", LikeButton);
  customElements.define("reaction-bar", ReactionBar);
}
