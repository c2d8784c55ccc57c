// A NUL character in a path parameter, the query or a JSON body is a 422 before any handler
// runs: on PostgreSQL it would fail the statement (500); here it is refused the same on both
// stores. Audit ingest is left to its per-record check (one bad record, not the batch).
import { describe, expect, test } from "bun:test";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { nulAt } from "./nul-guard.ts";

describe("nulAt", () => {
  test("finds the first NUL in strings, arrays, objects and keys", () => {
    expect(nulAt("a\u0000")).toBe("/");
    expect(nulAt({ a: ["x", "y\u0000"] })).toBe("/a/1");
    expect(nulAt({ "k\u0000": 1 })).toBe("/k\u0000");
    expect(nulAt({ a: "ok", b: [1, null, { c: "fine" }] })).toBeNull();
    expect(nulAt(undefined)).toBeNull();
  });
});

test("path, query and body NULs are 422 validation_failed, and nothing is stored", async () => {
  const cp = await testControlPlane();
  for (const [method, path, body, where] of [
    ["GET", "/users/%00", undefined, "path parameter id"],
    ["GET", "/agents?workspace=%00", undefined, "query parameter workspace"],
    ["POST", "/users", { email: "a\u0000@example.com" }, "body /email"],
    ["POST", "/agents", { name: "a\u0000", workspace: "default" }, "body /name"],
  ] as const) {
    const res = await cp.call(method, cp.org(path), body === undefined ? {} : { body });
    expect([path, res.status, res.json?.code]).toEqual([path, 422, "validation_failed"]);
    expect(res.json.detail).toBe(`${where} contains a NUL character`);
  }
  expect((await cp.call("GET", cp.org("/users"))).json.users).toEqual([]);
  expect((await cp.call("GET", cp.org("/agents"))).json.agents).toEqual([]);
});

test("audit ingest rejects only the record with a NUL", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const good = auditRecord(inst);
  const bad = auditRecord(inst, { reason: "x\u0000" });
  const res = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [good, bad] } });
  expect(res.status).toBe(200);
  expect(res.json.acknowledged).toEqual([good.id]);
  expect(res.json.rejected.map((r: { id: string }) => r.id)).toEqual([bad.id]);
});
