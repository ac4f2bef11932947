import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Relative base: the built site works from any sub-path on any static host.
export default defineConfig({
  base: "./",
  plugins: [react()],
  worker: { format: "es" },
  build: { outDir: "dist", target: "es2022", sourcemap: false },
});
