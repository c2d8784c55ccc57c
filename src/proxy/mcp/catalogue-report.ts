// Telling the control plane what this replica's MCP servers list (issue 31): after each sync
// and each change (a server restarted, reached again), the servers whose listing changed since
// the control plane last took it are sent (PUT /api/v1/runtime/mcp-tools). A server that could
// not be listed is not sent: its tools stay registered for the agent. When the report changed
// the agent's tools, the bundle is fetched at once, so a new tool is decided within a second,
// not a poll interval later. A failed report is logged once per streak and sent again at the
// next sync.
import type { McpToolsReport, McpToolsResult } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import type { McpServers } from "./servers.ts";

export type CatalogueReportOptions = {
  servers: Pick<McpServers, "pendingReport">;
  send: (r: McpToolsReport) => Promise<McpToolsResult>;
  /** The agent's tools changed: fetch the bundle now. */
  onChanged: () => void;
  /** A runtime call failed (a refused credential is noticed there). */
  onError?: (e: unknown) => void;
  log: Logger;
};

export class McpCatalogueReport {
  private chain: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(private readonly o: CatalogueReportOptions) {}

  /** Send what changed, one report at a time. */
  async report(): Promise<void> {
    this.chain = this.chain.then(async () => this.once());
    return this.chain;
  }

  private async once(): Promise<void> {
    const pending = this.o.servers.pendingReport();
    if (!pending) return;
    try {
      const result = await this.o.send(pending.report);
      pending.taken();
      if (this.failing) this.o.log.info("mcp tools reported again");
      this.failing = false;
      if (result.unknown_servers.length) this.o.log.info("mcp tools of servers no longer assigned were not taken", { servers: result.unknown_servers.join(",") });
      if (result.changed) {
        this.o.log.info("mcp tools registered", { servers: pending.report.servers.map((s) => `${s.server}:${s.tools.length}`).join(",") });
        this.o.onChanged();
      }
    } catch (e) {
      this.o.onError?.(e);
      if (!this.failing) this.o.log.warn("mcp tools not reported; trying again at the next poll", { error: (e as Error).message.slice(0, 300) });
      this.failing = true;
    }
  }
}
