import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

// The Content-Security-Policy in index.html is for the built site. The dev server injects inline scripts
// (React refresh) and an HMR overlay that the policy forbids, so it is left out there.
const devWithoutCsp: Plugin = {
  name: "peakscope-dev-without-csp",
  apply: "serve",
  transformIndexHtml: (html) => html.replace(/\s*<meta http-equiv="Content-Security-Policy"[^>]*>/, ""),
};

// Relative base: the built site works from any sub-path on any static host.
export default defineConfig({
  base: "./",
  plugins: [react(), devWithoutCsp],
  worker: { format: "es" },
  build: { outDir: "dist", target: "es2022", sourcemap: false },
});
