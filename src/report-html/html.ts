// HTML escaping for the report: every string that comes from a snapshot (file names, frames, check
// details, notes) goes through esc() before it is written into the page.

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text or attribute value → HTML-safe text (& < > " ' escaped; control characters dropped). */
export function esc(s: unknown): string {
  const text = String(s).replace(/[&<>"']/g, (c) => ENTITIES[c]);
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // C0 controls other than tab, newline and carriage return, and DEL, are not allowed in HTML text
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f) continue;
    out += text[i];
  }
  return out;
}
