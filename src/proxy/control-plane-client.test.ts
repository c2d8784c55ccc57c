import { describe, expect, test } from "bun:test";
import { ControlPlaneClient, ControlPlaneError } from "./control-plane-client.ts";

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
