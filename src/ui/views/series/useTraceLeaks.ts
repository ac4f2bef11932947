// The open file's steps and growth (worker `leaks(device)`, core traceLeaks), for the Growth section and the
// timeline's step bands. The worker computes it once per replay; each caller asks again (cheap).

import { useEffect, useState } from "react";
import type { LeaksAnswer } from "../../../../workers/api";
import { useSide } from "../../state/store";

export function useTraceLeaks(): { answer: LeaksAnswer | null; error: string | null } {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const ready = S((s) => !!s.panel);
  const [state, setState] = useState<{ answer: LeaksAnswer | null; error: string | null }>({
    answer: null,
    error: null,
  });
  useEffect(() => {
    if (!ready) return;
    let stale = false;
    ask((api) => api.leaks(device)).then(
      (answer) => !stale && setState({ answer, error: null }),
      (e) => !stale && setState({ answer: null, error: e instanceof Error ? e.message : String(e) }),
    );
    return () => {
      stale = true;
    };
  }, [ask, device, ready]);
  return state;
}
