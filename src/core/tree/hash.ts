// Two independent 32-bit hashes per string (FNV-1a with murmur3's finaliser), combined along a path: node
// keys are 16 hex digits, the same for the same path in every tree.

export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function hashString(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h ^ s.length);
}

/** Order-dependent combination of a running hash with the next element's. */
export function combine(a: number, b: number, seed: number): number {
  return fmix32((Math.imul(a ^ seed, 0x9e3779b1) + b) | 0);
}

export const SEED1 = 0x2545f491;
export const SEED2 = 0x6c8e9cf5;

export function hex2(h1: number, h2: number): string {
  return h1.toString(16).padStart(8, "0") + h2.toString(16).padStart(8, "0");
}
