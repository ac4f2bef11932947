/// <reference types="vite/client" />

// Trusted Types (Chromium): the page's CSP requires them for script URLs; only the worker's URL is made.
interface TrustedTypePolicyLike {
  createScriptURL(url: string): unknown;
}
interface Window {
  trustedTypes?: {
    createPolicy(name: string, rules: { createScriptURL(url: string): string }): TrustedTypePolicyLike;
  };
}
