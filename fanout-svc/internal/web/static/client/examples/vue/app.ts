// A Vue app on @likes/client, without single-file components: a post with its live like count
// and a like button, the package's <like-button> element, its props typed by @likes/client/vue.
import { createApp, defineComponent, h, type GlobalComponents } from "vue";
import { configure } from "@likes/client/elements";
import type {} from "@likes/client/vue";

// Where the likes stack is: ?streams=<fanout URLs, comma-separated>&writer=<URL>&post=<id>,
// else the local stack of `make run`. A real app would write its own URLs here.
const params = new URLSearchParams(location.search);
const streams = (params.get("streams") ?? "http://localhost:8090,http://localhost:8091").split(",");
const writer = params.get("writer") ?? "http://localhost:8080";
const post = params.get("post") ?? "42";

// Bundled, the elements have no default node: name the streams before the first one renders.
configure({ streams, writer });

// ElementProps are the props @likes/client/vue declares for an element (GlobalComponents, the
// same typings that check <like-button post="42"> in a template).
type ElementProps<K extends "like-button" | "reaction-bar"> = InstanceType<GlobalComponents[K]>["$props"];

function likeButton(props: ElementProps<"like-button">) {
  return h("like-button", props);
}

const Post = defineComponent({
  props: { id: { type: String, required: true } },
  setup(props) {
    return () =>
      h("article", [
        h("h1", `Post ${props.id}`),
        h("p", "The count is live: likes from anyone, anywhere, show up here."),
        likeButton({ post: props.id }),
      ]);
  },
});

const app = createApp(() => h(Post, { id: post }));
// With templates compiled in the browser, Vue must also leave the elements to it.
app.config.compilerOptions.isCustomElement = (tag) => tag === "like-button" || tag === "reaction-bar";
app.mount("#app");
