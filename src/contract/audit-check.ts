// Whether a value is an audit record the control plane stores: the contract's shape with its
// size bounds, no NUL character in any text (PostgreSQL text cannot hold one), and a
// `tool_server` that is the server of the record's `tool_name` (audit-chain.ts toolServerOf). One check
// for both sides: the control plane's ingest rejects such a record, so the proxy refuses the
// call that would produce it (400) before writing anything.
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { AuditRecord } from "./audit.ts";
import { toolServerOf } from "./audit-chain.ts";
import "./formats.ts";

const recordSchema = TypeCompiler.Compile(AuditRecord);

function hasNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (Array.isArray(value)) return value.some(hasNul);
  if (value && typeof value === "object") return Object.values(value).some(hasNul);
  return false;
}

/**
 * Why the value is not a storable audit record ("path: message"), or null when it is one.
 * `json`, when given, is JSON.stringify(raw): a NUL in any text shows there as `\u0000`, so the
 * walk through every field runs only when that text holds one (or an escaped backslash before
 * "u0000", which the walk then tells apart).
 */
export function auditRecordProblem(raw: unknown, json?: string): string | null {
  if (!recordSchema.Check(raw)) {
    const e = recordSchema.Errors(raw).First();
    return e ? `${e.path || "/"}: ${e.message}` : "it does not match the audit record schema";
  }
  if ((json === undefined || json.includes("\\u0000")) && hasNul(raw)) return "a text field contains a NUL character";
  const r = raw as AuditRecord;
  if (typeof r.tool_server === "string" && r.tool_server !== toolServerOf(r.tool_name)) {
    return `/tool_server: "${r.tool_server}" is not the server of tool_name ${JSON.stringify(r.tool_name)} (the part before its first dot)`;
  }
  return null;
}
