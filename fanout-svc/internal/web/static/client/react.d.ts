// JSX typings of the elements for React (opt in: `import type {} from "@likes/client/react"` or
// list it in tsconfig "types"). React passes attributes of custom elements through as strings.
import type { DetailedHTMLProps, HTMLAttributes } from "react";

type LikesElementProps = DetailedHTMLProps<HTMLAttributes<HTMLElement>, HTMLElement> & {
  /** The post the element shows. */
  post: string;
};

declare module "react" {
  namespace JSX {
    interface IntrinsicElements {
      "like-button": LikesElementProps;
      "reaction-bar": LikesElementProps & {
        /** Comma-separated kinds, e.g. "heart,clap,fire". */
        kinds?: string;
      };
    }
  }
}

export {};
