// Types of likes-elements.js (@likes/client/elements): the custom elements and their shared
// connection.
import type { Likes, Options, LikeError } from "./likes.js";

export const DEFAULT_KINDS: string[];
export const DEFAULT_EMOJI: Record<string, string>;

export interface ElementOptions extends Omit<Options, "posts"> {
  /** A <reaction-bar>'s kinds when it has no kinds attribute. */
  kinds?: string[];
  /** Emoji by kind, added to DEFAULT_EMOJI. */
  emoji?: Record<string, string>;
  /** Emoji floated per update of a post (default 12; 0: none). */
  maxFloats?: number;
}

/** Sets the shared connection's options; reopens it when it is open. */
export function configure(options?: ElementOptions): void;
/**
 * defaultStreams is the fanout node this module was loaded from (https://node/client/...). Bundled
 * into an app there is none: it throws, and configure({ streams }) must name the fanout URLs.
 */
export function defaultStreams(): string;

/** The page's shared Likes, or null while no element has asked for one. */
export function likes(): Likes | null;

export class LikeButton extends HTMLElement {
  /** The post shown; setting it sets the post attribute. */
  post: string;
}

export class ReactionBar extends HTMLElement {
  /** The post shown; setting it sets the post attribute. */
  post: string;
}

declare global {
  interface HTMLElementTagNameMap {
    "like-button": LikeButton;
    "reaction-bar": ReactionBar;
  }
  interface DocumentEventMap {
    /** The shared Likes opened (detail). */
    "likes-connect": CustomEvent<Likes>;
  }
  interface HTMLElementEventMap {
    /** A like or reaction of an element was refused (bubbles). */
    "likes-error": CustomEvent<LikeError>;
  }
}
