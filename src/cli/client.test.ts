import { afterAll, expect, test } from "bun:test";
import { AdminClient, ApiError, buildQuery, problemMessage } from "./client.ts";

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/api/v1/problem") {
      return new Response(JSON.stringify({ type: "urn:svc:problem:invalid_platform", title: "invalid platform", status: 422, code: "invalid_platform", detail: 'platform "slack" is not supported; use chatui' }), {
        status: 422,
        headers: { "content-type": "application/problem+json" },
      });
    }
    if (path === "/api/v1/plain") return new Response("oops", { status: 502 });
    if (path === "/api/v1/ok") return Response.json({ auth: req.headers.get("authorization"), q: new URL(req.url).search });
    return new Response(null, { status: 204 });
  },
});
afterAll(() => server.stop(true));
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

test("a non-problem error still says which call failed", async () => {
  const err = await new AdminClient(base, null, "svc x").json("GET", "/plain").catch((e) => e);
  expect(err.message).toBe("svc x: the control plane answered HTTP 502 to GET /api/v1/plain (http_502)");
});

test("bearer token and query are sent; 204 gives null", async () => {
  const c = new AdminClient(base, "svc_at_x", "svc x");
  expect(await c.json("GET", "/ok", { query: { workspace: "default", agent_id: undefined } })).toEqual({ auth: "Bearer svc_at_x", q: "?workspace=default" });
  expect(await c.json("DELETE", "/none")).toBeNull();
});

test("unreachable control plane is named", async () => {
  const err = await new AdminClient("http://127.0.0.1:1", null, "svc x").json("GET", "/me").catch((e) => e);
  expect(err.message).toMatch(/^svc x: cannot reach the control plane at http:\/\/127\.0\.0\.1:1 .*\(unreachable\)$/);
});

test("unauthorized adds the next step", () => {
  expect(problemMessage("svc bot list", { code: "unauthorized", detail: "token revoked." }, 401, "GET /x")).toBe("svc bot list: token revoked; sign in again with `svc login` (unauthorized)");
  expect(problemMessage("svc y", { code: "not_found", detail: "no route /api/v1/x" }, 404, "GET /api/v1/x")).toContain("does not serve GET /api/v1/x");
  expect(buildQuery({})).toBe("");
});
