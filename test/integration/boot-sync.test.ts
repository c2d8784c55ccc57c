// `svc boot sync` / `svc boot export-manifest` as processes: the real retry schedule against
// a control plane that fails (5 attempts over about 15 s, read from the attempts' log lines,
// never from a clock), fail-fast statuses against a real control-plane process (401, 404, and
// a 409 naming the tool and the installation holding it), the egress proxy, and the pack
// refusals.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakeBundle } from "../../src/proxy/testing/bundle.ts";
import { REPO, type ControlPlaneProcess, freePort, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org } from "./cli-support.ts";
import { events, plainLines, spawnCollect } from "./supervisor-helpers.ts";

// No proxy answers here: `svc boot sync` run by hand outside a running container.
const NO_PROXY_SOCKET = join(mkdtempSync(join(tmpdir(), "svc-boot-sync-")), "proxy.sock");
const BASE_ENV = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: process.env.HOME ?? "/tmp",
  PYTHONPATH: join(REPO, "examples"),
  SVC_RUNTIME_TOKEN: "svc_rt_bogus",
  SVC_RUNTIME_SOCKET_PATH: NO_PROXY_SOCKET,
};

async function bootSync(env: Record<string, string>) {
  const r = spawnCollect([...svcCommand(), "boot", "sync"], { ...BASE_ENV, ...env });
  const code = await r.exit;
  const text = r.stderr();
  return { code, lines: plainLines(text), attempts: events(text).filter((e) => e.startsWith("tool sync: attempt ")), events: events(text) };
}

describe("svc boot sync, retry schedule", () => {
  test("503 and refused connections: 5 attempts over about 15 s, then the spec's refusal", async () => {
    let hits = 0;
    const failing = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (hits++, Response.json({ detail: "maintenance" }, { status: 503 })) });
    const closedPort = freePort();
    try {
      const [unavailable, refused] = await Promise.all([
        bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: `http://127.0.0.1:${failing.port}` }),
        bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: `http://127.0.0.1:${closedPort}` }),
      ]);
      for (const r of [unavailable, refused]) {
        expect(r.code).toBe(1);
        expect(r.attempts).toHaveLength(5);
        expect(r.attempts.map((a) => a.slice(0, "tool sync: attempt 1/5".length))).toEqual([1, 2, 3, 4, 5].map((i) => `tool sync: attempt ${i}/5`));
        expect(r.lines.at(-1)).toStartWith("registering the packs' tools failed; refusing to start: ");
        expect(r.lines.at(-1)).toEndWith("(5 attempts)");
        // the waits between attempts, as logged: 1+2+4+8 = 15 s
        expect(r.attempts.map((a) => /; retrying in (\d+) s$/.exec(a)?.[1] ?? "last")).toEqual(["1", "2", "4", "8", "last"]);
      }
      expect(hits).toBe(5);
      expect(unavailable.lines.at(-1)).toContain("HTTP 503: maintenance");
      expect(refused.lines.at(-1)).toContain("set SVC_PROXY_EGRESS_PROXY or add the host to SVC_PROXY_NO_PROXY");
    } finally {
      void failing.stop(true);
    }
  }, 60_000);
});

describe("svc boot sync against a real control plane", () => {
  let cp: ControlPlaneProcess;
  beforeAll(async () => {
    cp = await startControlPlane();
  }, 60_000);
  afterAll(async () => {
    await cp?.stop();
  });

  test("a wrong token (or a missing route) fails at once, explained", async () => {
    const r = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: cp.url });
    expect(r.code).toBe(1);
    expect(r.attempts).toHaveLength(1);
    // 401 once the runtime routes authenticate; 404 while PUT /api/v1/runtime/tools is not served.
    expect(r.lines.at(-1)).toMatch(/refusing to start: HTTP (401: the runtime token|404: the control-plane URL)/);
  }, 30_000);

  test("a tool name another installation holds: 409 naming the tool and that installation, at once", async () => {
    const agent = await createAgent(cp);
    const first = await createInstallation(cp, agent, "helpdesk-a");
    const second = await createInstallation(cp, agent, "helpdesk-b");
    const a = await bootstrapRuntime(cp, first.id);
    const b = await bootstrapRuntime(cp, second.id);
    const ok = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, SVC_RUNTIME_TOKEN: a.token });
    expect(ok.code).toBe(0);
    // no MCP server is assigned: no word about keeping "0 MCP tool(s)"
    expect(ok.events.filter((e) => e.includes("MCP tool"))).toEqual([]);
    const r = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, SVC_RUNTIME_TOKEN: b.token });
    expect(r.code).toBe(1);
    expect(r.attempts).toHaveLength(1);
    expect(r.lines).toEqual([
      `registering the packs' tools failed; refusing to start: HTTP 409: tool "crm.lookup_customer" is already registered in the workspace by another installation, ${first.id} (helpdesk-a); rename the tool in the pack or remove the other registration (1 attempt)`,
    ]);
  }, 30_000);

  test("boot sync sends the packs' tools only; the agent's MCP tools, reported by its proxies, are untouched by it (issue 31)", async () => {
    const agent = await createAgent(cp);
    const inst = await createInstallation(cp, agent, "mcp-kept");
    const rt = await bootstrapRuntime(cp, inst.id);
    const server = await api(cp, "POST", org(cp, "/tool-servers"), { name: "kb", workspace: "default", transport: "http", url: "https://kb.example.com/mcp" });
    expect(server.status).toBe(201);
    expect((await api(cp, "POST", org(cp, `/tool-servers/${server.json.id}/assign`), { agent_id: agent })).status).toBe(200);
    // what a running proxy reported of its MCP server, and a pack tool registered before that the pack no longer declares
    // (a pack of its own: acme_tools' names are held by another installation in this workspace)
    const listed = [
      { name: "kb.lookup", upstream: "lookup", access: "read" },
      { name: "kb.add-note", upstream: "add-note", access: "write" },
    ];
    expect((await api(cp, "PUT", "/runtime/mcp-tools", { servers: [{ server: "kb", tools: listed, skipped: [] }] }, rt.token)).status).toBe(200);
    expect((await api(cp, "PUT", "/runtime/tools", { tools: [{ name: "old.gone", access: "read", required_capabilities: [] }] }, rt.token)).status).toBe(200);

    const r = await bootSync({ SVC_CHATUI_TOOL_PACKS: "misnamed_pack", SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, SVC_RUNTIME_TOKEN: rt.token });
    expect(r.code).toBe(0);
    expect(r.events.filter((e) => e.includes("MCP tool"))).toEqual([]); // nothing to say of them: not its business
    expect(r.events).toContain("tool sync: registered 1 tool(s) at /api/v1/runtime/tools (added 1, removed 1, unchanged 0, updated 0)");
    const bundle = await api(cp, "GET", "/runtime/policy-bundle?version=2", undefined, rt.token);
    expect(bundle.json.tools.map((t: { name: string; access: string }) => `${t.name}:${t.access}`)).toEqual(["kb.add-note:write", "kb.lookup:read", "notes.search:read"]);
  }, 30_000);

  test("a deleted installation's token: boot sync and the proxy say the installation was deleted, not to rotate", async () => {
    const agent = await createAgent(cp);
    const inst = await createInstallation(cp, agent, "gone-bot");
    const rt = await bootstrapRuntime(cp, inst.id);
    expect((await api(cp, "DELETE", org(cp, `/installations/${inst.id}`))).status).toBe(204);

    const r = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: cp.url, SVC_RUNTIME_TOKEN: rt.token });
    expect(r.code).toBe(1);
    expect(r.attempts).toHaveLength(1);
    expect(r.lines.at(-1)).toStartWith(`registering the packs' tools failed; refusing to start: HTTP 401: the runtime token belongs to installation ${inst.id} (gone-bot), which was deleted at `);
    expect(r.lines.at(-1)).not.toContain("--rotate");

    const state = mkdtempSync(join(tmpdir(), "svc-deleted-proxy-"));
    const proxy = spawnCollect([...svcCommand(), "proxy", "serve"], {
      ...BASE_ENV,
      SVC_RUNTIME_TOKEN: rt.token,
      SVC_RUNTIME_CONTROL_PLANE_URL: cp.url,
      SVC_RUNTIME_SOCKET_PATH: join(state, "proxy.sock"),
      SVC_PROXY_STATE_DIR: state,
    });
    expect(await proxy.exit).not.toBe(0);
    expect(plainLines(proxy.stderr()).at(-1)).toStartWith(
      `svc proxy serve: the control plane refused the runtime token (401 on bootstrap): the runtime token belongs to installation ${inst.id} (gone-bot), which was deleted at `,
    );
  }, 30_000);

  test("a URL ending in /api/v1 gets the 404 hint", async () => {
    const r = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: `${cp.url}/api/v1` });
    expect(r.code).toBe(1);
    expect(r.attempts).toHaveLength(1);
    expect(r.lines.at(-1)).toContain("HTTP 404");
    expect(r.lines.at(-1)).toContain("ends in /api/v1: remove that suffix");
  }, 30_000);
});

/** A policy bundle with nothing in it (the egress test's stand-ins answer the GET with it). */
const EMPTY_BUNDLE = fakeBundle({ version: 2, tool_servers: [] });

describe("svc boot sync, other paths", () => {
  test("goes through SVC_PROXY_EGRESS_PROXY, and around it for SVC_PROXY_NO_PROXY hosts", async () => {
    const seen: string[] = [];
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        seen.push(`${req.method} ${req.url}`);
        return req.method === "GET" ? Response.json(EMPTY_BUNDLE) : Response.json({ added: 3, removed: 0, unchanged: 0, updated: 0, tool_count: 3 });
      },
    });
    const direct = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => Response.json(req.method === "GET" ? EMPTY_BUNDLE : { added: 0, removed: 0, unchanged: 3, updated: 0, tool_count: 3 }),
    });
    try {
      const via = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools", SVC_RUNTIME_CONTROL_PLANE_URL: "http://cp.svc.test:8420", SVC_PROXY_EGRESS_PROXY: `http://127.0.0.1:${proxy.port}` });
      expect(via.code).toBe(0);
      // the packs' tools only (the MCP tools are the proxy's to report), through the egress proxy
      expect(seen).toEqual(["PUT http://cp.svc.test:8420/api/v1/runtime/tools"]);
      expect(via.events).toContain("tool sync: registered 3 tool(s) at /api/v1/runtime/tools (added 3, removed 0, unchanged 0, updated 0)");
      const around = await bootSync({
        SVC_CHATUI_TOOL_PACKS: "acme_tools",
        SVC_RUNTIME_CONTROL_PLANE_URL: `http://127.0.0.1:${direct.port}`,
        SVC_PROXY_EGRESS_PROXY: `http://127.0.0.1:${proxy.port}`,
        SVC_PROXY_NO_PROXY: "127.0.0.1",
      });
      expect(around.code).toBe(0);
      expect(seen).toHaveLength(1);
      expect(around.events).toContain("tool sync: registered 3 tool(s) at /api/v1/runtime/tools (added 0, removed 0, unchanged 3, updated 0)");
    } finally {
      void proxy.stop(true);
      void direct.stop(true);
    }
  }, 30_000);

  test("no packs: skipped without a call", async () => {
    const r = await bootSync({ SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9" });
    expect(r.code).toBe(0);
    expect(r.events).toEqual(["tool sync: skipped (no tool packs configured)"]);
  }, 30_000);

  test("a broken pack and a pack that fails to import are refused naming pack and entry", async () => {
    const broken = await bootSync({ SVC_CHATUI_TOOL_PACKS: "broken_pack", SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9" });
    expect(broken.code).toBe(1);
    expect(broken.lines).toEqual([expect.stringContaining('tool pack "broken_pack": TOOLKITS[0] (id "broken").tools[1] (name "broken.delete_everything")')]);
    const missing = await bootSync({ SVC_CHATUI_TOOL_PACKS: "acme_tools,not_installed_pack", SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9" });
    expect(missing.lines).toEqual([expect.stringContaining('tool pack "not_installed_pack": import: import of module "not_installed_pack" failed: ModuleNotFoundError')]);
  }, 30_000);

  test("export-manifest prints the manifest and relays the warnings", async () => {
    const proc = Bun.spawn([...svcCommand(), "boot", "export-manifest", "--packs", "acme_tools,misnamed_pack"], { env: BASE_ENV, stdout: "pipe", stderr: "pipe" });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    expect(await proc.exited).toBe(0);
    const doc = JSON.parse(out) as { tools: { name: string; toolkit_id: string; pack: string }[] };
    expect(doc.tools.map((t) => `${t.pack}/${t.toolkit_id}/${t.name}`)).toEqual([
      "acme_tools/acme_crm/crm.lookup_customer",
      "acme_tools/acme_crm/crm.update",
      "acme_tools/acme_tickets/tickets.list_open",
      "misnamed_pack/misnamed/notes.search",
    ]);
    expect(events(err).some((e) => e.includes('Tools method "export_all" is left out of the manifest'))).toBe(true);
  }, 30_000);
});
