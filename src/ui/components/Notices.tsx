// Page-wide notices: what a link left out, whether a dropped file is the one a link was made from,
// sidecars that matched nothing. Each can be dismissed; all text is rendered as text.

import { useApp } from "../state/app";

export function Notices() {
  const notices = useApp((a) => a.notices);
  const dismiss = useApp((a) => a.dismiss);
  if (notices.length === 0) return null;
  return (
    <div className="notices" role="status" aria-live="polite">
      {notices.map((n) => (
        <div
          key={n.id}
          className={`notice-line ${n.kind}`}
          data-testid="notice"
          data-kind={n.kind}
          data-topic={n.topic}
        >
          <span className="notice-text">{n.text}</span>
          <button
            type="button"
            className="link"
            onClick={() => dismiss(n.id)}
            aria-label="Dismiss this notice"
          >
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
