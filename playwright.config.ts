import { defineConfig } from "@playwright/test";

// e2e against the built site (dist/) in Debian's Chromium; never downloads browsers.
// E2E_PORT and E2E_DIST let two checkouts' runs share a machine (another port, another built folder).
const PORT = Number(process.env.E2E_PORT ?? 4173);
const DIST = process.env.E2E_DIST ?? "dist";

export default defineConfig({
  testDir: "e2e",
  // Screenshots for people to look at are not tests: `npm run shots` takes them (SHOTS=1).
  testIgnore: process.env.SHOTS ? [] : ["**/shots.spec.ts"],
  workers: 1,
  retries: 0,
  forbidOnly: true,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  reporter: [["list"], ["json", { outputFile: process.env.E2E_JSON ?? "test-results/e2e.json" }]],
  outputDir: process.env.E2E_ARTIFACTS ?? "test-results/artifacts",
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    viewport: { width: 1400, height: 900 },
    deviceScaleFactor: 1,
    colorScheme: "light",
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
  webServer: {
    command: `node scripts/serve.mjs ${DIST} --port ${PORT}`,
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    stdout: "pipe",
    timeout: 30_000,
  },
});
