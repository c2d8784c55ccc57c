// Every route with a path parameter, API and console, is called with escaped, malformed and
// action-style (`{id}:action`) segments: the answer is a 4xx (problem+json on the API), never a
// 500. The routes are read from the app itself, so a new route is covered without listing it.
import { expect, test } from "bun:test";
import { signInSession } from "../auth/test-fixtures.ts";
import { testControlPlane } from "../testing.ts";

/** Raw path segments, as a client may send them (not encoded again here). */
const SEGMENTS = [
  "%",
  "%25",
  "%2",
  "%E0%A4%A",
  "%C3%28",
  "%00",
  "%0A",
  "%2F",
  "%5C",
  "%3A",
  "key_x%25:disable",
  "%25:disable",
  "%:disable",
  "key_x:%25",
  "key_x%3Adisable",
  ":disable",
  "a:b:c",
  "..",
  "%2E%2E",
  "x".repeat(400),
];

type Route = { method: string; path: string };

function routesOf(app: { routes: Array<{ method: string; path: string }> }): Route[] {
  const seen = new Set<string>();
  const out: Route[] = [];
  for (const r of app.routes) {
    if (!/\/:[A-Za-z_]+/.test(r.path)) continue;
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ method: r.method, path: r.path });
  }
  return out;
}

test("escaped and malformed path segments never give a 500", async () => {
  const cp = await testControlPlane();
  const session = await signInSession(cp);
  const routes = routesOf(cp.app as never);
  // Guard against the sweep silently covering nothing.
  expect(routes.some((r) => r.path === "/api/v1/organizations/:org/audit-encryption-keys/:keyAction")).toBe(true);
  expect(routes.some((r) => r.path === "/claim/:token")).toBe(true);
  const failures: string[] = [];
  for (const route of routes) {
    for (const segment of SEGMENTS) {
      // Every parameter but the organization gets the segment; the organization stays real so
      // the request reaches the handler (it is swept too, with the real id elsewhere).
      const paths = [route.path.replace(/:([A-Za-z_]+)/g, (_, name) => (name === "org" ? cp.orgId : segment))];
      if (route.path.includes(":org")) paths.push(route.path.replace(/:([A-Za-z_]+)/g, () => segment));
      for (const path of paths) {
        const api = path.startsWith("/api/");
        const headers: Record<string, string> = api
          ? { authorization: `Bearer ${cp.adminToken}`, "content-type": "application/json" }
          : { cookie: session.cookie, "content-type": "application/x-www-form-urlencoded" };
        const body = route.method === "GET" || route.method === "HEAD" ? undefined : api ? "{}" : new URLSearchParams({ _csrf: session.csrf, action: "link" }).toString();
        const res = await cp.app.handle(new Request(`http://localhost${path}`, { method: route.method, headers, body }));
        const type = res.headers.get("content-type") ?? "";
        if (res.status >= 500) failures.push(`${route.method} ${path} → ${res.status} ${(await res.text()).slice(0, 160)}`);
        else if (api && res.status >= 400 && !type.startsWith("application/problem+json")) failures.push(`${route.method} ${path} → ${res.status} ${type}`);
      }
    }
  }
  expect(failures).toEqual([]);
});

test("POST …/audit-encryption-keys/{id}:disable with an escaped id is a 404 problem, not a 500", async () => {
  const cp = await testControlPlane();
  for (const segment of ["key_x%25:disable", "%25", "%25:disable", "%:disable", "%E0%A4%A:disable"]) {
    const res = await cp.call("POST", cp.org(`/audit-encryption-keys/${segment}`));
    expect([segment, res.status, res.headers.get("content-type")]).toEqual([segment, 404, "application/problem+json"]);
    expect(res.json.code).toBe("not_found");
  }
});
