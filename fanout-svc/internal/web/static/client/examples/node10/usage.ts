// A project still on `moduleResolution: node` (node10), which reads no "exports": its imports of
// @likes/client and @likes/client/elements resolve through "types" and "typesVersions". Checked by
// TypeScript 5 (typescript5), since TypeScript 7 no longer has this resolution.
import { connect, type Update } from "@likes/client";
import { configure, likes, type LikeButton } from "@likes/client/elements";

configure({ streams: ["https://fanout-a.example", "https://fanout-b.example"], writer: "https://likes.example" });
const button: LikeButton = document.createElement("like-button");
button.post = "42";
document.body.append(button);

const feed = likes() ?? connect({ streams: "https://fanout-a.example", posts: ["42"] });
feed.addEventListener("update", (e) => {
  const u: Update = e.detail;
  console.log(u.id, u.count);
});
