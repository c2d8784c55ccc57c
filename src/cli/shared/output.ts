// How admin commands print: aligned tables for people, `--json` for scripts (gh style). Data
// goes to stdout; progress, notices and errors go to stderr. Writes are synchronous: the entry
// point calls process.exit, which would cut off output still queued for a slow pipe reader.
import { writeSync } from "node:fs";
import { UsageError } from "../../command/index.ts";

/** The `--json` flag every command that lists or shows something takes. */
export const jsonFlag = { json: { type: "boolean", description: "print JSON instead of a table" } } as const;

/**
 * The flags of a command that lists a paged collection, as gh has them: `--limit n` items
 * (paged for you, however large), `--limit 0` or `--all` for every one.
 */
export const limitFlags = (defaultLimit: number) =>
  ({
    limit: { type: "string", description: `how many to print (default ${defaultLimit}); fetched page by page, 0 for all`, valueHint: "n" },
    all: { type: "boolean", description: "print all of them (--limit 0)" },
  }) as const;

/** The number of items `--limit`/`--all` ask for; 0 means all. A usage error names a bad value. Pure. */
export function readLimit(args: { limit?: string | undefined; all?: boolean | undefined }, defaultLimit: number): number {
  if (args.all && args.limit !== undefined && args.limit !== "0") throw new UsageError(`--all and --limit ${args.limit} contradict each other; pass one of them`);
  if (args.all) return 0;
  if (args.limit === undefined) return defaultLimit;
  if (!/^\d{1,9}$/.test(args.limit)) throw new UsageError(`--limit must be a whole number (0 for all), not "${args.limit}"`);
  return Number(args.limit);
}

export type Cell = string | number | boolean | null | undefined;
export type Column<T> = { header: string; value: (row: T) => Cell };

export function cellText(v: Cell): string {
  if (v === null || v === undefined || v === "") return "-";
  // Line breaks fold to a space; any other control character is shown escaped, so a name a
  // remote server chose (an MCP tool's) cannot drive the admin's terminal.
  return String(v)
    .replace(/[\r\n\t]+/g, " ")
    .replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Columns padded to the widest cell, two spaces apart, no trailing spaces. Pure. */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [columns.map((c) => c.header), ...rows.map((r) => columns.map((c) => cellText(c.value(r))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => [...row[i]!].length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat(widths[i]! - [...cell].length)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** "key: value" lines with the keys aligned. Pure. */
export function renderFields(fields: ReadonlyArray<readonly [string, Cell]>): string {
  const width = Math.max(...fields.map(([k]) => k.length)) + 1;
  return fields.map(([k, v]) => `${`${k}:`.padEnd(width)} ${cellText(v)}`).join("\n");
}

/** Writes everything to a file descriptor before returning, waiting out a full pipe. */
export function writeAll(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === "string" ? Buffer.from(data) : data;
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
      Bun.sleepSync(1);
    }
  }
}

/** Data for stdout: one write, complete before the command returns. */
export function out(text: string): void {
  writeAll(1, text.endsWith("\n") ? text : `${text}\n`);
}
/** Progress and notices for stderr. */
export function note(text: string): void {
  writeAll(2, text.endsWith("\n") ? text : `${text}\n`);
}
export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

/** A list as JSON (the API's own objects) or as a table, with a line when it is empty. */
export function printList<T>(rows: readonly T[], columns: readonly Column<T>[], opts: { json: boolean; empty: string; jsonValue?: unknown }): void {
  if (opts.json) return printJson(opts.jsonValue ?? rows);
  if (rows.length === 0) return note(opts.empty);
  out(renderTable(rows, columns));
}

/** ISO time → "2026-01-02 03:04:05Z"; anything else unchanged. */
export function shortTime(v: unknown): string | null {
  if (typeof v !== "string" || !v) return null;
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?$/.exec(v);
  return m ? `${m[1]} ${m[2]}${m[3] ?? ""}` : v;
}
