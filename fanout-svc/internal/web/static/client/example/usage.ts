// A typed app on @likes/client: `tsc -p example` checks likes.d.ts and likes-elements.d.ts
// against it, and test/bundle.test.js bundles it with esbuild.
import { connect, ReactionError, type Update, type State } from "@likes/client";
import { configure, likes } from "@likes/client/elements";

const feed = connect({ streams: "https://streams.example.com", writer: "https://likes.example.com", posts: ["42"] });

feed.addEventListener("update", (e) => {
  const p: Update = e.detail;
  const total: number = Object.values(p.reactions).reduce((a, b) => a + b, 0);
  for (const [kind, n] of Object.entries(p.reactionDeltas)) console.log(`${n} new ${kind} on ${p.id} (${total} in all)`);
  if (p.count !== null) console.log(p.liked ? "liked" : "not liked", p.count);
});
feed.addEventListener("state", (e) => {
  const s: State = e.detail.state;
  console.log(s, e.detail.connects);
});

export async function clap(post: string): Promise<number> {
  try {
    return (await feed.react(post, "clap")).count;
  } catch (err) {
    if (err instanceof ReactionError && err.status === 429) return -Math.ceil(err.retryAfter / 1000);
    throw err;
  }
}

export async function scroll(into: string[], outOf: string[]): Promise<void> {
  feed.unfollow(outOf);
  await feed.follow(into);
}

configure({ writer: "https://likes.example.com", kinds: ["clap", "heart"], emoji: { clap: "👏" }, maxFloats: 6 });
const bar = document.createElement("reaction-bar");
bar.setAttribute("post", "42");
bar.addEventListener("likes-error", (e) => console.log(e.detail.status, e.detail.retryAfter));
document.body.append(bar);
document.addEventListener("likes-connect", (e) => console.log(e.detail === likes()));
