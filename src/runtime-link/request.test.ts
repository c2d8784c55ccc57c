import { afterAll, describe, expect, test } from "bun:test";
import { ERROR_BODY_LIMIT } from "../contract/error-body.ts";
import { JsonText, type RuntimeLink, callRuntimeApi, retryableStatus, runtimeUrl } from "./request.ts";

type Seen = { method: string; path: string; headers: Record<string, string>; body: string };

/** A real HTTP server standing in for the control plane: records what arrived, answers as told. */
function server(answer: (req: Request) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const s = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const u = new URL(req.url);
      seen.push({ method: req.method, path: u.pathname + u.search, headers: req.headers.toJSON(), body: await req.text() });
      return answer(req);
    },
  });
  servers.push(s);
  return { seen, base: `http://127.0.0.1:${s.port}` };
}
const servers: ReturnType<typeof Bun.serve>[] = [];
afterAll(async () => {
  await Promise.all(servers.map(async (s) => s.stop(true)));
});

const link = (baseUrl: string, extra: Partial<RuntimeLink> = {}): RuntimeLink => ({ baseUrl, token: "svc_rt_x", egress: { noProxy: [] }, userAgent: "svc-test/1", ...extra });

describe("a runtime API call", () => {
  test("goes to {base}/api/v1/runtime/<path> with the bearer token, JSON in and out", async () => {
    const cp = server(() => Response.json({ ok: true }));
    const r = await callRuntimeApi(link(`${cp.base}//`), { method: "PUT", path: "/tools?x=1", body: { a: 1 }, headers: { "x-svc-replica": "rep_1" }, timeoutMs: 2000 });
    expect(r.ok).toBe(true);
    expect(r.url.href).toBe(`${cp.base}/api/v1/runtime/tools?x=1`);
    expect(r.proxy).toBeNull();
    const got = cp.seen[0]!;
    expect(got).toMatchObject({ method: "PUT", path: "/api/v1/runtime/tools?x=1", body: '{"a":1}' });
    expect(got.headers).toMatchObject({ authorization: "Bearer svc_rt_x", accept: "application/json", "content-type": "application/json", "user-agent": "svc-test/1", "x-svc-replica": "rep_1" });
  });

  test("JSON text is sent as is; no body, no content type", async () => {
    const cp = server(() => new Response(null, { status: 204 }));
    await callRuntimeApi(link(cp.base), { method: "POST", path: "/audit-records", body: new JsonText('{"records":[ {"b":2,"a":1} ]}'), timeoutMs: 2000 });
    await callRuntimeApi(link(cp.base), { method: "GET", path: "/limits", timeoutMs: 2000 });
    expect(cp.seen[0]!.body).toBe('{"records":[ {"b":2,"a":1} ]}');
    expect(cp.seen[1]!.headers["content-type"]).toBeUndefined();
  });

  test("a redirect is not followed: the token reaches nothing but the configured URL", async () => {
    const elsewhere = server(() => Response.json({}));
    const cp = server(() => new Response(null, { status: 308, headers: { location: `${elsewhere.base}/api/v1/runtime/tools` } }));
    const r = await callRuntimeApi(link(cp.base), { method: "PUT", path: "/tools", body: {}, timeoutMs: 2000 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.failure).toEqual({ kind: "redirect", status: 308, location: `${elsewhere.base}/api/v1/runtime/tools` });
    expect(elsewhere.seen).toEqual([]);
  });

  test("a 304 is an answer, not a failure", async () => {
    const cp = server(() => new Response(null, { status: 304 }));
    const r = await callRuntimeApi(link(cp.base), { method: "GET", path: "/policy-bundle", timeoutMs: 2000 });
    expect(r.ok && r.res.status).toBe(304);
  });

  test("an error answer gives its problem+json; a body that is not a JSON object gives none", async () => {
    const bodies = [Response.json({ code: "tool_conflict", detail: "taken" }, { status: 409 }), new Response("<html>bad gateway</html>", { status: 502 }), Response.json([1], { status: 400 })];
    const cp = server(() => bodies.shift()!);
    const failures = [];
    for (let i = 0; i < 3; i++) {
      const r = await callRuntimeApi(link(cp.base), { method: "PUT", path: "/tools", body: {}, timeoutMs: 2000 });
      failures.push(r.ok ? null : r.failure);
    }
    expect(failures).toEqual([
      { kind: "status", status: 409, problem: { code: "tool_conflict", detail: "taken" }, text: '{"code":"tool_conflict","detail":"taken"}', cut: false },
      { kind: "status", status: 502, problem: null, text: "<html>bad gateway</html>", cut: false },
      { kind: "status", status: 400, problem: [1] as never, text: "[1]", cut: false },
    ]);
  });

  test("an endless error body is read only up to the limit, and its problem is not trusted", async () => {
    // A JSON object then endless blanks: what was read parses, but what follows is unknown.
    const head = new TextEncoder().encode('{"code":"installation_deleted"}');
    const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
    let pulled = 0;
    const next = () => (pulled === 0 ? head : chunk);
    const body = new ReadableStream<Uint8Array>({ pull: (c) => void (pulled < 64 * 1024 * 1024 ? (c.enqueue(next()), (pulled += next().byteLength)) : c.close()) }, { highWaterMark: 0 });
    const huge = (async () => new Response(body, { status: 500 })) as unknown as typeof fetch;
    const r = await callRuntimeApi(link("https://cp.example.com", { fetch: huge }), { method: "PUT", path: "/tools", body: {}, timeoutMs: 2000 });
    expect(r.ok).toBe(false);
    if (!r.ok && r.failure.kind === "status") {
      expect(r.failure.cut).toBe(true);
      expect(r.failure.problem).toBeNull();
      expect(r.failure.text.length).toBe(ERROR_BODY_LIMIT);
    } else throw new Error("expected a status failure");
    expect(pulled).toBeLessThanOrEqual(ERROR_BODY_LIMIT + 2 * chunk.byteLength);
  });

  test("the egress proxy carries the call unless NO_PROXY lists the host; the CA goes with it; a throw is a network failure", async () => {
    const inits: (RequestInit & { proxy?: string; tls?: { ca?: string[] } })[] = [];
    const refusing = (async (_url: string, init: RequestInit) => {
      inits.push(init);
      throw new TypeError("ECONNREFUSED");
    }) as unknown as typeof fetch;
    const egress = { proxy: "http://alice:s3cret@proxy.corp:3128", noProxy: ["direct.example.com"] };
    const via = await callRuntimeApi(link("https://cp.example.com", { fetch: refusing, egress, ca: ["PEM"] }), { method: "GET", path: "/limits", timeoutMs: 2000 });
    const direct = await callRuntimeApi(link("https://direct.example.com", { fetch: refusing, egress }), { method: "GET", path: "/limits", timeoutMs: 2000 });
    expect(via.proxy).toBe(egress.proxy);
    expect(direct.proxy).toBeNull();
    expect(inits.map((i) => [i.proxy, i.tls?.ca, i.redirect])).toEqual([
      [egress.proxy, ["PEM"], "manual"],
      [undefined, undefined, "manual"],
    ]);
    expect(via.ok ? null : via.failure.kind).toBe("network");
  });

  test("retryable statuses: 408, 429, 5xx", () => {
    expect([400, 401, 403, 404, 408, 409, 422, 429, 500, 503].filter(retryableStatus)).toEqual([408, 429, 500, 503]);
    expect(runtimeUrl("https://cp.example.com/base/", "/tools").href).toBe("https://cp.example.com/base/api/v1/runtime/tools");
  });
});
