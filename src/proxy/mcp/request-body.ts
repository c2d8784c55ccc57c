// The gateway's request body (issue 31): read within MCP_REQUEST_LIMIT_BYTES and parsed
// exactly (contract/exact-json.ts), like every tool call's. A request over the limit is an
// MCP error, not a torn-down session: the rest of it is read and dropped (up to
// OVERSIZE_READ_MAX bytes and DISCARD_WAIT_MS, keeping only its first and last
// EDGE_BYTES), the JSON-RPC id is found at its start (`{"jsonrpc":"2.0","id":…`, as Python's
// SDK writes it) or its end (`…,"id":…}`, as the TypeScript SDK writes it), and the answer is
// that request's error, with HTTP 200, so the client's session goes on. Memory stays bounded
// whatever the client sends. Without an id to answer, it is the 413 it was.
import { DISCARD_WAIT_MS, parseJsonBytes, TOOL_BODY_LIMIT } from "../api/json-body.ts";

/** Largest MCP request (one call's arguments); the decide route's limit. */
export const MCP_REQUEST_LIMIT_BYTES = TOOL_BODY_LIMIT;
/** How much of an oversized request is read (and dropped) to answer it by its id. */
export const OVERSIZE_READ_MAX = 64 * 1024 * 1024;
const EDGE_BYTES = 8 * 1024;

export type McpRequestBody =
  | { ok: true; value: unknown }
  | { ok: false; status: 400 | 413; message: string; code: "invalid_json" | "json_too_deep" | "body_too_large" | "number_out_of_range" }
  | { ok: false; status: 413; message: string; code: "request_too_large"; id: string | number };

const HEAD_ID = /^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/;
const TAIL_ID = /[,{]\s*"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/;

/** The top-level JSON-RPC id of a request seen only at its two ends, or null. Pure. */
export function edgeRequestId(head: string, tail: string): string | number | null {
  const m = HEAD_ID.exec(head) ?? TAIL_ID.exec(tail);
  if (!m) return null;
  try {
    return JSON.parse(m[1]!) as string | number;
  } catch {
    return null;
  }
}

export async function readMcpRequest(req: Request, limit = MCP_REQUEST_LIMIT_BYTES, waitMs = DISCARD_WAIT_MS): Promise<McpRequestBody> {
  if (!req.body) return parseJsonBytes(new Uint8Array(0), { exact: true }) as McpRequestBody;
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let head = new Uint8Array(0);
  let tail = new Uint8Array(0);
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      const left = deadline - Date.now();
      const next = size > limit ? await Promise.race([reader.read(), Bun.sleep(Math.max(0, left)).then(() => null)]) : await reader.read();
      if (next === null || next.done) break;
      const v = next.value;
      size += v.byteLength;
      if (size <= limit) {
        chunks.push(v);
        continue;
      }
      if (chunks.length) {
        const all = concat(chunks);
        chunks.length = 0;
        head = all.slice(0, EDGE_BYTES);
        tail = all.slice(-EDGE_BYTES);
      }
      if (head.length < EDGE_BYTES) head = concat([head, v]).slice(0, EDGE_BYTES);
      tail = concat([tail, v]).slice(-EDGE_BYTES);
      if (size > OVERSIZE_READ_MAX) break;
    }
  } catch {
    // the client went away mid-body
  } finally {
    if (size > limit) await reader.cancel().catch(() => {});
  }
  if (size <= limit) return parseJsonBytes(concat(chunks), { exact: true }) as McpRequestBody;
  const message = `the MCP request is ${size > OVERSIZE_READ_MAX ? `over ${OVERSIZE_READ_MAX}` : size} bytes, over the svc gateway's limit of ${limit} bytes (MCP_REQUEST_LIMIT_BYTES); send smaller arguments`;
  const id = edgeRequestId(new TextDecoder().decode(head), new TextDecoder().decode(tail));
  return id === null ? { ok: false, status: 413, code: "body_too_large", message } : { ok: false, status: 413, code: "request_too_large", message, id };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
