// Where to read how to capture a snapshot: the README's "Capture" section. The built site does not ship
// the README (dist/ has only the page, its assets and the demo) and does not know the repository's URL, so
// this is a pointer in words, not a link; its title says what the section holds.

export const CAPTURE_TITLE =
  "peakscope's README, section “Capture”: python/peakscope_hook.py — start() before the model is built, " +
  "dump_on_oom(), step() / dump(); it writes FILE.pickle and FILE.pickle.counters.json";

/** "see “Capture” in peakscope's README". */
export function SeeCapture() {
  return (
    <span className="see-capture" title={CAPTURE_TITLE} data-testid="see-capture">
      see “Capture” in peakscope's README
    </span>
  );
}
