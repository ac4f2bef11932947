// Binary searches over ascending typed arrays, one per element type so that each stays monomorphic in
// the loops that call it.

/** First index i with xs[i] ≥ v (xs ascending); xs.length when there is none. */
export function lowerBoundInt32(xs: Int32Array, v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index i with xs[i] ≥ v (xs ascending); xs.length when there is none. */
export function lowerBoundFloat64(xs: Float64Array, v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
