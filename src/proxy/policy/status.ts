// What the proxy reports about its policy state: to /readyz, to GET /v1/policy (what
// `svc policy show` prints) and in heartbeats. The bundle loop writes it; nothing else does,
// except the daemon, which hands it the audit spool once (its space, and whether it still
// indexes the backlog): a full spool makes /readyz 503 with reason `spool_full` whatever the
// policy state (decisions are refused).
//   starting     no usable bundle yet, first attempt still running
//   ready        bundle loaded and the last poll succeeded
//   stale        deciding on the last good bundle; the control plane is unreachable or overloaded
//                (network error, 5xx, 408, 429)
//   unavailable  no decisions: no usable bundle yet, the control plane refused the last call
//                (another 4xx), or it refused the runtime credential (401/403, 404 on bootstrap
//                or bundle) — then the bundle and digest key are forgotten as well — or a
//                bundle named a new digest key (a rotation) that could not be fetched yet
import type { BootstrapResponse, DigestKeyMaterial, ProxyState } from "../../contract/runtime-api.ts";
import type { PolicyStatus, ToolServerStatus } from "../../contract/local-api.ts";
import type { DigestKey } from "../audit/call-content.ts";
import { type SpoolHealth, spoolFullReason } from "../audit/spool-space.ts";
import type { CompiledBundle } from "./policy-index.ts";

export class ProxyStatus {
  state: ProxyState = "starting";
  compiled: CompiledBundle | null = null;
  bootstrap: BootstrapResponse | null = null;
  digestKey: DigestKey | null = null;
  lastSuccess: Date | null = null;
  lastError: string | null = null;
  /** Why the control plane refused the runtime credential; null unless it did (until a call succeeds again). */
  credentialError: string | null = null;
  /** Until the first attempt of this process finished, a reloaded bundle is not yet served as ready. */
  firstAttemptDone = false;
  /** The assigned MCP servers' status (mcp/servers.ts), reported when any is assigned. */
  toolServers: () => ToolServerStatus[] = () => [];
  /**
   * The audit spool (set by the daemon; null in tests without one): its space, and whether it
   * still indexes the backlog of earlier runs.
   */
  spool: { health(): SpoolHealth; readonly indexing: boolean } | null = null;

  setBootstrap(b: BootstrapResponse): void {
    this.bootstrap = b;
    this.setDigestKey(b.digest_key);
  }

  /** The key new records are digested with; the bootstrap answer kept in memory names it too. */
  setDigestKey(k: DigestKeyMaterial): void {
    this.digestKey = { id: k.id, key: new Uint8Array(Buffer.from(k.key, "base64")) };
    if (this.bootstrap) this.bootstrap = { ...this.bootstrap, digest_key: k };
  }

  succeeded(at: Date): void {
    this.lastSuccess = at;
    this.lastError = null;
    this.credentialError = null;
    this.firstAttemptDone = true;
    this.state = this.usable() ? "ready" : "unavailable";
  }

  /** The control plane could not be reached or could not answer: keep deciding on the last good bundle. */
  failed(message: string): void {
    this.lastError = message;
    this.firstAttemptDone = true;
    this.state = this.usable() ? "stale" : "unavailable";
  }

  /** The control plane answered and refused (a 4xx other than a credential refusal): stop deciding. */
  refused(message: string): void {
    this.lastError = message;
    this.firstAttemptDone = true;
    this.state = "unavailable";
  }

  /** The control plane refused the runtime credential: forget what it fetched, stop deciding. */
  credentialRefused(message: string): void {
    this.compiled = null;
    this.bootstrap = null;
    this.digestKey = null;
    this.lastError = message;
    this.credentialError = message;
    this.firstAttemptDone = true;
    this.state = "unavailable";
  }

  /** A bundle and a digest key: enough to decide and audit. */
  usable(): boolean {
    return this.compiled !== null && this.digestKey !== null;
  }

  /** Decisions are served in these states only. */
  serving(): boolean {
    return this.usable() && (this.state === "ready" || this.state === "stale");
  }

  /** Said by /readyz and `svc policy show` while stale: the spec wants it said plainly. */
  private lastGoodNote(): string {
    return `the control plane is unreachable or not answering; decisions continue on the last good bundle (revision ${this.compiled?.revision ?? "?"})`;
  }

  readiness(): { ready: boolean; state: ProxyState; reason: string | null } {
    const space = this.spool?.health();
    if (this.serving() && space?.state === "full") return { ready: false, state: this.state, reason: spoolFullReason(space) };
    if (this.serving()) return { ready: true, state: this.state, reason: this.state === "stale" ? `${this.lastGoodNote()}: ${this.lastError}` : null };
    let reason: string;
    if (!this.firstAttemptDone) reason = "bootstrap and first bundle fetch in progress";
    else if (this.credentialError) reason = `runtime bootstrap failed: ${this.credentialError}`;
    else if (!this.digestKey && this.bootstrap) reason = `the organization's digest key was rotated and the new one is not fetched yet: ${this.lastError ?? "unknown"}`;
    else if (!this.digestKey) reason = `runtime bootstrap failed: ${this.lastError ?? "unknown"}`;
    else if (!this.compiled) reason = `no policy bundle yet: ${this.lastError ?? "unknown"}`;
    else reason = `the control plane refused the last call: ${this.lastError ?? "unknown"}`;
    return { ready: false, state: this.state, reason };
  }

  report(spoolDepth: number): PolicyStatus {
    const readiness = this.readiness();
    const servers = this.toolServers();
    const space = this.spool?.health();
    return {
      tool_count: this.compiled?.tools.size ?? 0,
      state: this.state,
      // null when ready; stale: decisions continue on the last good bundle; else why none are made
      reason: this.serving() && this.state === "stale" && readiness.ready ? this.lastGoodNote() : readiness.reason,
      policy_revision: this.compiled?.revision ?? null,
      last_success: this.lastSuccess?.toISOString() ?? null,
      last_error: this.lastError,
      bundle_version: this.compiled?.bundle.version,
      spool_depth: spoolDepth,
      // While true, spool_depth is what is indexed so far: more records may be waiting on disk.
      ...(this.spool ? { spool_indexing: this.spool.indexing } : {}),
      ...(servers.length ? { tool_servers: servers } : {}),
      ...(space ? { spool: space } : {}),
    };
  }
}
