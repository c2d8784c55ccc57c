// `svc proxy spool replay` (POST /v1/spool/replay): the records set aside in rejected.jsonl
// are appended to the spool again, so the shipper sends them, once the cause is fixed (an
// ingress limit raised, a control plane upgraded). Each keeps its id and its exact spooled
// line; the control plane deduplicates by id, so a record replayed twice is stored once, and
// one it still refuses is set aside again with its verdict.
//
// Crash-safe without holding the shipper: rejected.jsonl is first renamed to
// rejected.replaying (records set aside meanwhile start a new rejected.jsonl), its records are
// appended durably, then the file is removed. A replay interrupted by a crash leaves the file
// behind; the next replay takes it first (what was appended already is sent again, harmless).
// A line that is not a whole entry (a damaged tail) is kept: written back to rejected.jsonl.
import { createReadStream, existsSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fsyncDir } from "../durable-file.ts";
import { REJECTED_FILE } from "./spool-files.ts";

export const REPLAYING_FILE = "rejected.replaying";
/** Appends in flight at once: one group commit takes them together. */
const BATCH = 500;

export type ReplayResult = { replayed: number; kept: number };

/** The record's own line inside an entry `{"rejected_at":…,"reason":…,"record":<line>}`; null when the line is no entry. Pure. */
export function recordLine(entry: string): { id: string; line: string } | null {
  let e: { rejected_at?: unknown; reason?: unknown; record?: { id?: unknown } };
  try {
    e = JSON.parse(entry) as typeof e;
  } catch {
    return null;
  }
  if (!e || typeof e !== "object" || !e.record || typeof e.record !== "object" || typeof e.record.id !== "string") return null;
  // The exact bytes as spooled (spool-backlog.ts writes the entry around them); a hand-edited entry is serialized again.
  const prefix = `{"rejected_at":${JSON.stringify(e.rejected_at)},"reason":${JSON.stringify(e.reason)},"record":`;
  const line = entry.startsWith(prefix) && entry.endsWith("}") ? entry.slice(prefix.length, -1) : JSON.stringify(e.record);
  return { id: e.record.id, line };
}

/** Appends the set-aside records to the spool through `append` (AuditSpool.appendLine); see the top of this file. */
export async function replayRejected(dir: string, append: (id: string, line: string) => Promise<void>): Promise<ReplayResult> {
  const result: ReplayResult = { replayed: 0, kept: 0 };
  const replaying = join(dir, REPLAYING_FILE);
  // A replay cut short by a crash first, then what is set aside now.
  if (existsSync(replaying)) await replayFile(dir, replaying, append, result);
  if (existsSync(join(dir, REJECTED_FILE))) {
    await rename(join(dir, REJECTED_FILE), replaying);
    fsyncDir(dir);
    await replayFile(dir, replaying, append, result);
  }
  return result;
}

async function replayFile(dir: string, path: string, append: (id: string, line: string) => Promise<void>, result: ReplayResult): Promise<void> {
  const lines = createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity });
  let pending: Promise<void>[] = [];
  const kept: string[] = [];
  for await (const raw of lines) {
    const text = raw.replace(/\0+/g, "").trim();
    if (!text) continue;
    const r = recordLine(text);
    if (!r) {
      kept.push(text);
      continue;
    }
    pending.push(append(r.id, r.line));
    result.replayed++;
    if (pending.length >= BATCH) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  if (kept.length > 0) {
    const fh = await open(join(dir, REJECTED_FILE), "a", 0o600);
    try {
      await fh.appendFile(`${kept.join("\n")}\n`);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    result.kept += kept.length;
  }
  await rm(path, { force: true });
  fsyncDir(dir);
}
