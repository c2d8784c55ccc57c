// Refuses a NUL character anywhere in a request's path parameters, query or JSON body, before
// validation and before any handler: PostgreSQL text cannot hold one (the statement fails, and
// the request would answer 500), and no identifier, name or email the service keeps has one.
// The answer is 422 validation_failed naming where it was, on SQLite and PostgreSQL alike.
// Audit ingest checks its records one by one (audit/record-check.ts), so a NUL in one record
// rejects that record only: its body is left to it.
import { Elysia } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import { requestTarget } from "../../contract/request-target.ts";

/** Routes whose body checks NUL itself, per item. */
const OWN_BODY_CHECK = new Set(["/api/v1/runtime/audit-records"]);

/** The JSON-pointer-ish path of the first string holding NUL, or null. */
export function nulAt(value: unknown, path = ""): string | null {
  if (typeof value === "string") return value.includes("\u0000") ? path || "/" : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = nulAt(value[i], `${path}/${i}`);
      if (hit) return hit;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const hit = (k.includes("\u0000") ? `${path}/${k}` : null) ?? nulAt(v, `${path}/${k}`);
      if (hit) return hit;
    }
  }
  return null;
}

function refuse(where: string): never {
  throw new SvcError("validation_failed", `${where} contains a NUL character`, { errors: [{ path: where, message: "contains a NUL character" }] });
}

export function nulGuard() {
  return new Elysia({ name: "nul-guard" }).onTransform({ as: "global" }, ({ params, query, body, request }) => {
    const p = nulAt(params);
    if (p) refuse(`path parameter ${p.slice(1)}`);
    const q = nulAt(query);
    if (q) refuse(`query parameter ${q.slice(1)}`);
    if (OWN_BODY_CHECK.has(requestTarget(request.url).path)) return;
    const b = nulAt(body);
    if (b) refuse(`body ${b}`);
  });
}
