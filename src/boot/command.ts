// `svc boot sync` and `svc boot export-manifest`: the container's tool sync, runnable by hand
// for diagnosis (the supervisor runs the same code in-process).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandFailure, command } from "../command/index.ts";
import { writePythonPackage } from "../guard-bridge/index.ts";
import { createLogger } from "../log/index.ts";
import type { ManifestTool } from "../contract/manifest.ts";
import { socketPathFrom } from "../proxy/config.ts";
import { MCP_TOOLS_PATH } from "../proxy/mcp/local-routes.ts";
import { egressFromEnv } from "./egress.ts";
import { PackError } from "./exporter.ts";
import { readRegisteredMcpTools } from "./registered-mcp.ts";
import { ToolSyncError } from "./sync.ts";
import { packManifest, packsFromEnv, runToolSync } from "./tool-sync.ts";

async function withPythonPackage<T>(fn: (root: string) => Promise<T>): Promise<T> {
  const root = mkdtempSync(join(tmpdir(), "svc-boot-"));
  writePythonPackage(root);
  return fn(root).finally(() => rmSync(root, { recursive: true, force: true }));
}

function required(name: string): string {
  const v = process.env[name]?.trim();
  if (!v) throw new CommandFailure(`${name} is not set; the tool sync needs it`);
  return v;
}

type ProxyMcp = { answered: true; tools: ManifestTool[] } | { answered: false; why: string };

/** The MCP tools of the proxy on SVC_RUNTIME_SOCKET_PATH, or why none answered there. */
async function runningProxyMcpTools(env: Record<string, string | undefined>, log: ReturnType<typeof createLogger>): Promise<ProxyMcp> {
  const token = env.SVC_RUNTIME_TOKEN?.trim();
  if (!token) return { answered: false, why: "SVC_RUNTIME_TOKEN is not set" };
  try {
    const res = await fetch(`http://svc-proxy${MCP_TOOLS_PATH}`, { unix: socketPathFrom(env), headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) } as RequestInit);
    if (!res.ok) return { answered: false, why: `${MCP_TOOLS_PATH} answered HTTP ${res.status}` };
    const tools = ((await res.json()) as { tools?: ManifestTool[] }).tools ?? [];
    if (tools.length) log.info(`tool sync: ${tools.length} MCP tool(s) of the running proxy go along`);
    return { answered: true, tools };
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === "ENOENT" ? "no socket there" : code === "ECONNREFUSED" ? "connection refused" : (e as Error).name === "TimeoutError" ? "no answer within 60 s" : (e as Error).message.split("\n")[0]!.slice(0, 200);
    return { answered: false, why };
  }
}

const python = () => process.env.SVC_CHATUI_PYTHON?.trim() || "python3";

const sync = command({
  meta: { name: "sync", description: "Register the packs' governed tools with the control plane (PUT /api/v1/runtime/tools)" },
  args: {},
  examples: [
    "SVC_CHATUI_TOOL_PACKS=acme_tools svc boot sync",
    "# environment: SVC_RUNTIME_TOKEN, SVC_RUNTIME_CONTROL_PLANE_URL, SVC_CHATUI_TOOL_PACKS, SVC_CHATUI_PYTHON, SVC_PROXY_EGRESS_PROXY, SVC_PROXY_NO_PROXY",
  ],
  async run() {
    const packs = packsFromEnv(process.env.SVC_CHATUI_TOOL_PACKS);
    const log = createLogger("boot");
    // A running proxy's MCP tools go along (PUT tools replaces the installation's set).
    const proxy = await runningProxyMcpTools(process.env, log);
    const mcpTools = proxy.answered ? proxy.tools : [];
    const needed = packs.length > 0 || mcpTools.length > 0;
    const cfg = {
      mcpTools,
      controlPlaneUrl: needed ? required("SVC_RUNTIME_CONTROL_PLANE_URL") : "",
      token: needed ? required("SVC_RUNTIME_TOKEN") : "",
      packs,
      python: python(),
      egress: egressFromEnv(process.env),
    };
    try {
      // No proxy to ask: the packs' tools alone would remove the MCP tools, so those registered now stay.
      const noProxy = proxy.answered ? null : proxy.why;
      const registeredMcpTools = async () => {
        const kept = await readRegisteredMcpTools({ ...cfg, log });
        // Nothing to keep (no MCP server assigned, or none registered yet): nothing to warn about.
        if (kept.length === 0) return kept;
        log.warn(`tool sync: no proxy answers on ${socketPathFrom(process.env)} (${noProxy}), so the MCP tools it serves are unknown; the ${kept.length} MCP tool(s) registered now are kept as they are`);
        return kept;
      };
      await withPythonPackage(async (root) => runToolSync({ ...cfg, ...(noProxy === null ? {} : { registeredMcpTools }) }, root, log));
    } catch (e) {
      if (e instanceof PackError || e instanceof ToolSyncError) throw new CommandFailure(e.message);
      throw e;
    }
  },
});

const exportCmd = command({
  meta: { name: "export-manifest", description: "Print the manifest of the packs' governed tools (JSON), as the tool sync would send it" },
  args: { packs: { type: "string", description: "comma-separated pack modules (default: $SVC_CHATUI_TOOL_PACKS)" } },
  examples: ["svc boot export-manifest", "svc boot export-manifest --packs acme_tools | jq '.tools[].name'"],
  async run({ args }) {
    const packs = packsFromEnv(args.packs ?? process.env.SVC_CHATUI_TOOL_PACKS);
    try {
      const manifest = await withPythonPackage(async (root) => packManifest({ packs, python: python() }, root, createLogger("boot")));
      process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
    } catch (e) {
      if (e instanceof PackError) throw new CommandFailure(e.message);
      throw e;
    }
  },
});

export const bootCommand = command({
  meta: { name: "boot", description: "Boot tool sync: export the packs' manifest and register it with the control plane" },
  examples: ["svc boot export-manifest", "svc boot sync"],
  subCommands: { sync, "export-manifest": exportCmd },
});
