// build.mjs builds the examples into static sites, each an index.html and its scripts:
// <out>/react and <out>/vue are bundled by esbuild with React or Vue (production builds), and
// <out>/html is the page with the package's minified bundle, dist/likes-elements.min.js, beside it.
// <out> is the first argument, else examples/dist. It also links node10/node_modules/@likes/client
// to the package, as an install would, for the moduleResolution node check. npm test runs it.
import * as esbuild from "esbuild";
import { copyFile, mkdir, rm, symlink } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(here, "dist"));

await import("../build.mjs"); // the package's dist/, for the minified bundle

const common = {
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2022",
  logLevel: "warning",
  absWorkingDir: here,
  define: {
    "process.env.NODE_ENV": '"production"',
    __VUE_OPTIONS_API__: "true",
    __VUE_PROD_DEVTOOLS__: "false",
    __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: "false",
  },
};
await rm(out, { recursive: true, force: true });
await Promise.all(["react", "vue", "html"].map((name) => mkdir(path.join(out, name), { recursive: true })));
await Promise.all([
  esbuild.build({ ...common, entryPoints: ["react/app.tsx"], jsx: "automatic", outfile: path.join(out, "react/app.js") }),
  esbuild.build({ ...common, entryPoints: ["vue/app.ts"], outfile: path.join(out, "vue/app.js") }),
  ...["react", "vue", "html"].map((name) => copyFile(path.join(here, name, "index.html"), path.join(out, name, "index.html"))),
  copyFile(path.join(here, "../dist/likes-elements.min.js"), path.join(out, "html/likes-elements.min.js")),
]);

const link = path.join(here, "node10/node_modules/@likes/client");
await mkdir(path.dirname(link), { recursive: true });
await rm(link, { force: true });
await symlink(path.relative(path.dirname(link), path.join(here, "..")), link, "dir");
