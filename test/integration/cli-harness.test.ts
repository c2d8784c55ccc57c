// svc harness sync against a local double of Open WebUI's functions API: read-only, drift
// printed and exit 1, in sync exit 0, missing token refused.
import { afterAll, describe, expect, test } from "bun:test";
import { startChatuiFunctionsDouble } from "../support/chatui-functions-double.ts";
import { svc } from "./cli-support.ts";

const TOKEN = "owui-admin-jwt";
const double = startChatuiFunctionsDouble({ token: TOKEN });
afterAll(() => double.stop());

const run = async (extra: string[] = [], token: string | null = TOKEN) =>
  svc(null, ["harness", "sync", "--harness", "chatui", "--url", `${double.url}/`, ...extra], { env: { CHATUI_ADMIN_TOKEN: token ?? undefined } });

const pipe = { id: "svc", type: "pipe", is_active: true, is_global: false } as const;
const guard = { id: "svc_guard", type: "filter", is_active: true, is_global: true } as const;

test("in sync: exit 0, and nothing but GETs were sent", async () => {
  double.functions = [pipe, guard, { id: "other", type: "action", is_active: false, is_global: false }];
  double.requests.length = 0;
  const r = await run();
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("In sync");
  expect(double.requests.length).toBeGreaterThan(0);
  expect(double.requests.every((q) => q.method === "GET" && (q.path.startsWith("/api/v1/functions") || q.path === "/api/v1/configs/tool_servers") && q.authorization === `Bearer ${TOKEN}`)).toBe(true);
});

test("nothing installed: both drifts printed, exit 1, read-only", async () => {
  double.functions = [];
  double.requests.length = 0;
  const r = await run();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain("drift: Pipe svc is not installed");
  expect(r.stdout).toContain("drift: filter svc_guard is not installed");
  expect(r.stderr).toContain("2 drift(s)");
  expect(double.requests.every((q) => q.method === "GET")).toBe(true);
});

test("inactive pipe, inactive and non-global guard: each drift printed", async () => {
  double.functions = [
    { ...pipe, is_active: false },
    { ...guard, is_active: false, is_global: false },
  ];
  const r = await run();
  expect(r.code).toBe(1);
  expect(r.stdout.trim().split("\n")).toEqual([
    "drift: Pipe svc is installed but inactive",
    "drift: filter svc_guard is installed but inactive",
    "drift: filter svc_guard is not global, so it does not guard every model",
  ]);
});

test("guard not global alone is drift", async () => {
  double.functions = [pipe, { ...guard, is_global: false }];
  const r = await run(["--json"]);
  expect(r.code).toBe(1);
  const body = JSON.parse(r.stdout);
  expect(body.in_sync).toBe(false);
  expect(body.drifts).toEqual([{ function: "svc_guard", problem: "not_global", message: "filter svc_guard is not global, so it does not guard every model" }]);
});

test("--json in sync", async () => {
  double.functions = [pipe, guard];
  const r = await run(["--json"]);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ harness: "chatui", in_sync: true, drifts: [] });
});

test("missing CHATUI_ADMIN_TOKEN is a clear error, and nothing is requested", async () => {
  double.requests.length = 0;
  const r = await run([], null);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("CHATUI_ADMIN_TOKEN is not set");
  expect(double.requests.length).toBe(0);
});

test("a refused token is named", async () => {
  const r = await run([], "wrong");
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("refused CHATUI_ADMIN_TOKEN (HTTP 401)");
});

describe("--url gets the same rule as svc login --url: CHATUI_ADMIN_TOKEN never goes out in clear or to a mangled URL", () => {
  /** A usage error (exit 2) naming --url, with nothing sent to the front end. */
  async function refused(url: string, says: string) {
    double.requests.length = 0;
    const r = await svc(null, ["harness", "sync", "--harness", "chatui", "--url", url], { env: { CHATUI_ADMIN_TOKEN: TOKEN } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    const [line, usage] = r.stderr.split("\n");
    expect(line).toStartWith(`svc harness sync: --url "`);
    expect(line).toContain(says);
    expect(usage).toStartWith("Usage: svc harness sync ");
    expect(double.requests.length).toBe(0);
    return line!;
  }

  test("plain http to a host other than localhost", async () => {
    expect(await refused("http://chat.example.com", "uses plain http")).toBe(
      'svc harness sync: --url "http://chat.example.com" uses plain http, which would send CHATUI_ADMIN_TOKEN in clear; use https (plain http is accepted only for localhost)',
    );
  });

  test("a query string, a fragment or credentials are named, not dropped", async () => {
    expect(await refused(`${double.url}/?tab=functions`, 'must not have a query string (the part from "?")')).toEndWith(`; pass only the base URL, e.g. ${double.url}`);
    await refused(`${double.url}/#admin`, 'must not have a fragment (the part from "#")');
    const line = await refused(double.url.replace("http://", "http://admin:s3cret@"), "must not carry credentials");
    expect(line).not.toContain("s3cret");
  });

  test("a redirect is not followed, so the token goes nowhere else", async () => {
    const redirector = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: 302, headers: { location: `${double.url}/api/v1/functions/` } }) });
    try {
      double.requests.length = 0;
      const r = await svc(null, ["harness", "sync", "--harness", "chatui", "--url", `http://127.0.0.1:${redirector.port}`], { env: { CHATUI_ADMIN_TOKEN: TOKEN } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`answered HTTP 302, a redirect to ${double.url}/api/v1/functions/; redirects are not followed`);
      expect(double.requests.length).toBe(0);
    } finally {
      void redirector.stop(true);
    }
  });
});

test("tool servers: svc's MCP connection is in sync; one added by hand is drift (exit 1); none listed by an older front end is fine", async () => {
  double.functions = [pipe, guard];
  const svcMcp = { type: "mcp", url: "http://127.0.0.1:7391/mcp", auth_type: "session", config: { enable: true }, info: { id: "svc", name: "svc" } };
  double.toolServers = [svcMcp];
  expect((await run()).code).toBe(0);
  double.toolServers = [svcMcp, { type: "mcp", url: "https://mcp.example.com/mcp", auth_type: "bearer", config: { enable: true }, info: { id: "github" } }];
  const r = await run();
  expect(r.code).toBe(1);
  expect(r.stdout).toContain('drift: tool server "github" (mcp https://mcp.example.com/mcp) was added by hand; svc never serves it');
  double.toolServers = [{ ...svcMcp, auth_type: "bearer" }];
  const changed = await run(["--json"]);
  expect(changed.code).toBe(1);
  expect(JSON.parse(changed.stdout).drifts[0]).toMatchObject({ problem: "changed" });
  double.toolServers = null;
  expect((await run()).code).toBe(0);
  double.toolServers = [];
});
