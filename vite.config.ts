import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

// The Content-Security-Policy in index.html is for the built site. The dev server injects inline scripts
// (React refresh) and an HMR overlay that the policy forbids, so it is left out there.
const devWithoutCsp: Plugin = {
  name: "peakscope-dev-without-csp",
  apply: "serve",
  transformIndexHtml: (html) => html.replace(/\s*<meta http-equiv="Content-Security-Policy"[^>]*>/, ""),
};

// Cross-origin isolated in development too, as scripts/serve.mjs serves the built site (its threads may
// share memory: src/core/model/warm-memory.ts).
const isolation = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

// Relative base: the built site works from any sub-path on any static host.
export default defineConfig({
  base: "./",
  server: { headers: isolation },
  preview: { headers: isolation },
  plugins: [react(), devWithoutCsp],
  worker: { format: "es" },
  build: { outDir: "dist", target: "es2022", sourcemap: false },
});
