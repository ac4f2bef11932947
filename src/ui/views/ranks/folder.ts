// A dropped folder: its files, walked recursively (hidden files left out), each remembered with its path
// inside the folder (`relativePath`), so ranks named by folder (`rank3/snapshot.pickle`) are told apart.
// The entries must be taken while the drop event runs; reading them can come after.

import { relativePath } from "./store";

/** The drop's entries when at least one is a folder (taken now, during the event); null otherwise. */
export function folderEntries(dt: DataTransfer | null | undefined): FileSystemEntry[] | null {
  const items = Array.from(dt?.items ?? []);
  const entries: FileSystemEntry[] = [];
  for (const it of items) {
    if (it.kind !== "file") continue;
    const e = typeof it.webkitGetAsEntry === "function" ? it.webkitGetAsEntry() : null;
    if (e) entries.push(e);
  }
  return entries.some((e) => e.isDirectory) ? entries : null;
}

const fileOf = (e: FileSystemFileEntry) => new Promise<File>((resolve, reject) => e.file(resolve, reject));

/** Every batch of a directory reader (readEntries returns at most 100 at a time). */
async function children(d: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = d.createReader();
  const out: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
      reader.readEntries(resolve, reject),
    );
    if (batch.length === 0) return out;
    out.push(...batch);
  }
}

/** The files under the entries, in name order per folder, at most `limit` of them. */
export async function filesOfEntries(entries: FileSystemEntry[], limit = 4096): Promise<File[]> {
  const out: File[] = [];
  const walk = async (e: FileSystemEntry): Promise<void> => {
    if (out.length >= limit || e.name.startsWith(".")) return;
    if (e.isFile) {
      const f = await fileOf(e as FileSystemFileEntry);
      relativePath.set(f, e.fullPath.replace(/^\/+/, ""));
      out.push(f);
    } else if (e.isDirectory) {
      const kids = await children(e as FileSystemDirectoryEntry);
      kids.sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
      for (const k of kids) await walk(k);
    }
  };
  for (const e of entries) await walk(e);
  return out;
}
