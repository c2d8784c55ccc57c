// What every control-plane module is built with: storage, key wrapping, configuration, clock
// and log. Passed down explicitly; nothing below reads the environment.
import type { Logger } from "../log/index.ts";
import type { Db } from "./db/index.ts";
import { DEFAULT_RATE_LIMITS, type RateLimitConfig } from "./http/rate-limit-config.ts";
import type { Kms } from "./kms/index.ts";
import type { ControlPlaneMetrics } from "./metrics/index.ts";
import type { SelfReplica } from "./replicas/self.ts";
import type { Tracing } from "../tracing/index.ts";

export type ControlPlaneConfig = {
  /** The URL users and runtimes reach the control plane at (claim links, login approval). */
  publicUrl: string;
  pollIntervalSeconds: number;
  heartbeatIntervalSeconds: number;
  claimTtlSeconds: number;
  sessionTtlSeconds: number;
  /** API tokens (svc login, bootstrap-admin --token-out, the API) expire after this; `svc login` again renews. */
  apiTokenTtlSeconds: number;
  loginRequestTtlSeconds: number;
  /** Secure cookies unless the public URL is plain http on loopback. */
  secureCookies: boolean;
  /** PEM of an extra CA trusted by outbound calls to Entra ID / Microsoft Graph (SVC_CP_EXTRA_CA_FILE). */
  extraCaPem?: string;
  /** Limits on password sign-in failures and unauthenticated `svc login` requests. */
  rateLimits: RateLimitConfig;
  /** Take the client IP from the last X-Forwarded-For entry (a trusted proxy in front; SVC_CP_TRUST_FORWARDED_FOR=1). */
  trustForwardedFor: boolean;
  /**
   * Let admin-set outbound URLs (directory sync, OpenID Connect issuers) reach loopback, private,
   * link-local and other non-public addresses (SVC_CP_ALLOW_PRIVATE_OUTBOUND=1; local test doubles).
   */
  allowPrivateOutbound: boolean;
  /**
   * Let SIEM sinks reach a receiver on loopback (127.0.0.0/8, ::1) and nothing else non-public:
   * the demo's opt-in (SVC_CP_ALLOW_LOOPBACK_SINKS=1, set by `scripts/start.sh --demo`) so a
   * newcomer can try a sink on the same machine. Off by default; the other outbound rules stay.
   */
  allowLoopbackSinks: boolean;
  /** Unused, unexpired claim links kept per (installation, front-end user); older ones are deleted. */
  maxLiveClaimLinks: number;
  /**
   * A runtime replica not heard from (bootstrap or heartbeat) for this long is stale: shown so,
   * and no longer counted for model-profile readiness or offered as a recipient to seal keys to.
   * Well above the proxies' heartbeat interval (SVC_PROXY_HEARTBEAT_INTERVAL, default 1 min).
   */
  replicaStaleAfterSeconds: number;
  /** A replica not heard from for this long is gone (shown so; it stays listed). */
  replicaGoneAfterSeconds: number;
  /** Audit records older than this (by their `ts`) are rejected at ingest. */
  auditMaxAgeSeconds: number;
  /** Audit records dated further than this ahead of the control plane's clock are rejected at ingest. */
  auditMaxFutureSeconds: number;
  /** SVC_CP_AUDIT_CHECKPOINT_SECONDS: how often each organization's chain heads are signed (issue 15). */
  auditCheckpointSeconds: number;
  /** SVC_CP_AUDIT_VERIFY_HOURS: each organization's store is verified by the control plane at least this often (0: never on its own). */
  auditVerifyHours: number;
  /** SVC_CP_METRICS_TOKEN: the bearer GET /metrics needs; unset, /metrics is off (404). */
  metricsToken?: string;
};

export type ControlPlaneDeps = {
  db: Db;
  kms: Kms;
  config: ControlPlaneConfig;
  now: () => number;
  log: Logger;
  /** Prometheus counters (made by createApp when absent). */
  metrics?: ControlPlaneMetrics;
  /** When this replica's periodic checkpoint is next due (set by audit-chain/scheduler.ts). */
  checkpointDueAt?: () => number | null;
  /**
   * This process as a control-plane replica (replicas/service.ts): its id, release and the
   * policy features it can express. Absent in tests that build no serving process: this
   * release's own features then, with no other replica to narrow them.
   */
  replica?: SelfReplica;
  /** OpenTelemetry spans of ingest and SIEM delivery (traces.ts), from the OTEL_* variables; off when absent. */
  tracing?: Tracing;
};

export function defaultConfig(publicUrl: string): ControlPlaneConfig {
  const u = new URL(publicUrl);
  return {
    publicUrl: publicUrl.replace(/\/+$/, ""),
    pollIntervalSeconds: 60,
    heartbeatIntervalSeconds: 60,
    claimTtlSeconds: 15 * 60,
    sessionTtlSeconds: 12 * 3600,
    apiTokenTtlSeconds: 30 * 24 * 3600,
    loginRequestTtlSeconds: 10 * 60,
    secureCookies: !(u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)),
    rateLimits: { ...DEFAULT_RATE_LIMITS },
    trustForwardedFor: false,
    allowPrivateOutbound: false,
    allowLoopbackSinks: false,
    maxLiveClaimLinks: 3,
    replicaStaleAfterSeconds: 15 * 60,
    replicaGoneAfterSeconds: 24 * 3600,
    // A spool may hold records through a long outage; anything older is not a real decision.
    auditMaxAgeSeconds: 90 * 24 * 3600,
    auditMaxFutureSeconds: 15 * 60,
    auditCheckpointSeconds: 3600,
    auditVerifyHours: 24,
  };
}
