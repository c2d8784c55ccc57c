// `svc boot sync` and `svc boot export-manifest`: the container's tool sync, runnable by hand
// for diagnosis (the supervisor runs the same code in-process).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandFailure, command } from "../command/index.ts";
import { writePythonPackage } from "../guard-bridge/index.ts";
import { createLogger } from "../log/index.ts";
import { egressFromEnv } from "../runtime-link/egress.ts";
import { CaFileError, trustedCaFromEnv } from "../runtime-link/trust.ts";
import { PackError } from "./exporter.ts";
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

const python = () => process.env.SVC_CHATUI_PYTHON?.trim() || "python3";

const sync = command({
  meta: { name: "sync", description: "Register the packs' governed tools with the control plane (PUT /api/v1/runtime/tools)" },
  args: {},
  examples: [
    "SVC_CHATUI_TOOL_PACKS=acme_tools svc boot sync",
    "# environment: SVC_RUNTIME_TOKEN, SVC_RUNTIME_CONTROL_PLANE_URL, SVC_CHATUI_TOOL_PACKS, SVC_CHATUI_PYTHON, SVC_PROXY_EGRESS_PROXY, SVC_PROXY_NO_PROXY, SVC_PROXY_CA_FILE",
  ],
  async run() {
    const packs = packsFromEnv(process.env.SVC_CHATUI_TOOL_PACKS);
    const log = createLogger("boot");
    // Only the packs' tools: an MCP server's tools are the agent's, reported by its runtimes' proxies (docs/mcp.md).
    const needed = packs.length > 0;
    const cfg = {
      controlPlaneUrl: needed ? required("SVC_RUNTIME_CONTROL_PLANE_URL") : "",
      token: needed ? required("SVC_RUNTIME_TOKEN") : "",
      packs,
      python: python(),
      egress: egressFromEnv(process.env),
    };
    try {
      const ca = needed ? trustedCaFromEnv(process.env) : null;
      await withPythonPackage(async (root) => runToolSync({ ...cfg, ca }, root, log));
    } catch (e) {
      if (e instanceof PackError || e instanceof ToolSyncError || e instanceof CaFileError) throw new CommandFailure(e.message);
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
