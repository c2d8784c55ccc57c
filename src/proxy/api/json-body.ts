// Reading a JSON request body on the local API, within a size limit and without trusting the
// client: a declared Content-Length over the limit is refused before a byte is read, and a
// body without one (chunked) is read chunk by chunk and abandoned as soon as it passes the
// limit, so an oversized body is never held in memory (Bun discards the rest of the upload and
// keeps the connection usable). Malformed JSON, invalid UTF-8 and absurdly deep nesting are
// the client's mistake: each is a stable code the local API answers with 400 or 413, never a
// 500 from a parser or a recursive walk further on.

import { readBounded } from "../../contract/bounded-body.ts";
import { NonFiniteNumber, parseExactJson } from "../../contract/exact-json.ts";

/** Tool decisions and outcomes: arguments and payload of one call. */
export const TOOL_BODY_LIMIT = 1024 * 1024;
/** Chat completions carry the conversation, including images as data URLs. */
export const CHAT_BODY_LIMIT = 32 * 1024 * 1024;
/** Deeper nesting than any real request has; deep enough to overflow recursive walks (canonical JSON). */
export const MAX_JSON_DEPTH = 128;

export const BODY_ERRORS = {
  invalidJson: "invalid_json",
  tooLarge: "body_too_large",
  tooDeep: "json_too_deep",
  outOfRange: "number_out_of_range",
} as const;

export type BodyResult = { ok: true; value: unknown } | { ok: false; status: 400 | 413; code: (typeof BODY_ERRORS)[keyof typeof BODY_ERRORS]; message: string };

const tooLarge = (limit: number): Extract<BodyResult, { ok: false }> => ({
  ok: false,
  status: 413,
  code: BODY_ERRORS.tooLarge,
  message: `the request body is larger than ${limit} bytes, the limit of this route`,
});

/** Whether a parsed value nests arrays and objects deeper than `max` (iterative: no recursion). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * The request body parsed as JSON, or why it cannot be: too large, not UTF-8 JSON, too deep.
 * With `exact`, numbers a double does not hold are kept exactly (contract/exact-json.ts) and a
 * number out of a double's range is a 400: the audit records what the caller sent.
 */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

export async function readJsonBody(req: Request, limit: number, o: { exact?: boolean } = {}): Promise<BodyResult> {
  const read = await readBodyBytes(req, limit);
  if (!read.ok) return read;
  return parseJsonBytes(read.bytes, o);
}

/** Bytes read within a limit, parsed as readJsonBody does. */
export function parseJsonBytes(bytes: Uint8Array, o: { exact?: boolean } = {}): BodyResult {
  let value: unknown;
  try {
    const text = UTF8.decode(bytes);
    value = o.exact ? parseExactJson(text) : JSON.parse(text);
  } catch (e) {
    if (e instanceof NonFiniteNumber) return { ok: false, status: 400, code: BODY_ERRORS.outOfRange, message: `the request body is not valid here: ${e.message}` };
    const why = e instanceof SyntaxError ? e.message : "the body is not UTF-8";
    return { ok: false, status: 400, code: BODY_ERRORS.invalidJson, message: `the request body is not valid JSON: ${why}` };
  }
  // Nesting deeper than the limit takes more than twice as many bytes (a bracket to open and
  // one to close each level): a shorter body, the usual decision, needs no walk.
  if (bytes.length > 2 * MAX_JSON_DEPTH && nestsDeeperThan(value, MAX_JSON_DEPTH)) {
    return { ok: false, status: 400, code: BODY_ERRORS.tooDeep, message: `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` };
  }
  return { ok: true, value };
}

/** The raw request body within the size limit (413 past it), not parsed. */
export async function readBodyBytes(req: Request, limit: number): Promise<{ ok: true; bytes: Uint8Array<ArrayBuffer> } | Extract<BodyResult, { ok: false }>> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) return tooLarge(limit);
  // With a Content-Length within the limit, HTTP framing bounds the body already; a body
  // without one (chunked) is read only up to the limit.
  const bytes = declared !== null ? new Uint8Array(await req.arrayBuffer()) : req.body ? await readBounded(req.body, limit) : new Uint8Array(0);
  return bytes === null ? tooLarge(limit) : { ok: true, bytes };
}

/** How long an answer waits for the rest of a body the route did not read. */
export const DISCARD_WAIT_MS = 5_000;

/**
 * Read before answering: the body a route answered without reading (a refusal before routing,
 * 503 while the proxy cannot decide) is read and dropped, within `limit` bytes and `waitMs`, so
 * that a client that sends its body after its headers, on a connection it asked to close, gets
 * the answer rather than a broken pipe. A body declared larger than `limit` is not waited for
 * (its 413 is the answer; the connection is closed after it), nor is one still missing after
 * `waitMs`. Never throws. Costs nothing when the route read its body (the usual decision).
 */
export async function discardUnread(req: Request, limit: number, waitMs = DISCARD_WAIT_MS): Promise<void> {
  if (req.bodyUsed || !req.body) return;
  const declared = req.headers.get("content-length");
  if (declared === "0" || (declared !== null && !(Number(declared) <= limit))) return;
  const reader = req.body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), waitMs);
  });
  try {
    for (let size = 0; size <= limit; ) {
      const next = await Promise.race([reader.read(), late]);
      if (next === "late" || next.done) break;
      size += next.value.byteLength;
    }
  } catch {
    // the client went away: nothing left to answer it
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
}
