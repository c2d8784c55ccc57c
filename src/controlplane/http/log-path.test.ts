// Secrets in request paths never reach the log: the claim token of `/claim/<token>` and any
// segment shaped like an svc bearer secret are replaced, on the console's 500 line too.
import { describe, expect, test } from "bun:test";
import type { LogFields } from "../../log/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { REDACTED, loggablePath } from "./log-path.ts";

describe("loggablePath", () => {
  test("claim tokens and secret-shaped segments are replaced; other paths stay", () => {
    expect(loggablePath("/claim/svc_cl_abcDEF123")).toBe(`/claim/${REDACTED}`);
    expect(loggablePath("/claim/not-even-a-token")).toBe(`/claim/${REDACTED}`);
    expect(loggablePath("/claim/svc_cl_abc/extra")).toBe(`/claim/${REDACTED}/extra`);
    expect(loggablePath("/claim/")).toBe("/claim/");
    expect(loggablePath("/api/v1/anything/svc_at_secret/x")).toBe(`/api/v1/anything/${REDACTED}/x`);
    expect(loggablePath("/x/svc%5Frt%5Fsecret")).toBe(`/x/${REDACTED}`);
    for (const kept of ["/", "/audit", "/login/approve", "/api/v1/organizations/org_1/audit-encryption-keys/key_1:disable", "/sso/callback"]) {
      expect(loggablePath(kept)).toBe(kept);
    }
    // A query is never part of what is logged.
    expect(loggablePath("/login/approve?request=lr_1&code=ABCD-EFGH")).toBe("/login/approve");
  });
});

test("a claim page that fails logs its path without the token", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const claim = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-1" } });
  expect(claim.status).toBe(200);
  const path = new URL(claim.json.url).pathname;
  const token = path.slice("/claim/".length);
  expect(token).toStartWith("svc_cl_");

  const lines: Array<{ event: string; fields: LogFields }> = [];
  const keep = (event: string, fields: LogFields = {}) => lines.push({ event, fields });
  cp.deps.log = { info: keep, warn: keep, error: keep };
  // Any unexpected failure while the page is built gives the 500 page and one log line.
  cp.deps.now = () => {
    throw new Error("clock unavailable");
  };
  const res = await cp.app.handle(new Request(`http://localhost${path}`));
  expect(res.status).toBe(500);
  const failed = lines.find((l) => l.event === "console page failed");
  expect(failed?.fields.path).toBe(`/claim/${REDACTED}`);
  expect(JSON.stringify(lines)).not.toContain(token);
});
