import { describe, expect, test } from "bun:test";
import { USER_HEADERS } from "../../contract/local-api.ts";
import type { Logger } from "../../log/index.ts";
import { createLocalApi, type LocalApiDeps, routeRequests } from "./local-api.ts";
import { bearerMatches, userFromHeaders } from "./request-user.ts";
import { ProxyStatus } from "../policy/status.ts";

describe("userFromHeaders", () => {
  test("no user id means no session user", () => {
    expect(userFromHeaders(new Headers())).toBeNull();
  });

  test("percent-encoded email and name are decoded", () => {
    const h = new Headers({ [USER_HEADERS.id]: "u-1", [USER_HEADERS.email]: "ren%C3%A9%40example.com", [USER_HEADERS.name]: "Ren%C3%A9%20M%C3%BCller" });
    expect(userFromHeaders(h)).toEqual({ id: "u-1", email: "rené@example.com", name: "René Müller" });
  });

  test("an over-long id, email or name is refused, never cut or dropped", () => {
    expect(() => userFromHeaders(new Headers({ "x-svc-user-id": "u".repeat(201) }))).toThrow("x-svc-user-id is longer than 200 characters");
    expect(() => userFromHeaders(new Headers({ "x-svc-user-id": "u1", "x-svc-user-email": `${"e".repeat(320)}@x` }))).toThrow("x-svc-user-email is longer than 320 characters");
    expect(userFromHeaders(new Headers({ "x-svc-user-id": "u".repeat(200) }))?.id).toHaveLength(200);
  });

  test("a value that is not valid percent-encoding is kept as sent", () => {
    const h = new Headers({ [USER_HEADERS.id]: "u-1", [USER_HEADERS.name]: "100%" });
    expect(userFromHeaders(h)?.name).toBe("100%");
  });
});

describe("bearerMatches", () => {
  test("only the exact runtime token matches", () => {
    expect(bearerMatches("Bearer svc_rt_abc", "svc_rt_abc")).toBe(true);
    expect(bearerMatches("Bearer svc_rt_abd", "svc_rt_abc")).toBe(false);
    expect(bearerMatches("svc_rt_abc", "svc_rt_abc")).toBe(false);
    expect(bearerMatches(null, "svc_rt_abc")).toBe(false);
  });
});

describe("routing", () => {
  const quiet: Logger = { info() {}, warn() {}, error() {} };
  // Only routing is exercised: nothing here reaches the recorder, claims or credentials.
  const api = createLocalApi({ token: "svc_rt_abc", status: new ProxyStatus(), spoolDepth: () => 0, log: quiet, modelCa: null } as unknown as LocalApiDeps);
  const ask = async (method: string, path: string, token: string | null = "svc_rt_abc") =>
    api(new Request(`http://localhost${path}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} }));

  test("a known path with another method is 405 with Allow, in the local API's error format", async () => {
    for (const [method, path, allow] of [
      ["GET", "/v1/chat/completions", "POST"],
      ["DELETE", "/v1/tools/decide", "POST"],
      ["GET", "/v1/tools/outcome", "POST"],
      ["POST", "/v1/models", "GET, HEAD"],
      ["PUT", "/v1/policy", "GET, HEAD"],
    ] as const) {
      const r = await ask(method, path);
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe(allow);
      expect(await r.json()).toEqual({ error: { message: `${method} is not allowed on ${path}; allowed: ${allow}`, type: "invalid_request_error", code: "method_not_allowed" } });
    }
  });

  test("/readyz needs no token for its 405 either; other paths still ask for the token first", async () => {
    const r = await ask("POST", "/readyz", null);
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD");
    expect((await ask("GET", "/readyz", null)).status).toBe(503); // starting
    expect((await ask("HEAD", "/readyz", null)).status).toBe(503); // health checkers' HEAD is a GET
    expect((await ask("GET", "/v1/chat/completions", null)).status).toBe(401);
  });

  test("an over-long user header is 400 invalid_user, not a call without a session user", async () => {
    const r = await api(new Request("http://localhost/v1/models", { headers: { authorization: "Bearer svc_rt_abc", "x-svc-user-id": "u".repeat(201) } }));
    expect(r.status).toBe(400);
    expect((await r.json()).error).toEqual({ message: "x-svc-user-id is longer than 200 characters", type: "invalid_request_error", code: "invalid_user" });
  });

  test("the front end's credential of this boot is accepted like the runtime token; nothing else is", async () => {
    const both = createLocalApi({ token: "svc_rt_abc", frontendToken: "svc_fe_boot", status: new ProxyStatus(), spoolDepth: () => 0, log: quiet, modelCa: null } as unknown as LocalApiDeps);
    const get = async (token: string | null) => (await both(new Request("http://localhost/v1/policy", { headers: token ? { authorization: `Bearer ${token}` } : {} }))).status;
    expect(await get("svc_rt_abc")).toBe(200);
    expect(await get("svc_fe_boot")).toBe(200);
    expect(await get("svc_fe_other")).toBe(401);
    expect(await get(null)).toBe(401);
    // without one configured, only the runtime token
    expect((await ask("GET", "/v1/policy", "svc_fe_boot")).status).toBe(401);
  });

  test("a route of the supervisor's refuses the front end's credential with 403", async () => {
    const route = { method: "PUT" as const, path: "/v1/mcp/booted", runtimeTokenOnly: true, handler: async () => Response.json({ ok: true }) };
    const api2 = routeRequests({ runtime: "svc_rt_abc", frontend: "svc_fe_boot" }, [route], quiet);
    const put = async (token: string) => api2(new Request("http://localhost/v1/mcp/booted", { method: "PUT", headers: { authorization: `Bearer ${token}` } }));
    expect((await put("svc_rt_abc")).status).toBe(200);
    const refused = await put("svc_fe_boot");
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe("forbidden");
    expect((await put("svc_fe_other")).status).toBe(401);
  });

  test("an unknown path is 404", async () => {
    const r = await ask("GET", "/v1/nope");
    expect(r.status).toBe(404);
    expect((await r.json()).error.code).toBe("not_found");
  });
});
