// The last attempt to reach each model profile's endpoint (issue 19): recorded by every model
// call and by the proxy's probe of a new endpoint (endpoint-probe.ts), reported in the
// heartbeat, judged by the control plane's readiness. An answer of any HTTP status means the
// endpoint was reached; a failed connection (DNS, TLS certificate, refused, timeout) is kept
// with its error. One process-wide table, bounded.
import type { HeartbeatModelEndpoint } from "../../contract/runtime-api.ts";

const MAX = 200;

export class EndpointAttempts {
  private readonly last = new Map<string, HeartbeatModelEndpoint>();

  record(profileId: string, error: string | null, at = new Date()): void {
    this.last.delete(profileId);
    this.last.set(profileId, { profile_id: profileId.slice(0, 64), state: error === null ? "ok" : "unreachable", error: error === null ? null : error.slice(0, 1000), at: at.toISOString() });
    if (this.last.size > MAX) this.last.delete(this.last.keys().next().value!);
  }

  get(profileId: string): HeartbeatModelEndpoint | undefined {
    return this.last.get(profileId);
  }

  list(): HeartbeatModelEndpoint[] {
    return [...this.last.values()];
  }
}

export const endpointAttempts = new EndpointAttempts();
