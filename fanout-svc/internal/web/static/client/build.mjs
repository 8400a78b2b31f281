// build.mjs writes dist/: CommonJS builds for require() (likes.cjs, likes-elements.cjs) and
// minified ES module bundles for a plain <script type="module"> (likes.min.js,
// likes-elements.min.js). npm test and npm pack (prepack) run it; the sources stay the ES modules.
import * as esbuild from "esbuild";

const common = { bundle: true, target: "es2022", logLevel: "warning" };
await Promise.all([
  esbuild.build({ ...common, entryPoints: ["likes.js"], format: "cjs", outfile: "dist/likes.cjs" }),
  esbuild.build({ ...common, entryPoints: ["likes-elements.js"], format: "cjs", outfile: "dist/likes-elements.cjs", logOverride: { "empty-import-meta": "silent" } }),
  esbuild.build({ ...common, entryPoints: ["likes.js"], format: "esm", minify: true, outfile: "dist/likes.min.js" }),
  esbuild.build({ ...common, entryPoints: ["likes-elements.js"], format: "esm", minify: true, outfile: "dist/likes-elements.min.js" }),
]);
