// Heartbeats: every SVC_PROXY_HEARTBEAT_INTERVAL, tell the control plane this replica's state,
// policy revision, tool count, version, spool depth and space (a full spool refuses decisions),
// and the runtime's clock, from which the control plane measures the skew. Sent only after bootstrap (the
// control plane knows the replica from then on); a failure is logged once per streak.
import type { Logger } from "../../log/index.ts";
import type { ControlPlaneClient } from "./control-plane-client.ts";
import type { ProxyStatus } from "../policy/status.ts";
import { type EndpointAttempts, endpointAttempts } from "../api/endpoint-attempts.ts";

export type HeartbeatOptions = {
  client: ControlPlaneClient;
  status: ProxyStatus;
  log: Logger;
  replicaId: string;
  version: string;
  intervalMs: number;
  spoolDepth: () => number;
  /** Every failure, so a refused credential is noticed here too (BundleLoop.credentialCheck). */
  onError?: (e: unknown) => void;
  /** The model endpoints' last attempts (the process-wide table by default). */
  endpointAttempts?: EndpointAttempts;
};

export class Heartbeat {
  private timer: ReturnType<typeof setInterval> | null = null;
  private failing = false;
  sent = 0;

  constructor(private readonly o: HeartbeatOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.o.intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async beat(): Promise<void> {
    const { client, status, log } = this.o;
    if (!client.replicaId) return;
    const r = status.report(this.o.spoolDepth());
    const attempts = (this.o.endpointAttempts ?? endpointAttempts).list();
    try {
      await client.heartbeat({
        replica_id: this.o.replicaId,
        state: status.state,
        policy_revision: r.policy_revision,
        tool_count: r.tool_count,
        version: this.o.version,
        // The contract's counter bound: a backlog past it is still reported as huge.
        spool_depth: Math.min(r.spool_depth ?? 0, 2_147_483_647),
        ...(r.spool_indexing !== undefined ? { spool_indexing: r.spool_indexing } : {}),
        last_success: r.last_success,
        ...(r.spool ? { spool_state: r.spool.state, spool_free_bytes: r.spool.free_bytes === null ? null : Math.min(r.spool.free_bytes, Number.MAX_SAFE_INTEGER) } : {}),
        // The assigned MCP servers (issue 13), bounded as the contract says.
        ...(r.tool_servers
          ? {
              tool_servers: r.tool_servers
                .slice(0, 200)
                .map((t) => ({ name: t.name.slice(0, 64), state: t.state, error: t.error === null ? null : t.error.slice(0, 1000), tool_count: Math.min(t.tool_count, 100_000) })),
            }
          : {}),
        // The last attempt to reach each model endpoint (issue 19): readiness reports it.
        ...(attempts.length ? { model_endpoints: attempts } : {}),
        // The control plane compares it with its own clock: the skew the console shows.
        sent_at: new Date().toISOString(),
      });
      this.sent++;
      if (this.failing) log.info("heartbeat recovered");
      this.failing = false;
    } catch (e) {
      if (!this.failing) log.warn("heartbeat failed", { error: (e as Error).message });
      this.failing = true;
      this.o.onError?.(e);
    }
  }
}
