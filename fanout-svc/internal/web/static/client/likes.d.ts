// Types of likes.js (the npm package @likes/client). Kept beside the code it describes, and
// checked by `tsc` against example/usage.ts in `make test`.

/** The connection's state over all of a Likes' streams. */
export type State = "idle" | "connecting" | "live" | "reconnecting" | "closed";

/** Per-kind reaction counts, e.g. {clap: 12, heart: 3}; kinds nobody used are absent. */
export type Reactions = Record<string, number>;

/** What is known of one followed post. */
export interface Post {
  id: string;
  /** The like count; null until known. */
  count: number | null;
  /** How many watch the post now; null until known. */
  watching: number | null;
  /** Whether this user likes the post. */
  liked: boolean;
  /** A like or unlike on its way to the writer. */
  pending: "like" | "unlike" | null;
  /** The post's reactions by kind ({} until known and for a post nobody reacted to). */
  reactions: Reactions;
  /** Date.now() until which react() refuses this post locally after a 429; 0 when it does not. */
  reactBlockedUntil: number;
}

/** The detail of an "update" event. */
export interface Update extends Post {
  /**
   * The reactions that just arrived, by kind ({clap: 3}): the growth since the state shown,
   * only from a newer ts, {} for the first state known. One floating emoji per reaction.
   */
  reactionDeltas: Reactions;
}

export interface Session {
  user_id: string;
  /** Unix seconds. */
  expires_at: number;
}

export interface Options {
  /** fanout base URL, or a list tried in turn ("" = this page's origin). */
  streams?: string | string[];
  /** writer-svc base URL ("" = this page's origin). */
  writer?: string;
  /** Post ids to follow; more later with follow(). */
  posts?: string[];
  /** The site's bearer token, or a function returning one (or a promise of one). */
  token?: string | (() => string | Promise<string>);
  /** X-User-ID, only for a writer run with TRUST_USER_HEADER=true. */
  user?: string;
  /** Take an anonymous session at the first like (default true). */
  session?: boolean;
  /** The fanout's HEARTBEAT_INTERVAL in ms (default 15000). */
  heartbeat?: number;
  /** Posts per stream (default 64, the fanout's MAX_POSTS_PER_STREAM). */
  postsPerStream?: number;
  /** Posts per GET /likes (default 100). */
  postsPerRead?: number;
}

export interface LikeReply {
  post_id: string;
  count: number;
  liked: boolean;
}

export interface ReactionReply {
  post_id: string;
  kind: string;
  /** That kind's count after this reaction. */
  count: number;
  /** The post's version. */
  ts: number;
}

export class LikeError extends Error {
  name: "LikeError" | "ReactionError";
  post: string | undefined;
  op: "like" | "unlike" | "react" | undefined;
  /** The writer's HTTP status; 0: no answer. */
  status: number;
  /** ms to wait before the writer takes changes again; 0: none. */
  retryAfter: number;
  /** Refused here, without a request, while a Retry-After runs. */
  local: boolean;
}

export class ReactionError extends LikeError {
  name: "ReactionError";
  op: "react";
  kind: string;
}

export interface LikesEventMap {
  update: CustomEvent<Update>;
  state: CustomEvent<{ state: State; connects: number }>;
  session: CustomEvent<Session>;
  error: CustomEvent<LikeError>;
}

export class Likes extends EventTarget {
  constructor(options?: Options);
  readonly state: State;
  readonly connects: number;
  readonly session: Session | null;
  post(id: string): Post | undefined;
  posts(): Post[];
  /** Follows more posts (throws TypeError on a bad id); resolves once their likes are read. */
  follow(ids: string[]): Promise<void>;
  unfollow(ids: string[]): void;
  like(id: string): Promise<LikeReply>;
  unlike(id: string): Promise<LikeReply>;
  toggle(id: string): Promise<LikeReply>;
  /** One reaction; rejects with a ReactionError (retryAfter set on a 429). */
  react(id: string, kind: string): Promise<ReactionReply>;
  setToken(token: string | (() => string | Promise<string>)): Promise<void>;
  setUser(user: string): Promise<void>;
  refresh(): Promise<void>;
  reconnect(): void;
  close(): void;
  addEventListener<K extends keyof LikesEventMap>(type: K, listener: (ev: LikesEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof LikesEventMap>(type: K, listener: (ev: LikesEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

export function connect(options?: Options): Likes;

/** The reconnect wait: retry doubled per failure in a row, capped at 30 s, jittered. */
export function backoffDelay(retry: number, failures: number, random?: () => number): number;

/** A text/event-stream parser (WHATWG rules), fed decoded chunks. */
export class EventStreamParser {
  constructor(handlers?: {
    onEvent?: (type: string, data: string) => void;
    onId?: (id: string) => void;
    onRetry?: (ms: number) => void;
  });
  push(text: string): void;
}
