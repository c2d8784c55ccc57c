// Completes the OpenAPI document Elysia generates (issue 20), so it says what the server does:
//   - security: each operation names the credential the request gate checks for its path
//     (app.ts gateRoute; the auth macros): admin routes take an API token or the console
//     session, runtime routes a runtime token, the anonymous ones (sign-in, `svc login`'s
//     requests) none;
//   - request bodies: JSON only (the gate answers 415 to a form or any other media type), and
//     an object body takes no field it does not declare (422 naming it; docs/api.md);
//   - responses: the documented success (a generic one where a route declares none: 2XX
//     JSON) and every client error as problem+json.
// Pure: a document in, the completed document out.
import { PROBLEM_CONTENT_TYPE, Problem } from "../../contract/errors.ts";

type Json = Record<string, any>;

export const SECURITY = {
  admin: [{ apiToken: [] }, { session: [] }],
  runtime: [{ runtimeToken: [] }],
  anonymous: [],
} as const;

/** Operations anyone may call (no credential): sign-in, `svc login`'s device flow, and the identity-assertion JWKS verifiers fetch (issue 32). */
const ANONYMOUS = new Set(["post /api/v1/auth/sessions", "post /api/v1/auth/login-requests", "post /api/v1/auth/login-requests/{id}/token", "get /api/v1/assertion-keys/{org}/jwks.json"]);

/** The credential an operation takes, from its path (the same split as the gate's). */
export function securityOf(method: string, path: string): readonly Json[] {
  if (ANONYMOUS.has(`${method.toLowerCase()} ${path}`)) return SECURITY.anonymous;
  if (path.startsWith("/api/v1/runtime/")) return SECURITY.runtime;
  return SECURITY.admin;
}

/** `detail.responses` of a route that answers 204 without a body. */
export const NO_CONTENT = { 204: { description: "done; no body" } };

/** `detail.responses` of the audit export: JSON lines (default) or CSV, streamed. */
export const EXPORT_RESPONSES = {
  200: {
    description: "the matching records, oldest first",
    content: { "application/x-ndjson": { schema: { type: "string" as const } }, "text/csv": { schema: { type: "string" as const } } },
  },
};

/** `detail.responses` of a record's ciphertext: a binary age file. */
export const CIPHERTEXT_RESPONSES = { 200: { description: "the age file", content: { "application/octet-stream": { schema: { type: "string" as const, format: "binary" } } } } };

const PROBLEM_REF = { $ref: "#/components/schemas/Problem" };
const problemContent = { [PROBLEM_CONTENT_TYPE]: { schema: PROBLEM_REF } };

function isSuccess(status: string): boolean {
  return /^[23]/.test(status);
}

function strictBody(schema: Json): Json {
  if (schema.type === "object" && schema.properties && !("additionalProperties" in schema)) return { ...schema, additionalProperties: false };
  return schema;
}

function completeOperation(method: string, path: string, op: Json): Json {
  const out: Json = { ...op, security: [...securityOf(method, path)] };
  const json = op.requestBody?.content?.["application/json"];
  if (op.requestBody) {
    out.requestBody = { ...op.requestBody, content: json ? { "application/json": { ...json, schema: strictBody(json.schema ?? {}) } } : {} };
  }
  const responses: Json = { ...(op.responses ?? {}) };
  if (!Object.keys(responses).some(isSuccess)) {
    responses["2XX"] = { description: "success (JSON; no body with 204)", content: { "application/json": { schema: {} } } };
  }
  for (const [status, r] of Object.entries(responses)) {
    if (/^4/.test(status) && !r.content) responses[status] = { ...r, content: problemContent };
  }
  responses["4XX"] ??= { description: "client error: problem+json with a stable `code` (401/403 for a missing or wrong credential, 413/415/422 for a body refused)", content: problemContent };
  out.responses = responses;
  return out;
}

export function completeDocument(doc: Json): Json {
  const paths: Json = {};
  for (const [path, ops] of Object.entries(doc.paths ?? {})) {
    const done: Json = {};
    for (const [method, op] of Object.entries(ops as Json)) done[method] = completeOperation(method, path, op as Json);
    paths[path] = done;
  }
  const components = { ...(doc.components ?? {}), schemas: { ...(doc.components?.schemas ?? {}), Problem } };
  return { ...doc, paths, components };
}
