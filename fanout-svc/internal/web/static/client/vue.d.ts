// Template typings of the elements for Vue (opt in: `import type {} from "@likes/client/vue"`).
// Tell Vue's compiler they are custom elements: compilerOptions.isCustomElement = (tag) =>
// tag === "like-button" || tag === "reaction-bar".
import type { DefineComponent } from "vue";

declare module "vue" {
  interface GlobalComponents {
    "like-button": DefineComponent<{ post: string }>;
    "reaction-bar": DefineComponent<{ post: string; kinds?: string }>;
  }
}

export {};
