// One worker request at a time for a view that follows a fast-moving input (the timeline cursor, typing):
// changes are debounced, a request in flight is never queued behind (only the newest wanted query is sent
// when it returns), so a held arrow key cannot pile builds up in the worker; answers are applied as a
// transition (rendered in slices). The wait counts as work for the page's idle signal.

import { startTransition, useEffect, useRef, useState } from "react";
import { beginWork, endWork } from "../../state/idle";

export interface Latest<A> {
  answer: A | null;
  /** The key of the query `answer` is for. */
  key: string | null;
  error: string | null;
  /** A newer query than `answer`'s is waiting or in flight. */
  pending: boolean;
}

export function useLatest<Q, A>(
  key: string | null,
  query: Q,
  run: (q: Q) => Promise<A>,
  debounceMs = 40,
): Latest<A> {
  const [state, setState] = useState<Latest<A>>({ answer: null, key: null, error: null, pending: false });
  const r = useRef({
    inFlight: false,
    wanted: null as { key: string; q: Q } | null,
    alive: true,
    run,
    latestKey: null as string | null,
  });
  r.current.run = run;

  useEffect(() => {
    const ref = r.current;
    ref.alive = true;
    return () => {
      ref.alive = false;
    };
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: the key stands for the query
  useEffect(() => {
    const ref = r.current;
    ref.latestKey = key;
    if (key === null) {
      ref.wanted = null;
      setState({ answer: null, key: null, error: null, pending: false });
      return;
    }
    setState((s) => (s.pending ? s : { ...s, pending: true }));
    const pump = () => {
      if (ref.inFlight || !ref.wanted || !ref.alive) return;
      const { key: k, q } = ref.wanted;
      ref.wanted = null;
      ref.inFlight = true;
      ref
        .run(q)
        .then(
          (answer) => {
            if (!ref.alive) return;
            // A transition: React renders it in slices, so a big tree never makes one long task, and
            // the timeline's and the map's own updates go first.
            startTransition(() => setState({ answer, key: k, error: null, pending: ref.latestKey !== k }));
          },
          (e) => {
            if (!ref.alive) return;
            setState((s) => ({
              ...s,
              key: k,
              error: e instanceof Error ? e.message : String(e),
              pending: ref.latestKey !== k,
            }));
          },
        )
        .finally(() => {
          ref.inFlight = false;
          pump();
        });
    };
    let done = false;
    beginWork();
    const finish = () => {
      if (done) return;
      done = true;
      endWork();
    };
    const timer = setTimeout(() => {
      ref.wanted = { key, q: query };
      pump();
      finish();
    }, debounceMs);
    return () => {
      clearTimeout(timer);
      finish();
    };
  }, [key]);

  return state;
}
