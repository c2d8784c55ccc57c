// Range bounds that let a search read an index instead of filtering every record of an
// organization (issue 30). Pure.
//
// Time: record ids are time-ordered (contract/ids.ts), and ingest refuses a record whose id was
// made more than ID_TIME_SLACK_MS away from its timestamp (record-check.ts), so every record
// dated in [from, to] has an id in [idFloor(from - slack), idFloor(to + slack + 1)): a time
// filter bounds the id the (org, …, id) indexes are ordered by, and a page reads only that span.
//
// Tool prefixes: the tool names that start with a prefix are exactly those in
// [prefix, successor(prefix)) in code-point order, which is byte order of UTF-8: SQLite's BINARY
// collation and, on PostgreSQL, the tool index's `(tool_name COLLATE "C")`, which the queries
// name as the index does (query.ts bytewiseTool). LIKE, under either store's collation, cannot be read as a range from a prepared
// statement's parameter; the range can. The LIKE stays beside it for globs (`crm.*.read`).
import { idFloor } from "../../contract/ids.ts";

/** How far a record's id time may be from its timestamp: the proxy makes both at once (proxy/audit/recorder.ts). */
export const ID_TIME_SLACK_MS = 60 * 60_000;

/** The id bounds of records dated from `from` (inclusive) to `to` (inclusive), either open. */
export function idBounds(from: number | null, to: number | null): { min: string | null; below: string | null } {
  return {
    min: from === null ? null : idFloor("auditRecord", from - ID_TIME_SLACK_MS),
    below: to === null ? null : idFloor("auditRecord", to + ID_TIME_SLACK_MS + 1),
  };
}

/** The literal text a tool filter's matches start with: all of a prefix, a glob up to its first * or ?. */
export function literalPrefix(filter: string): string {
  const wild = filter.search(/[*?]/);
  return wild < 0 ? filter : filter.slice(0, wild);
}

/**
 * The least string above every string that starts with `prefix` (code-point order), or null when
 * there is none (an empty prefix, or one of only U+10FFFF).
 */
export function prefixSuccessor(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last >= 0x10ffff) continue;
    // the next code point, stepping over the surrogates (not characters of their own)
    const next = last + 1 >= 0xd800 && last + 1 <= 0xdfff ? 0xe000 : last + 1;
    return points.join("") + String.fromCodePoint(next);
  }
  return null;
}
