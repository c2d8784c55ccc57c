// An admin event's account (pure): the secret digest, the defaults the catalogue gives (status,
// severity), a refusal's, the control plane's own work (status 0), and the default reason.
import { describe, expect, test } from "bun:test";
import { anonymousActor, defaultReason, eventDetail, secretDigest, systemActor } from "./admin-events.ts";

const ada = { id: "acc_1", email: "ada@example.com", role: "admin", credential: { kind: "api_token" as const, id: "tok_1" }, ip: "192.0.2.1", user_agent: "svc-cli/1" };

describe("admin events", () => {
  test("a secret's digest: sha256: and 16 hex digits, the start of its SHA-256; never the secret", () => {
    const d = secretDigest("svc_rt_secret-value");
    expect(d).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(d).toBe(`sha256:${new Bun.CryptoHasher("sha256").update("svc_rt_secret-value").digest("hex").slice(0, 16)}`);
    expect(d).not.toContain("secret");
  });

  test("status and severity come from the catalogue; a refusal is high; the control plane's own work has status 0", () => {
    const target = { type: "policy", id: "pol_1", name: "p" };
    expect(eventDetail({ orgId: "o", action: "policy.create", actor: ada, target })).toMatchObject({ v: 1, result: "ok", status: 201, severity: "notice" });
    expect(eventDetail({ orgId: "o", action: "access.refused", actor: anonymousActor({ ip: "x", userAgent: null }), target, result: "refused", status: 401, code: "unauthorized" })).toMatchObject({
      result: "refused",
      status: 401,
      code: "unauthorized",
      severity: "high",
    });
    expect(eventDetail({ orgId: "o", action: "audit_retention.run", actor: systemActor("retention"), target })).toMatchObject({ status: 0, severity: "notice" });
    expect(eventDetail({ orgId: "o", action: "policy.update", actor: ada, target, before: { a: 1 }, after: { a: 2 }, severity: "high" })).toMatchObject({
      before: { a: 1 },
      after: { a: 2 },
      severity: "high",
    });
  });

  test("the default reason names who did what to which target", () => {
    expect(defaultReason({ orgId: "o", action: "policy.update", actor: ada, target: { type: "policy", id: "pol_1", name: "staff chat" } })).toBe(
      "ada@example.com: policy.update policy staff chat (pol_1)",
    );
    expect(
      defaultReason({
        orgId: "o",
        action: "access.refused",
        actor: anonymousActor({ ip: null, userAgent: null }),
        target: { type: "route", id: "GET /x", name: null },
        result: "refused",
        code: "unauthorized",
      }),
    ).toBe("anonymous: access.refused route GET /x refused (unauthorized)");
  });
});
