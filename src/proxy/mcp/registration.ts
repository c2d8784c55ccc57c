// Registering the MCP tools through the existing tool sync (PUT /api/v1/runtime/tools), which
// replaces an installation's tools wholesale: the packs' manifest and the MCP tools are always
// PUT together. At boot the supervisor does it (it reads the MCP tools from the proxy, merges,
// PUTs with the spec's retries, and hands the packs' manifest back here); from then on, each
// bundle poll lists the servers again and, when the set of MCP tools changed (a server added,
// removed, down or back), this PUTs the merged manifest again. Failures after boot are logged
// and retried at the next poll: the container keeps running on what is registered.
import type { ManifestTool, ToolManifest } from "../../contract/manifest.ts";
import type { Logger } from "../../log/index.ts";
import { syncTools } from "../../boot/sync.ts";
import type { Egress } from "../../boot/egress.ts";
import type { McpServers } from "./servers.ts";

export type RegistrationOptions = {
  servers: Pick<McpServers, "manifestTools">;
  controlPlaneUrl: string;
  token: string;
  egress: Egress;
  log: Logger;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
};

/** The merged manifest: the packs' tools, then the MCP ones (an MCP name a pack holds is left to the 409). */
export function mergedManifest(packs: ToolManifest, mcp: readonly ManifestTool[]): ToolManifest {
  return { ...packs, tools: [...packs.tools, ...mcp] };
}

export function signature(tools: readonly ManifestTool[]): string {
  return JSON.stringify(tools.map((t) => [t.name, t.access]));
}

export class McpRegistration {
  private packs: ToolManifest | null = null;
  private registered: string | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly o: RegistrationOptions) {}

  /** The MCP tools as the boot tool sync merges them, remembered as what it registers. */
  bootTools(): ManifestTool[] {
    return this.o.servers.manifestTools();
  }

  /** The boot tool sync ran: `packs` is what it PUT besides `mcp` (the MCP tools it was handed). */
  async booted(packs: ToolManifest, mcp: readonly ManifestTool[]): Promise<void> {
    this.packs = { tools: packs.tools, ...(packs.image_version ? { image_version: packs.image_version } : {}) };
    this.registered = signature(mcp);
    return this.resync();
  }

  /** After a bundle poll: PUT again when the MCP tools differ from what is registered. */
  async resync(): Promise<void> {
    this.chain = this.chain.then(async () => this.doResync());
    return this.chain;
  }

  private async doResync(): Promise<void> {
    if (!this.packs) return; // the boot tool sync has not run: it will register them
    const mcp = this.o.servers.manifestTools();
    const sig = signature(mcp);
    if (sig === this.registered) return;
    try {
      await syncTools({ controlPlaneUrl: this.o.controlPlaneUrl, token: this.o.token, manifest: mergedManifest(this.packs, mcp), egress: this.o.egress, log: this.o.log, ...(this.o.fetch ? { fetch: this.o.fetch } : {}), ...(this.o.sleep ? { sleep: this.o.sleep } : {}) });
      this.registered = sig;
      this.o.log.info("mcp tools registered", { mcp_tools: mcp.length });
    } catch (e) {
      this.o.log.warn("mcp tools not registered; trying again at the next poll", { error: (e as Error).message });
    }
  }
}
