import { describe, expect, test } from "bun:test";
import { SvcError } from "../contract/errors.ts";
import type { ToolConflictHolder, ToolConflictMembers } from "../contract/runtime-api.ts";
import type { Logger } from "../log/index.ts";
import { trustedCaFromEnv } from "../runtime-link/trust.ts";
import { testTls } from "../../test/support/tls.ts";
import { SYNC_ATTEMPTS, SYNC_DELAYS_MS, type ToolSyncError, conflictHolder, explainNetworkError, explainStatus, syncTools } from "./sync.ts";

const manifest = { tools: [{ name: "crm.update", access: "write" as const, required_capabilities: [] }] };

function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (e: string) => lines.push(e);
  return { lines, info: push, warn: push, error: push };
}

/** The 409 body as the control plane builds it (src/controlplane/tools/registry.ts → SvcError → problem+json). */
function conflictProblem(holder: ToolConflictHolder) {
  const who = "admin" in holder ? "an admin" : `installation ${holder.installation_id} (${holder.installation_name})`;
  const members: ToolConflictMembers = { tool: "crm.update", holder };
  return new SvcError("tool_conflict", `tool "crm.update" is already registered in workspace ws_1 by ${who}; rename the tool in the pack or remove it there first`, members).toProblem(
    "/api/v1/runtime/tools",
  );
}

function fakeFetch(statuses: (number | "network" | "409-admin")[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fn = (async (url: URL, init: RequestInit) => {
    calls.push({ url: String(url), init });
    const s = statuses[Math.min(calls.length - 1, statuses.length - 1)]!;
    if (s === "network") throw new TypeError("ECONNREFUSED");
    if (s === 200) return Response.json({ added: 1, removed: 2, unchanged: 3, updated: 4, tool_count: 1 });
    if (s === 409) return Response.json(conflictProblem({ installation_id: "inst_X", installation_name: "helpdesk" }), { status: 409 });
    if (s === "409-admin") return Response.json(conflictProblem({ admin: true }), { status: 409 });
    return Response.json({ code: "x", detail: `status ${s}` }, { status: s });
  }) as unknown as typeof fetch;
  return { fn, calls };
}

async function run(statuses: (number | "network" | "409-admin")[], base = "https://svc.example.com") {
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

  test("5 attempts with 1+2+4+8 s between them (about 15 s), then the spec's refusal", async () => {
    const r = await run([503]);
    expect(r.calls).toHaveLength(SYNC_ATTEMPTS);
    expect(SYNC_ATTEMPTS).toBe(5);
    expect(r.sleeps).toEqual([1000, 2000, 4000, 8000]);
    expect(r.sleeps.reduce((a, b) => a + b, 0)).toBe(15_000);
    expect(r.error?.attempts).toBe(5);
    expect(r.error?.message).toBe("registering the packs' tools failed; refusing to start: HTTP 503: status 503 (5 attempts)");
    const attempts = r.log.lines.filter((l) => l.startsWith("tool sync: attempt "));
    expect(attempts.map((l) => l.slice(0, 22))).toEqual([1, 2, 3, 4, 5].map((i) => `tool sync: attempt ${i}/5`));
    expect(attempts.map((l) => /retrying in (\d+) s$/.exec(l)?.[1] ?? "final")).toEqual(["1", "2", "4", "8", "final"]);
  });

  test("network errors are retried on the same schedule", async () => {
    const r = await run(["network"]);
    expect(r.calls).toHaveLength(5);
    expect(r.sleeps).toEqual([...SYNC_DELAYS_MS]);
    expect(r.error?.message).toEndWith("(5 attempts)");
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

  test("409 names the tool and the other installation holding it, at once", async () => {
    const r = await run([409]);
    expect(r.calls).toHaveLength(1);
    expect(r.sleeps).toEqual([]);
    expect(r.error?.message).toBe(
      `registering the packs' tools failed; refusing to start: HTTP 409: tool "crm.update" is already registered in the workspace by another installation, inst_X (helpdesk); rename the tool in the pack or remove the other registration (1 attempt)`,
    );
  });

  test("409 names an admin as the holder", async () => {
    const r = await run(["409-admin"]);
    expect(r.calls).toHaveLength(1);
    expect(r.error?.message).toContain('HTTP 409: tool "crm.update" is already registered in the workspace by an admin; ');
  });

  test("409 without the tool and holder members falls back to the spec's cause and the detail", () => {
    const f = explainStatus(409, { detail: "name taken" }, "https://svc.example.com");
    expect(f.retry).toBe(false);
    expect(f.explanation).toBe(
      "HTTP 409: a tool name is already registered in the workspace by an admin or another installation: name taken; rename the tool in the pack or remove the other registration",
    );
    expect(conflictHolder({ installation_id: "inst_1", installation_name: null })).toBe("another installation, inst_1");
  });

  test("a 409 body that is not the contract's ToolConflictProblem names neither tool nor holder", () => {
    const cause = "HTTP 409: a tool name is already registered in the workspace by an admin or another installation";
    const fix = "rename the tool in the pack or remove the other registration";
    const explain = (body: unknown) => explainStatus(409, body as never, "https://svc.example.com").explanation;
    expect(explain(null)).toBe(`${cause}; ${fix}`); // not JSON
    expect(explain({ tool: "crm.update", holder: { admin: true } })).toBe(`${cause}; ${fix}`); // not a problem
    // A problem flawed in one member only: its detail is all that is said.
    const good = { ...conflictProblem({ installation_id: "inst_X", installation_name: "helpdesk" }), detail: "name taken" };
    expect(explain(good)).toStartWith('HTTP 409: tool "crm.update" is already registered in the workspace by another installation, inst_X (helpdesk)');
    for (const flaw of [
      { holder: { installation_id: "inst_X", installation_name: 42 } },
      { holder: { installation_id: "inst_X", admin: true } },
      { holder: { admin: false } },
      { holder: "inst_X" },
      { code: "conflict" },
      { status: 422 },
      { tool: "" },
      { title: undefined },
    ]) {
      expect(explain({ ...good, ...flaw })).toBe(`${cause}: name taken; ${fix}`);
    }
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

  test("a redirect is not followed (the runtime token goes nowhere else) nor retried, and is named", async () => {
    const elsewhere: string[] = [];
    const target = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (elsewhere.push(req.headers.get("authorization") ?? ""), Response.json({ tool_count: 1 })) });
    const cp = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${target.port}/api/v1/runtime/tools` } }) });
    try {
      const log = capture();
      const sleeps: number[] = [];
      const sync = syncTools({ controlPlaneUrl: `http://127.0.0.1:${cp.port}`, token: "svc_rt_1", manifest, egress: { noProxy: [] }, log, sleep: async (ms) => void sleeps.push(ms) });
      const error = (await sync.then(() => null).catch((e: unknown) => e)) as ToolSyncError | null;
      expect(error?.message).toBe(
        `registering the packs' tools failed; refusing to start: HTTP 307: a redirect to http://127.0.0.1:${target.port}/api/v1/runtime/tools, not followed: the runtime token goes only to SVC_RUNTIME_CONTROL_PLANE_URL; set it to where the control plane really is (1 attempt)`,
      );
      expect(sleeps).toEqual([]);
      expect(elsewhere).toEqual([]);
    } finally {
      void cp.stop(true);
      void target.stop(true);
    }
  });

  test("an error answer is read only up to the limit", async () => {
    let pulled = 0;
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    const endless = (async () =>
      new Response(new ReadableStream<Uint8Array>({ pull: (c) => void (pulled < 64 * 1024 * 1024 ? ((pulled += chunk.byteLength), c.enqueue(chunk)) : c.close()) }, { highWaterMark: 0 }), {
        status: 422,
      })) as unknown as typeof fetch;
    const sync = syncTools({ controlPlaneUrl: "https://svc.example.com", token: "svc_rt_1", manifest, egress: { noProxy: [] }, log: capture(), fetch: endless, sleep: async () => {} });
    const error = (await sync.then(() => null).catch((e: unknown) => e)) as ToolSyncError | null;
    expect(error?.message).toBe("registering the packs' tools failed; refusing to start: HTTP 422 (1 attempt)");
    expect(pulled).toBeLessThanOrEqual(128 * 1024);
  });

  test("a control plane behind an internal CA is reached with SVC_PROXY_CA_FILE trusted, as the proxy reaches it", async () => {
    const tls = testTls();
    const cp = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: tls.cert, key: tls.key }, fetch: () => Response.json({ added: 1, tool_count: 1 }) });
    try {
      const sync = async (ca: string[] | null) =>
        syncTools({ controlPlaneUrl: `https://127.0.0.1:${cp.port}`, token: "svc_rt_1", manifest, egress: { noProxy: [] }, ca, log: capture(), sleep: async () => {} })
          .then((r) => r.tool_count)
          .catch((e: unknown) => (e as Error).message);
      expect(await sync(trustedCaFromEnv({ SVC_PROXY_CA_FILE: tls.caFile }))).toBe(1);
      expect(await sync(null)).toMatch(/^registering the packs' tools failed; refusing to start: cannot reach 127\.0\.0\.1:\d+: .*\(5 attempts\)$/);
    } finally {
      void cp.stop(true);
    }
  });

  test("explainStatus: 5xx retry, 4xx not", () => {
    expect(explainStatus(500, null, "x").retry).toBe(true);
    expect(explainStatus(403, null, "x").retry).toBe(false);
  });
});
