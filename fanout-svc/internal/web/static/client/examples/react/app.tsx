// A React app on @likes/client: a post with its live like count and a like button, the package's
// <like-button> element typed for JSX by @likes/client/react.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { configure } from "@likes/client/elements";
import type {} from "@likes/client/react";

// Where the likes stack is: ?streams=<fanout URLs, comma-separated>&writer=<URL>&post=<id>,
// else the local stack of `make run`. A real app would write its own URLs here.
const params = new URLSearchParams(location.search);
const streams = (params.get("streams") ?? "http://localhost:8090,http://localhost:8091").split(",");
const writer = params.get("writer") ?? "http://localhost:8080";
const post = params.get("post") ?? "42";

// Bundled, the elements have no default node: name the streams before the first one renders.
configure({ streams, writer });

function Post({ id }: { id: string }) {
  return (
    <article>
      <h1>Post {id}</h1>
      <p>The count is live: likes from anyone, anywhere, show up here.</p>
      <like-button post={id} />
    </article>
  );
}

createRoot(document.getElementById("app")!).render(
  <StrictMode>
    <Post id={post} />
  </StrictMode>,
);
