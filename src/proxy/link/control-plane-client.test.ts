import { describe, expect, test } from "bun:test";
import { ControlPlaneClient, ControlPlaneError } from "./control-plane-client.ts";
import { ERROR_BODY_LIMIT } from "../../contract/error-body.ts";

const PROXY = "http://alice:s3cret@127.0.0.1:1";
const client = (fetchImpl: typeof fetch, noProxy: string[] = []) =>
  new ControlPlaneClient({ baseUrl: "https://cp.example.com", token: "svc_rt_x", version: "test", egressProxy: PROXY, noProxy, ca: null, timeoutMs: 2000 }, fetchImpl);

async function failure(p: Promise<unknown>): Promise<ControlPlaneError> {
  try {
    await p;
  } catch (e) {
    return e as ControlPlaneError;
  }
  throw new Error("expected a failure");
}

describe("the egress proxy in errors", () => {
  test("an unreachable egress proxy is named with its password redacted", async () => {
    const e = await failure(client(fetch).heartbeat({ replica_id: "rep_1", state: "ready", policy_revision: 1, tool_count: 0, version: "t", spool_depth: 0, last_success: null }));
    expect(e).toBeInstanceOf(ControlPlaneError);
    expect(e.status).toBeNull();
    expect(e.message).toContain("through the egress proxy http://alice:***@127.0.0.1:1");
    expect(e.message).not.toContain("s3cret");
  });

  test("a fetch error or an answer that quotes the proxy URL is redacted too", async () => {
    const throwing = (async () => {
      throw new Error(`cannot connect to ${PROXY}`);
    }) as unknown as typeof fetch;
    const e = await failure(client(throwing).createClaim({ remote_user_id: "fe-1" }));
    expect(e.message).not.toContain("s3cret");
    expect(e.message).toContain("alice:***@127.0.0.1:1");
    const answering = (async () => new Response(`bad gateway: upstream via ${PROXY}`, { status: 502 })) as unknown as typeof fetch;
    const e2 = await failure(client(answering).createClaim({ remote_user_id: "fe-1" }));
    expect(e2.status).toBe(502);
    expect(e2.message).not.toContain("s3cret");
  });

  test("a host in NO_PROXY goes direct: the proxy is neither used nor named", async () => {
    let used: unknown = "unset";
    const direct = (async (_url: string, init: { proxy?: string }) => {
      used = init.proxy;
      throw new Error("refused");
    }) as unknown as typeof fetch;
    const e = await failure(client(direct, ["cp.example.com"]).createClaim({ remote_user_id: "fe-1" }));
    expect(used).toBeUndefined();
    expect(e.message).not.toContain("egress proxy");
  });
});

describe("error answers", () => {
  test("a huge error body is read only up to the limit", async () => {
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({ pull: (c) => void (pulled < 64 * 1024 * 1024 ? ((pulled += chunk.byteLength), c.enqueue(chunk)) : c.close()) }, { highWaterMark: 0 });
    const huge = (async () => new Response(body, { status: 502 })) as unknown as typeof fetch;
    const e = await failure(client(huge).createClaim({ remote_user_id: "fe-1" }));
    expect(e.status).toBe(502);
    expect(e.message).toMatch(/answered 502: x{300}$/);
    expect(pulled).toBeLessThanOrEqual(ERROR_BODY_LIMIT + 2 * chunk.byteLength);
  });

  test("an error page cut inside a URL's password does not leak its start", async () => {
    // the first 300 characters end inside "alice:s3cret"
    const page = `${"-".repeat(300 - "http://alice:s3".length)}${PROXY}/x`;
    const answering = (async () => new Response(page, { status: 502 })) as unknown as typeof fetch;
    const e = await failure(client(answering).createClaim({ remote_user_id: "fe-1" }));
    expect(e.message).not.toContain("alice:s3");
    expect(e.message).toContain("http://alice:*");
  });

  test("a problem+json answer gives its code and detail", async () => {
    const answering = (async () => Response.json({ code: "not_found", detail: "no such installation" }, { status: 404 })) as unknown as typeof fetch;
    const e = await failure(client(answering).createClaim({ remote_user_id: "fe-1" }));
    expect(e).toMatchObject({ status: 404, code: "not_found" });
    expect(e.message).toEndWith("answered 404 not_found: no such installation");
  });

  test("a redirect is not followed, so the runtime token goes nowhere else; the error names it", async () => {
    const elsewhere: string[] = [];
    const target = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (elsewhere.push(req.headers.get("authorization") ?? ""), new Response("{}")) });
    const cp = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${target.port}/api/v1/runtime/policy-bundle` } }) });
    try {
      const direct = new ControlPlaneClient({ baseUrl: `http://127.0.0.1:${cp.port}`, token: "svc_rt_x", version: "test", egressProxy: null, noProxy: [], ca: null, timeoutMs: 2000 });
      const e = await failure(direct.fetchBundle(2, null));
      expect(e).toMatchObject({ status: 307 });
      expect(e.message).toContain(`answered 307, a redirect to http://127.0.0.1:${target.port}/api/v1/runtime/policy-bundle, not followed`);
      expect(elsewhere).toEqual([]);
    } finally {
      void cp.stop(true);
      void target.stop(true);
    }
  });
});
