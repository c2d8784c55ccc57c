import { describe, expect, test } from "bun:test";
import type { Logger } from "../log/index.ts";
import { bypasses, egressFromEnv, proxyFor } from "./egress.ts";
import { SYNC_ATTEMPTS, SYNC_DELAYS_MS, ToolSyncError, explainNetworkError, explainStatus, syncTools } from "./sync.ts";

const manifest = { tools: [{ name: "crm.update", access: "write" as const, required_capabilities: [] }] };

function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (e: string) => lines.push(e);
  return { lines, info: push, warn: push, error: push };
}

function fakeFetch(statuses: (number | "network")[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fn = (async (url: URL, init: RequestInit) => {
    calls.push({ url: String(url), init });
    const s = statuses[Math.min(calls.length - 1, statuses.length - 1)]!;
    if (s === "network") throw new TypeError("ECONNREFUSED");
    if (s === 200) return Response.json({ added: 1, removed: 2, unchanged: 3, updated: 4, tool_count: 1 });
    if (s === 409) return Response.json({ code: "tool_conflict", detail: 'tool "crm.update" is already registered in workspace default by installation inst_X (helpdesk)', tool: "crm.update", holder: "installation inst_X" }, { status: 409 });
    return Response.json({ code: "x", detail: `status ${s}` }, { status: s });
  }) as unknown as typeof fetch;
  return { fn, calls };
}

async function run(statuses: (number | "network")[], base = "https://svc.example.com") {
  const log = capture();
  const sleeps: number[] = [];
  const f = fakeFetch(statuses);
  let error: ToolSyncError | undefined;
  let result;
  try {
    result = await syncTools({ controlPlaneUrl: base, token: "svc_rt_1", manifest, egress: { noProxy: [] }, log, fetch: f.fn, sleep: async (ms) => void sleeps.push(ms) });
  } catch (e) {
    error = e as ToolSyncError;
  }
  return { log, sleeps, calls: f.calls, error, result };
}

describe("tool sync", () => {
  test("success logs the spec's line with the counts", async () => {
    const r = await run([200]);
    expect(r.result).toEqual({ added: 1, removed: 2, unchanged: 3, updated: 4, tool_count: 1 });
    expect(r.log.lines).toEqual(["tool sync: registered 1 tool(s) at /api/v1/runtime/tools (added 1, removed 2, unchanged 3, updated 4)"]);
    expect(r.calls[0]!.url).toBe("https://svc.example.com/api/v1/runtime/tools");
    expect(r.calls[0]!.init.method).toBe("PUT");
    expect((r.calls[0]!.init.headers as Record<string, string>).authorization).toBe("Bearer svc_rt_1");
    expect(JSON.parse(r.calls[0]!.init.body as string)).toEqual(manifest);
  });

  test("5 attempts with 1+2+4+8 s between them, then the spec's refusal", async () => {
    const r = await run([503]);
    expect(r.calls).toHaveLength(SYNC_ATTEMPTS);
    expect(r.sleeps).toEqual([...SYNC_DELAYS_MS]);
    expect(r.error?.attempts).toBe(5);
    expect(r.error?.message).toBe("registering the packs' tools failed; refusing to start: HTTP 503: status 503 (5 attempts)");
    expect(r.log.lines.filter((l) => l.startsWith("tool sync: attempt "))).toHaveLength(5);
  });

  test("408, 429 and network errors are retried; success on a later attempt", async () => {
    const r = await run([429, 408, "network", 200]);
    expect(r.calls).toHaveLength(4);
    expect(r.result?.tool_count).toBe(1);
  });

  test("401 fails at once with the rotation hint", async () => {
    const r = await run([401]);
    expect(r.calls).toHaveLength(1);
    expect(r.error?.message).toContain("HTTP 401: the runtime token (SVC_RUNTIME_TOKEN) is wrong or was rotated");
    expect(r.error?.message).toContain("svc bot credential");
    expect(r.error?.message).toContain("--rotate");
    expect(r.error?.message).toEndWith("(1 attempt)");
  });

  test("404 fails at once and points at an /api/v1 suffix", async () => {
    const r = await run([404], "https://svc.example.com/api/v1");
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]!.url).toBe("https://svc.example.com/api/v1/api/v1/runtime/tools");
    expect(r.error?.message).toContain("must be the base URL with no /api/v1 suffix");
    expect(r.error?.message).toContain("it ends in /api/v1: remove that suffix");
  });

  test("409 names the tool and its holder from the problem detail", async () => {
    const r = await run([409]);
    expect(r.calls).toHaveLength(1);
    expect(r.error?.message).toContain('tool "crm.update" held by installation inst_X');
    expect(r.error?.message).toContain("already registered in workspace default by installation inst_X (helpdesk)");
  });

  test("other 4xx are not retried", async () => {
    const r = await run([422]);
    expect(r.calls).toHaveLength(1);
    expect(r.error?.message).toContain("HTTP 422: status 422");
  });

  test("network errors carry the egress hint", async () => {
    const r = await run(["network"]);
    expect(r.error?.message).toContain("cannot reach svc.example.com");
    expect(r.error?.message).toContain("set SVC_PROXY_EGRESS_PROXY or add the host to SVC_PROXY_NO_PROXY");
  });

  test("the egress proxy is named with its password redacted", () => {
    const url = new URL("https://svc.example.com/api/v1/runtime/tools");
    const f = explainNetworkError(new Error("connect via http://alice:s3cret@proxy.corp:3128 refused"), url, { proxy: "http://alice:s3cret@proxy.corp:3128", noProxy: [] });
    expect(f.explanation).toContain("through the egress proxy http://alice:***@proxy.corp:3128");
    expect(f.explanation).not.toContain("s3cret");
  });

  test("a control-plane URL is quoted with its password redacted", () => {
    const f = explainStatus(404, null, "https://bob:s3cret@svc.example.com/api/v1");
    expect(f.explanation).toContain('"https://bob:***@svc.example.com/api/v1"');
    expect(f.explanation).not.toContain("s3cret");
  });

  test("explainStatus: 5xx retry, 4xx not", () => {
    expect(explainStatus(500, null, "x").retry).toBe(true);
    expect(explainStatus(403, null, "x").retry).toBe(false);
  });
});

describe("egress", () => {
  const egress = egressFromEnv({ SVC_PROXY_EGRESS_PROXY: "http://proxy.corp:3128", SVC_PROXY_NO_PROXY: "169.254.169.254, .internal.example, svc.local:8443" });
  test("the egress proxy is used unless the host is listed", () => {
    expect(proxyFor(new URL("https://svc.example.com"), egress)).toBe("http://proxy.corp:3128");
    expect(proxyFor(new URL("http://169.254.169.254/latest"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://cp.internal.example"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://svc.local:8443"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://svc.local"), egress)).toBe("http://proxy.corp:3128");
    expect(bypasses(new URL("https://a.b"), ["*"])).toBe(true);
    expect(proxyFor(new URL("https://svc.example.com"), egressFromEnv({}))).toBeUndefined();
  });
});
