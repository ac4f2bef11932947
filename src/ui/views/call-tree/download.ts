// Downloads made in the page (a Blob and an a[download]): nothing is uploaded or fetched.

export function saveBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.rel = "noopener";
  a.style.display = "none";
  document.body.appendChild(a);
  a.click();
  a.remove();
  // Long enough for the browser to start the download.
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

export function saveText(name: string, text: string, type: string): void {
  saveBlob(name, new Blob([text], { type }));
}

/** A file name part from a snapshot's name: its stem, safe characters only. */
export function fileStem(name: string | null): string {
  const base = (name ?? "snapshot").replace(/^.*[\\/]/, "").replace(/\.(pickle|pkl|json|gz|zip)$/gi, "");
  return base.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80) || "snapshot";
}

/** Copies text to the clipboard; falls back to a selected textarea where the API is refused. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}
