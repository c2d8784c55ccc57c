// The OpenAPI document says what the server does, for every operation (issue 20): its
// credential (and the server answers 401 without one), its success and problem+json error
// responses, JSON-only bodies (a form is 415) that take no undeclared field (422 naming it).
import { beforeAll, describe, expect, test } from "bun:test";
import { OPENAPI_PATH } from "./app.ts";
import { addInstallation } from "./runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "./testing.ts";

type Json = Record<string, any>;
type Operation = { method: string; path: string; op: Json };

let cp: TestControlPlane;
let doc: Json;
let runtimeToken: string;
let operations: Operation[];

beforeAll(async () => {
  cp = await testControlPlane();
  doc = (await cp.call("GET", OPENAPI_PATH, { token: null })).json;
  runtimeToken = (await addInstallation(cp)).token;
  operations = Object.entries(doc.paths as Json).flatMap(([path, ops]) => Object.entries(ops as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
});

/** The operation's path with its organization the caller's and every other parameter a made-up id. */
function concrete(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === "org" ? cp.orgId : "x_made_up"));
}

function tokenFor(o: Operation): string | null {
  const schemes = (o.op.security as Json[]).flatMap((s) => Object.keys(s));
  if (schemes.includes("runtimeToken")) return runtimeToken;
  if (schemes.includes("apiToken")) return cp.adminToken;
  return null;
}

const label = (o: Operation) => `${o.method} ${o.path}`;

/** Object schemas in a JSON schema that take fields they do not declare, by JSON pointer. */
function openObjects(schema: Json, at = ""): string[] {
  if (!schema || typeof schema !== "object") return [];
  const out: string[] = [];
  if (schema.type === "object" && schema.properties) {
    if (schema.additionalProperties !== false) out.push(at || "/");
    for (const [k, v] of Object.entries(schema.properties as Json)) out.push(...openObjects(v as Json, `${at}/${k}`));
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) for (const v of (schema[key] as Json[] | undefined) ?? []) out.push(...openObjects(v, at));
  if (schema.items) out.push(...openObjects(schema.items as Json, `${at}/[]`));
  return out;
}

describe("the OpenAPI document", () => {
  test("declares the API token, session and runtime token schemes", () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["apiToken", "runtimeToken", "session"]);
    expect(doc.components.securitySchemes.apiToken).toMatchObject({ type: "http", scheme: "bearer" });
  });

  test("every operation names its security, a success response and problem+json errors", () => {
    expect(operations.length).toBeGreaterThan(90);
    const missing: string[] = [];
    for (const o of operations) {
      if (!Array.isArray(o.op.security)) missing.push(`${label(o)}: no security`);
      const statuses = Object.keys(o.op.responses ?? {});
      if (!statuses.some((s) => /^[23]/.test(s))) missing.push(`${label(o)}: no success response`);
      if (!o.op.responses?.["4XX"]?.content?.["application/problem+json"]) missing.push(`${label(o)}: no problem+json 4XX`);
    }
    expect(missing).toEqual([]);
    expect(doc.components.schemas.Problem.required).toEqual(expect.arrayContaining(["type", "title", "status", "detail", "code"]));
    // Only sign-in, `svc login`'s device flow and the identity-assertion JWKS (issue 32: what verifiers fetch) are open to anyone.
    const anonymous = operations
      .filter((o) => o.op.security.length === 0)
      .map(label)
      .sort();
    expect(anonymous).toEqual(["GET /api/v1/assertion-keys/{org}/jwks.json", "POST /api/v1/auth/login-requests", "POST /api/v1/auth/login-requests/{id}/token", "POST /api/v1/auth/sessions"]);
  });

  test("request bodies are JSON only and every object in them is closed to undeclared fields", () => {
    const wrong: string[] = [];
    for (const o of operations.filter((x) => x.op.requestBody)) {
      const types = Object.keys(o.op.requestBody.content);
      if (types.join() !== "application/json") wrong.push(`${label(o)}: ${types.join(", ")}`);
      for (const at of openObjects(o.op.requestBody.content["application/json"]?.schema ?? {})) wrong.push(`${label(o)}: ${at} takes undeclared fields`);
    }
    expect(wrong).toEqual([]);
  });
});

describe("the server does what the document says", () => {
  test("every operation with a security requirement answers 401 problem+json without a credential", async () => {
    const wrong: string[] = [];
    for (const o of operations.filter((x) => x.op.security.length > 0)) {
      const res = await cp.call(o.method, concrete(o.path), { token: null, ...(o.op.requestBody ? { body: {} } : {}) });
      if (res.status !== 401 || !res.headers.get("content-type")?.startsWith("application/problem+json")) wrong.push(`${label(o)} → ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  test("a form body is refused with 415 (sign-in: 422, its login CSRF guard)", async () => {
    const wrong: string[] = [];
    for (const o of operations.filter((x) => x.op.requestBody)) {
      const token = tokenFor(o);
      const res = await cp.app.handle(
        new Request(`http://localhost${concrete(o.path)}`, {
          method: o.method,
          headers: { "content-type": "application/x-www-form-urlencoded", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: "name=x&workspace=default",
        }),
      );
      const expected = o.path === "/api/v1/auth/sessions" ? 422 : 415;
      if (res.status !== expected) wrong.push(`${label(o)} → ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  test("an undeclared body field is refused with 422 naming it, on admin and runtime routes alike", async () => {
    const wrong: string[] = [];
    for (const o of operations.filter((x) => x.op.requestBody)) {
      const res = await cp.call(o.method, concrete(o.path), { token: tokenFor(o), body: { zz_not_a_field: 1 } });
      const named = (res.json?.errors as Array<{ path: string }> | undefined)?.some((e) => e.path === "/zz_not_a_field");
      if (res.status !== 422 || !named) wrong.push(`${label(o)} → ${res.status} ${res.text.slice(0, 120)}`);
    }
    expect(wrong).toEqual([]);
  });

  test("an undeclared field inside a policies apply entry is refused too, never dropped", async () => {
    const entry = { name: "p1", src: "*", dst: "tool:*", effect: "permit", shadowed: true };
    const res = await cp.call("POST", cp.org("/policies/apply"), { body: { workspace: "default", policies: [entry] } });
    expect(res.status).toBe(422);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toContain("/policies/0/shadowed");
  });
});
