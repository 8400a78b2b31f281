// An app that imports the package by its name bundles with esbuild into one file that needs
// nothing else: the package's "exports" resolve, and the bundle runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));

async function bundle(options) {
  const result = await build({ bundle: true, format: "esm", write: false, logLevel: "silent", absWorkingDir: here, ...options });
  assert.deepEqual(result.warnings, []);
  return result.outputFiles[0].text;
}

test("the typed example bundles with the library and the elements", async () => {
  const out = await bundle({ entryPoints: ["../example/usage.ts"], platform: "browser" });
  assert.doesNotMatch(out, /^\s*import\s/m, "everything is inside the bundle");
  assert.match(out, /customElements\.define\("like-button"/);
  assert.match(out, /"\/react\/"/);
});

test("a bundled app runs: connect, follow and the exports it imported", async () => {
  const app = `
    import { connect, backoffDelay, ReactionError, LikeError } from "@likes/client";
    const l = connect({ streams: "http://127.0.0.1:9", writer: "http://127.0.0.1:9", posts: [], session: false });
    export const state = l.state;
    l.close();
    export const wait = backoffDelay(1000, 2, () => 1);
    export const typed = new ReactionError("x", { kind: "clap" }) instanceof LikeError;
  `;
  const out = await bundle({ stdin: { contents: app, resolveDir: here, loader: "js" }, platform: "neutral" });
  const mod = await import("data:text/javascript;base64," + Buffer.from(out).toString("base64"));
  assert.deepEqual({ state: mod.state, wait: mod.wait, typed: mod.typed }, { state: "idle", wait: 4000, typed: true });
});
