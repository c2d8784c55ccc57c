import { afterAll, describe, expect, test } from "bun:test";
import { AdminClient, ApiError, buildQuery, flagOfField, problemMessage } from "./client.ts";

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/api/v1/problem") {
      return new Response(
        JSON.stringify({ type: "urn:svc:problem:invalid_platform", title: "invalid platform", status: 422, code: "invalid_platform", detail: 'platform "slack" is not supported; use chatui' }),
        {
          status: 422,
          headers: { "content-type": "application/problem+json" },
        },
      );
    }
    if (path === "/api/v1/plain") return new Response("oops", { status: 502 });
    if (path === "/api/v1/ok") return Response.json({ auth: req.headers.get("authorization"), q: new URL(req.url).search });
    return new Response(null, { status: 204 });
  },
});
afterAll(async () => server.stop(true));
const base = `http://127.0.0.1:${server.port}`;

test("problem+json becomes one sentence ending in the code", async () => {
  const c = new AdminClient(base, "svc_at_x", "svc bot init");
  const err = await c.json("POST", "/problem", { body: {} }).catch((e) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect(err.code).toBe("invalid_platform");
  expect(err.status).toBe(422);
  expect(err.exitCode).toBe(1);
  expect(err.message).toBe('svc bot init: platform "slack" is not supported; use chatui (invalid_platform)');
});

test("a non-problem error still says which call failed and what to do", async () => {
  const err = await new AdminClient(base, null, "svc x").json("GET", "/plain").catch((e) => e);
  expect(err.message).toBe("svc x: the control plane answered HTTP 502 to GET /api/v1/plain; run it again in a moment, and check the control plane's log if it keeps failing (http_502)");
});

test("bearer token and query are sent; 204 gives null", async () => {
  const c = new AdminClient(base, "svc_at_x", "svc x");
  expect(await c.json("GET", "/ok", { query: { workspace: "default", agent_id: undefined } })).toEqual({ auth: "Bearer svc_at_x", q: "?workspace=default" });
  expect(await c.json("DELETE", "/none")).toBeNull();
});

test("unreachable control plane is named, with the setting to check", async () => {
  const err = await new AdminClient("http://127.0.0.1:1", "t", "svc x", "file").json("GET", "/me").catch((e) => e);
  expect(err.message).toMatch(/^svc x: cannot reach the control plane at http:\/\/127\.0\.0\.1:1 .*; check the URL given to `svc login` and the network, then run it again \(unreachable\)$/);
  const env = await new AdminClient("http://127.0.0.1:1", "t", "svc x", "env").json("GET", "/me").catch((e) => e);
  expect(env.message).toContain("; check SVC_CONTROL_PLANE_URL and the network");
});

describe("every refusal says what to do next", () => {
  const msg = (label: string, problem: Record<string, unknown>, status: number, source?: "file" | "env" | "login") => problemMessage(label, problem, status, "GET /api/v1/x", source);

  test("401: a saved sign-in is renewed with svc login; SVC_TOKEN is named when it was the token", () => {
    const problem = { code: "unauthorized", detail: "sign in first: run `svc login` or sign in to the console" };
    expect(msg("svc bot list", problem, 401)).toBe("svc bot list: your sign-in has expired or was revoked; run `svc login` to sign in again (unauthorized)");
    expect(msg("svc bot list", problem, 401, "env")).toBe(
      "svc bot list: the control plane refused SVC_TOKEN (expired, revoked or wrong); set SVC_TOKEN to a valid API token, or unset SVC_TOKEN and SVC_CONTROL_PLANE_URL and run `svc login` (unauthorized)",
    );
    expect(msg("svc login", problem, 401, "login")).toContain("pipe a valid API token, or run `svc login` without --with-token");
  });

  test("403: the admin role is needed", () => {
    expect(msg("svc bot list", { code: "forbidden", detail: 'role "member" cannot do admin work; ask an owner or admin of the organization' }, 403)).toBe(
      'svc bot list: role "member" cannot do admin work; admin commands need the owner or admin role in the organization: ask an owner or admin to run it or to make your account an admin, then run `svc login` again (forbidden)',
    );
  });

  test("403 with a code of its own (escrow recovery's rules) keeps the control plane's detail and next step whole", () => {
    const detail =
      "approving rrq_1 needs a sign-in within the last 5 minutes, and your API token comes from a sign-in 9 minutes ago (2026-01-01T00:00:00.000Z); run `svc login` again (sign in afresh on the page it opens), then approve within 5 minutes: `svc audit recover approve rrq_1`";
    expect(msg("svc audit recover approve", { code: "recovery_stale_sign_in", detail }, 403)).toBe(`svc audit recover approve: ${detail} (recovery_stale_sign_in)`);
    expect(msg("svc audit recover approve", { detail: "no" }, 403)).toContain("admin commands need the owner or admin role");
  });

  test("not found points at the list command of the group", () => {
    expect(msg("svc bot status", { code: "not_found", detail: "installation inst_1 not found in this organization" }, 404)).toBe(
      "svc bot status: installation inst_1 not found in this organization; check the id or name you passed (list installations with `svc bot list`) (not_found)",
    );
    expect(msg("svc audit keys disable", { code: "not_found", detail: "audit-encryption key key_1 not found" }, 404)).toContain("list keys with `svc audit keys list`");
    expect(msg("svc y", { code: "not_found", detail: "no route /api/v1/x" }, 404)).toContain("does not serve GET /api/v1/x");
  });

  test("validation names the flag; rate limits say how long to wait; a detail with its own next step is kept", () => {
    expect(msg("svc bot init", { code: "validation_failed", detail: "the installation name is empty", errors: [{ path: "/name" }] }, 422)).toBe(
      "svc bot init: the installation name is empty; fix --name and run it again (validation_failed)",
    );
    expect(msg("svc bot list", { code: "rate_limited", detail: "too many requests", retry_after_seconds: 7 }, 429)).toContain("; wait 7 seconds and run it again (rate_limited)");
    expect(msg("svc directory-sync report", { code: "directory_sync_not_configured", detail: "directory sync is not configured; run `svc directory-sync set` first" }, 409)).toBe(
      "svc directory-sync report: directory sync is not configured; run `svc directory-sync set` first (directory_sync_not_configured)",
    );
    expect(msg("svc bot init", { code: "workspace_not_found", detail: 'workspace "nope" not found in this organization' }, 404)).toContain("; check --workspace");
    expect(buildQuery({})).toBe("");
  });
});

test("a refused request field is named by the flag that set it, never by a flag that does not exist", () => {
  expect(flagOfField("svc model-profiles create", "/display_name")).toBe("--display-name");
  expect(flagOfField("svc policies create", "/src")).toBe("--src-pattern");
  expect(flagOfField("svc policies create", "/dst")).toBe("--dst-pattern");
  expect(flagOfField("svc policies create", "/agent_id")).toBe("--agent-id");
  expect(flagOfField("svc bot init", "/agent_id")).toBe("--agent");
  expect(flagOfField("svc model-profiles assign", "/agent_id")).toBe("--agent");
  expect(flagOfField("svc directory-sync set", "/interval_seconds")).toBe("--interval");
  expect(flagOfField("svc directory-sync set", "/client_secret")).toBeNull();
  expect(flagOfField("svc model-profiles create", "/api_key_sealed")).toBeNull();
  expect(flagOfField("svc x", "/items/0")).toBeNull();
  expect(
    problemMessage(
      "svc directory-sync set",
      { code: "validation_failed", detail: "interval_seconds must be a whole number from 60 to 604800", errors: [{ path: "/interval_seconds" }] },
      422,
      "PUT /api/v1/x",
    ),
  ).toBe("svc directory-sync set: interval_seconds must be a whole number from 60 to 604800; fix --interval and run it again (validation_failed)");
});
