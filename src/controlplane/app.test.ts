import { expect, test } from "bun:test";
import { OPENAPI_PATH } from "./app.ts";
import { testControlPlane } from "./testing.ts";

test("the OpenAPI document covers every API route and no console page", async () => {
  const cp = await testControlPlane();
  const doc = (await cp.call("GET", OPENAPI_PATH, { token: null })).json as { paths: Record<string, Record<string, unknown>> };
  const documented = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));
  const routes = (cp.app as unknown as { routes: { method: string; path: string }[] }).routes
    .filter((r) => r.path.startsWith("/api/v1/") && r.path !== OPENAPI_PATH && !r.path.startsWith("/api/v1/openapi"))
    .map((r) => `${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`);
  expect(routes.length).toBeGreaterThan(60);
  const missing = routes.filter((r) => !documented.has(r));
  expect(missing).toEqual([]);
  expect(Object.keys(doc.paths).filter((p) => !p.startsWith("/api/v1/"))).toEqual([]);
});

test("unknown routes answer problem+json 404", async () => {
  const cp = await testControlPlane();
  const r = await cp.call("GET", "/api/v1/nope");
  expect(r.status).toBe(404);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  expect(r.json.code).toBe("not_found");
});

test("/readyz is 200 while the store answers and 503 store_unavailable once it does not", async () => {
  const cp = await testControlPlane();
  expect((await cp.call("GET", "/readyz", { token: null })).json).toEqual({ ok: true });
  await cp.store.close();
  const down = await cp.call("GET", "/readyz", { token: null });
  expect(down.status).toBe(503);
  expect(down.json.code).toBe("store_unavailable");
  expect((await cp.call("GET", "/healthz", { token: null })).status).toBe(200);
});
