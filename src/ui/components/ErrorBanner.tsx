// The reader's (or the download's) message, exactly as it wrote it; the page stays usable for the next file.

import { useSide } from "../state/store";

export function ErrorBanner() {
  const S = useSide();
  const error = S((s) => s.error);
  const fileName = S((s) => s.fileName);
  if (!error) return null;
  return (
    <section className="error-banner" role="alert" data-testid="error">
      <h2>Could not open {fileName ?? "the file"}</h2>
      <p className="error-message" data-testid="error-message">
        {error}
      </p>
      <p className="hint">Drop another file or use Open snapshot… to try again.</p>
    </section>
  );
}
