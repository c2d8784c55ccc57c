// Which registered tools `svc boot sync` keeps when no proxy answers: those of an assigned MCP
// server (`<server>.<tool>`), nothing else.
import { describe, expect, test } from "bun:test";
import { POLICY_BUNDLE_PATH } from "../contract/runtime-api.ts";
import { bundleTool, fakeBundle } from "../proxy/testing/bundle.ts";
import { readRegisteredMcpTools, registeredMcpTools } from "./registered-mcp.ts";
import { ToolSyncError } from "./sync.ts";
import { toolServer } from "../../test/support/mcp/servers.ts";

const server = (name: string) => toolServer.http(`https://${name}.example.com/mcp`, { id: `ts_${name}`, name });

test("keeps the tools of assigned servers as they are registered; pack tools and other prefixes are not kept", () => {
  const kept = registeredMcpTools({ tools: [bundleTool("crm.lookup_customer"), bundleTool("kb.lookup"), bundleTool("kb.add_note", "write"), bundleTool("kbx.other"), bundleTool("plain"), bundleTool("git.log")], tool_servers: [server("kb"), server("git")] });
  expect(kept).toEqual([
    { name: "kb.lookup", access: "read", required_capabilities: [], pack: "mcp:kb" },
    { name: "kb.add_note", access: "write", required_capabilities: [], pack: "mcp:kb" },
    { name: "git.log", access: "read", required_capabilities: [], pack: "mcp:git" },
  ]);
});

test("no assigned server: nothing is kept", () => {
  expect(registeredMcpTools({ tools: [bundleTool("kb.lookup")], tool_servers: [] })).toEqual([]);
  expect(registeredMcpTools({ tools: [bundleTool("kb.lookup")] } as never)).toEqual([]);
});

describe("reading them from the control plane (the tool sync's attempts and explanations)", () => {
  const bundle = fakeBundle({ version: 2, revision: 3, tools: [bundleTool("kb.lookup"), bundleTool("crm.lookup_customer")], tool_servers: [server("kb")] });
  const quiet = { info() {}, warn() {}, error() {} };
  async function read(answers: (() => Response)[]) {
    const urls: string[] = [];
    const sleeps: number[] = [];
    const warnings: string[] = [];
    const fetch = (async (url: string, init: RequestInit) => {
      urls.push(String(url));
      authorizations.push(new Headers(init.headers).get("authorization"));
      return answers[Math.min(urls.length - 1, answers.length - 1)]!();
    }) as unknown as typeof globalThis.fetch;
    const authorizations: (string | null)[] = [];
    const log = { ...quiet, warn: (line: string) => void warnings.push(line) };
    const out = await readRegisteredMcpTools({ controlPlaneUrl: "https://cp.example.com/", token: "svc_rt_1", egress: { noProxy: [] }, log, fetch, sleep: async (ms) => void sleeps.push(ms) }).catch((e: unknown) => e);
    return { out, urls, sleeps, warnings, authorizations };
  }

  test("the installation's bundle (version 2, read as the proxy reads it), after a retryable 503 logged with its detail", async () => {
    const r = await read([() => Response.json({ detail: "busy" }, { status: 503 }), () => Response.json(bundle)]);
    const url = `https://cp.example.com${POLICY_BUNDLE_PATH}?version=2&conditions=1`;
    expect(r.urls).toEqual([url, url]);
    expect(r.authorizations).toEqual(["Bearer svc_rt_1", "Bearer svc_rt_1"]);
    expect(r.sleeps).toHaveLength(1);
    expect(r.warnings).toEqual([expect.stringContaining("attempt 1/5 failed: HTTP 503: busy; retrying in 1 s")]);
    expect(r.out).toEqual([{ name: "kb.lookup", access: "read", required_capabilities: [], pack: "mcp:kb" }]);
  });

  test("a network error is retried, explained as the tool sync explains it (the host named)", async () => {
    const r = await read([
      () => {
        throw new TypeError("connection refused");
      },
      () => Response.json(bundle),
    ]);
    expect(r.sleeps).toHaveLength(1);
    expect(r.warnings).toEqual([expect.stringContaining("attempt 1/5 failed: cannot reach cp.example.com: connection refused")]);
    expect(r.out).toHaveLength(1);
  });

  test("a 401 is refused at once, saying the runtime token is wrong", async () => {
    const r = await read([() => Response.json({ detail: "no" }, { status: 401 })]);
    expect((r.out as ToolSyncError).attempts).toBe(1);
    expect((r.out as ToolSyncError).message).toContain("the runtime token (SVC_RUNTIME_TOKEN) is wrong or was rotated");
  });

  test("a 404 is refused at once, naming the bundle's path, not the tools path", async () => {
    const r = await read([() => Response.json({ detail: "no route" }, { status: 404 })]);
    expect(r.out).toBeInstanceOf(ToolSyncError);
    expect((r.out as ToolSyncError).attempts).toBe(1);
    expect((r.out as ToolSyncError).message).toContain(`does not serve ${POLICY_BUNDLE_PATH}`);
  });

  test("a 304 to a read that sent no ETag (a broken intermediary) is retried, saying so", async () => {
    const r = await read([() => new Response(null, { status: 304 }), () => Response.json(bundle)]);
    expect(r.sleeps).toHaveLength(1);
    expect(r.warnings).toEqual([expect.stringContaining(`attempt 1/5 failed: ${POLICY_BUNDLE_PATH} answered 304 to a read without an ETag`)]);
    expect(r.out).toHaveLength(1);
  });

  test("a redirect is not followed (the runtime token goes nowhere else), and the failure says why", async () => {
    const elsewhere: string[] = [];
    const target = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (elsewhere.push(req.headers.get("authorization") ?? ""), Response.json(bundle)) });
    const cp = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${target.port}/bundle` } }) });
    try {
      const warnings: string[] = [];
      const out = await readRegisteredMcpTools({ controlPlaneUrl: `http://127.0.0.1:${cp.port}`, token: "svc_rt_1", egress: { noProxy: [] }, log: { ...quiet, warn: (l: string) => void warnings.push(l) }, sleep: async () => {} }).catch((e: unknown) => e);
      expect(out).toBeInstanceOf(ToolSyncError);
      expect(elsewhere).toEqual([]);
      expect((out as ToolSyncError).attempts).toBe(1); // refused at once: the same URL would redirect again
      expect((out as ToolSyncError).message).toContain(`answered 302, a redirect to http://127.0.0.1:${target.port}/bundle, not followed`);
    } finally {
      void cp.stop(true);
      void target.stop(true);
    }
  });

  test("an answer that is not a policy bundle is refused at once, saying so", async () => {
    const r = await read([() => Response.json({ tools: "no" })]);
    expect(r.out).toBeInstanceOf(ToolSyncError);
    expect((r.out as ToolSyncError).attempts).toBe(1);
    expect((r.out as ToolSyncError).message).toContain(`the installation's policy bundle (${POLICY_BUNDLE_PATH}) is not one:`);
  });
});
