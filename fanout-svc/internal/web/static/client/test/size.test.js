// The size budget: each entry point bundled and minified by esbuild, then gzipped, must stay
// within package.json's sizeBudget (bytes of min+gzip), set just above the size when it was
// written, so that growth is a decision (raise the budget) and not an accident.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = new URL("..", import.meta.url);
const { sizeBudget } = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));

for (const [entry, budget] of Object.entries(sizeBudget)) {
  test(`${entry} min+gzip stays within ${budget} bytes`, async () => {
    const out = await esbuild.build({ entryPoints: [new URL(entry, root).pathname], bundle: true, minify: true, format: "esm", write: false });
    const size = gzipSync(out.outputFiles[0].contents).length;
    assert.ok(size <= budget, `${entry}: ${size} bytes min+gzip; budget ${budget} (raise sizeBudget in package.json if the growth is meant)`);
  });
}
