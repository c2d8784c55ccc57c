// `svc proxy serve`: wires the parts together and runs them until SIGTERM/SIGINT.
//   state dir → credential-sync identity, replica id, persisted bootstrap and last good bundle
//   bundle loop (bootstrap, poll) → status; heartbeat; audit spool (held by its lock) → shipper
//   local API on the unix socket (0600)
// At SIGTERM: stop taking requests, stop the loops, let requests in flight finish and ship
// what the spool holds within one short deadline, cut what still streams, close the spool
// (what is left ships after the next start), release the spool's lock, exit 0.
import { NO_TRACING, startTracing, type Tracing, tracingConfigUrl } from "../tracing/index.ts";
import { EndpointProbe } from "./api/endpoint-probe.ts";
import { endpointAttempts } from "./api/endpoint-attempts.ts";
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import type { Server } from "bun";
import { redactUrlCredentials } from "../contract/egress.ts";
import { trustedCa } from "../runtime-link/trust.ts";
import type { Logger } from "../log/index.ts";
import { BUILD_VERSION } from "../version.ts";
import { BundleLoop } from "./policy/bundle-loop.ts";
import type { ProxyConfig } from "./config.ts";
import { ControlPlaneClient } from "./link/control-plane-client.ts";
import { credentialSync, loadOrCreateIdentity } from "./link/credential-sync.ts";
import { Heartbeat } from "./link/heartbeat.ts";
import { createLocalApi } from "./api/local-api.ts";
import { DecisionSummary } from "./pipeline/decision-summary.ts";
import { daemonPipeline } from "./pipeline/wiring.ts";
import { metricsRoute, ProxyMetrics, serveMetrics } from "./metrics.ts";
import { LimitsPoll } from "./link/limits-poll.ts";
import { BudgetBook } from "./policy/budgets.ts";
import { AuditRecorder } from "./audit/recorder.ts";
import { StanzaPool } from "./audit/stanza-pool.ts";
import { AuditShipper } from "./audit/shipper.ts";
import { replayRoute } from "./audit/replay-route.ts";
import { AuditSpool } from "./audit/spool.ts";
import { SpoolLock, SpoolLockedError } from "./audit/spool-lock.ts";
import { formatBytes, MIN_SPOOL_VOLUME_BYTES, type SpoolHealth, spaceOf, spoolFullReason } from "./audit/spool-space.ts";
import { loadOrCreateReplicaId, prepareStateDir } from "./state-dir.ts";
import { ProxyStatus } from "./policy/status.ts";
import { McpCatalogueReport } from "./mcp/catalogue-report.ts";
import { SessionChecks } from "./mcp/session-check.ts";
import { guardedFetch, outboundGuard } from "./outbound.ts";
import { McpServers, type McpServersOptions } from "./mcp/servers.ts";
import { OauthTokens, OauthUpstreams } from "./mcp/oauth.ts";
import { AssertionKeys } from "./mcp/assertion.ts";
import { createMcpGateway, type Gateway, MCP_GATEWAY_PATH } from "./mcp/gateway.ts";

export const DRAIN_DEADLINE_MS = 5_000;
const MAX_SOCKET_PATH = 107;

export type Daemon = {
  status: ProxyStatus;
  spool: AuditSpool;
  loop: BundleLoop;
  shipper: AuditShipper;
  heartbeat: Heartbeat;
  replicaId: string;
  /** The MCP gateway's URL on loopback (http://127.0.0.1:<port>/mcp); null without CHATUI_SECRET_KEY. */
  mcpUrl: string | null;
  /** Resolves once the MCP servers asked for so far are listed (tests). */
  mcpSettled(): Promise<void>;
  metrics: ProxyMetrics;
  /** The budget poll (issue 16): tests poll now instead of waiting an interval. */
  limits: LimitsPoll;
  /** The TCP metrics listener's URL (SVC_PROXY_METRICS_LISTEN), or null. */
  metricsUrl: string | null;
  /**
   * Resolves with the cause when the control plane refused the runtime credential before this
   * process ever bootstrapped: the command then stops and exits non-zero ("runtime bootstrap failed").
   */
  fatal: Promise<string>;
  /** Stop serving, drain the spool (up to the deadline), close. Returns the records left. */
  shutdown(deadlineMs?: number): Promise<number>;
};

/** One line per change of the spool's space: a warning when low, an error when full, info when it recovers. */
function logSpoolHealth(log: Logger, h: SpoolHealth, previous: SpoolHealth["state"]): void {
  const fields = { path: h.path, free: formatBytes(h.free_bytes), low_space: formatBytes(h.low_space_bytes) };
  if (h.state === "full") log.error("audit spool full; decisions are refused (503 spool_full)", { ...fields, reason: spoolFullReason(h) });
  else if (h.state === "low") log.warn("audit spool low on space", { ...fields, was: previous });
  else log.info("audit spool has room again", { ...fields, was: previous });
}

export class StartError extends Error {
  override name = "StartError";
}

async function claimSocket(path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw new StartError(`SVC_RUNTIME_SOCKET_PATH "${path}" is longer than ${MAX_SOCKET_PATH} bytes, the limit of a unix socket path`);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) return;
  if (!lstatSync(path).isSocket()) throw new StartError(`SVC_RUNTIME_SOCKET_PATH "${path}" exists and is not a socket; refusing to replace it`);
  const alive = await fetch("http://localhost/readyz", { unix: path, signal: AbortSignal.timeout(1000) } as RequestInit).then(
    () => true,
    () => false,
  );
  if (alive) throw new StartError(`another proxy is already serving on ${path}`);
  rmSync(path, { force: true }); // left over by a killed proxy
}

/** For tests: the MCP upstreams' timings (the defaults are upstream.ts's constants). */
export type DaemonOptions = {
  mcpUpstream?: McpServersOptions["upstream"];
  /** The OTEL_* variables tracing is read from (tracing.ts); process.env by default. */
  otelEnv?: Record<string, string | undefined>;
};

export async function startDaemon(config: ProxyConfig, log: Logger, opts: DaemonOptions = {}): Promise<Daemon> {
  try {
    prepareStateDir(config.stateDir);
  } catch (e) {
    throw new StartError(`SVC_PROXY_STATE_DIR "${config.stateDir}" is not a writable directory: ${(e as Error).message}`);
  }
  // A second proxy on this socket is refused here, naming the socket; one on another socket
  // but the same spool directory by the spool lock below. Both before the spool is opened: its
  // recovery deletes acknowledged segments and repairs files, which must never happen under a
  // proxy that is still running on them.
  await claimSocket(config.socketPath);
  const identity = await loadOrCreateIdentity(config.stateDir);
  const credentials = await credentialSync(identity);
  const replicaId = loadOrCreateReplicaId(config.stateDir);
  let ca: string[] | null;
  try {
    // Already in Bun's default store (NODE_EXTRA_CA_CERTS, set by svc run): the defaults trust it.
    ca = trustedCa(config.caFile, config.caInDefaultStore);
  } catch (e) {
    throw new StartError((e as Error).message);
  }
  const unusable = (e: unknown) => new StartError(`SVC_PROXY_AUDIT "${config.auditSpoolDir}" cannot be used as the audit spool: ${(e as Error).message}`);
  // One proxy per spool directory, whatever socket each serves on (spool-lock.ts); taken
  // before the spool's recovery touches any file, released after the spool is closed.
  let lock: SpoolLock;
  try {
    lock = SpoolLock.acquire(config.auditSpoolDir, { onLost: (message) => log.error("audit spool lock lost", { error: message }) });
  } catch (e) {
    throw e instanceof SpoolLockedError ? new StartError(e.message) : unusable(e);
  }
  lock.keepAlive();
  let spool: AuditSpool;
  let reportNow: (() => Promise<void>) | null = null;
  try {
    spool = await AuditSpool.open(config.auditSpoolDir, {
      lowSpaceBytes: config.auditLowSpaceBytes,
      // A long backlog (an outage) is indexed while the proxy already decides: it never delays readiness.
      loadInBackground: true,
      // Segments zero-filled ahead of time: each fdatasync flushes data only (spool.ts).
      preallocate: true,
      onHealthChange: (h, previous) => {
        logSpoolHealth(log, h, previous);
        // Tell the control plane now (the console shows it), not at the next interval.
        void reportNow?.();
      },
    });
  } catch (e) {
    lock.release();
    throw unusable(e);
  }
  log.info("audit spool opened", { path: config.auditSpoolDir });
  const loadStarted = performance.now();
  spool.loaded.then(
    () => {
      // The scan's garbage (a backlog of millions) goes now, not whenever the heap next grows.
      if (spool.depth > 100_000) Bun.gc(true);
      log.info("audit spool loaded", { path: config.auditSpoolDir, unshipped: spool.depth, ms: Math.round(performance.now() - loadStarted) });
    },
    (e) => log.error("audit spool backlog could not be read; older records are not shipped until a restart reads them", { path: config.auditSpoolDir, error: (e as Error).message }),
  );
  const volume = spaceOf(config.auditSpoolDir)?.total ?? null;
  if (volume !== null && volume < MIN_SPOOL_VOLUME_BYTES) {
    log.warn("the audit spool's volume is smaller than recommended; a control-plane outage fills it sooner", {
      path: config.auditSpoolDir,
      volume: formatBytes(volume),
      recommended: formatBytes(MIN_SPOOL_VOLUME_BYTES),
    });
  }

  const status = new ProxyStatus();
  status.spool = spool;
  const client = new ControlPlaneClient({ baseUrl: config.controlPlaneUrl, token: config.token, version: BUILD_VERSION, egressProxy: config.egressProxy, noProxy: config.noProxy, ca });
  const fatal = Promise.withResolvers<string>();
  let shipper: AuditShipper | null = null;
  // MCP servers (issues 13, 31): listed again on every poll; what a listing found is reported to
  // the control plane when it changed, and the bundle fetched at once when that changed the agent's tools.
  let catalogue: McpCatalogueReport | null = null;
  // Admin-set URLs reach only public addresses unless SVC_PROXY_ALLOW_PRIVATE_OUTBOUND names them (issue 31).
  const mcpGuard = outboundGuard({ allow: config.allowPrivateOutbound, what: "MCP server" });
  const modelFetch = guardedFetch(outboundGuard({ allow: config.allowPrivateOutbound, what: "the model endpoint" }));
  // Per-user OAuth (issue 32): tokens asked of the control plane per (server, user), sealed to this replica.
  const oauthTokens = new OauthTokens({ ask: async (r) => client.toolServerToken(r), open: async (sealed) => credentials.open(sealed) });
  // Identity assertions (issue 32): the key follows the bundle's assertion_key_id, fetched sealed to this replica.
  const assertionKeys = new AssertionKeys({
    fetch: async () => client.assertionKey(),
    open: async (s) => credentials.openBytes(s),
    installationId: () => status.bootstrap?.installation.id ?? null,
    log,
  });
  const mcp = new McpServers({ credentials, ca, log, assertionKeys, onChange: () => void catalogue?.report(), upstream: { connectGuard: mcpGuard, ...opts.mcpUpstream }, oauth: oauthTokens });
  const oauthUpstreams = new OauthUpstreams(oauthTokens, { ca, log, connectGuard: mcpGuard, ...opts.mcpUpstream }, log);
  status.toolServers = () => mcp.status();
  const probe = new EndpointProbe({ attempts: endpointAttempts, ca, log, fetchImpl: modelFetch });
  const loop = new BundleLoop({
    client,
    status,
    log,
    stateDir: config.stateDir,
    token: config.token,
    replicaId,
    credentialSyncRecipient: credentials.recipient,
    version: BUILD_VERSION,
    bundleVersion: config.bundleVersion,
    pollIntervalMs: config.pollIntervalMs,
    onFatal: (cause) => fatal.resolve(cause),
    onBootstrapped: () => shipper?.resume(),
    onPolled: () => {
      void assertionKeys
        .follow(status.compiled?.bundle.assertion_key_id)
        .then(async () => mcp.sync(status.compiled?.bundle.tool_servers ?? []))
        .then(async () => catalogue?.report());
      // A model endpoint not tried yet is reached now (no model call), and the heartbeat tells readiness at once.
      void probe.sync(status.compiled?.bundle.model_profile).then(async () => reportNow?.());
    },
  });
  // Every runtime call's failure goes through the loop's credential check (401/403 → forget, refuse).
  const credentialCheck = (e: unknown) => loop.credentialCheck(e);
  catalogue = new McpCatalogueReport({ servers: mcp, send: async (r) => client.reportMcpTools(r), onChanged: () => void loop.pollNow(), onError: credentialCheck, log });
  shipper = new AuditShipper({
    spool,
    client,
    log,
    owner: () => (status.bootstrap ? { installationId: status.bootstrap.installation.id, organizationId: status.bootstrap.organization_id } : null),
    onError: credentialCheck,
  });
  const ship = shipper;
  const stanzas = new StanzaPool();
  const budgets = new BudgetBook();
  const metrics = new ProxyMetrics({ spool, status, shipped: () => ship.shipped, shipping: ship, budgets });
  const recorder = new AuditRecorder({
    spool,
    status,
    replicaId,
    onAppend: (record, seconds) => {
      metrics.recordWritten(record, seconds);
      ship.wake();
    },
    stanzas,
  });
  const heartbeat = new Heartbeat({ client, status, log, replicaId, version: BUILD_VERSION, intervalMs: config.heartbeatIntervalMs, spoolDepth: () => spool.depth, onError: credentialCheck });
  reportNow = async () => heartbeat.beat();
  const decisions = new DecisionSummary({ log });
  const limits = new LimitsPoll({ client, book: budgets, log, intervalMs: config.limitsIntervalMs, ready: () => status.bootstrap !== null, onError: credentialCheck });
  // One pipeline for every governed call: the local API's chat and tool routes and the MCP gateway.
  let tracing: Tracing;
  try {
    tracing = startTracing(opts.otelEnv ?? process.env);
  } catch (e) {
    throw new StartError(`OpenTelemetry tracing cannot start: ${(e as Error).message}`);
  }
  if (tracing !== NO_TRACING) log.info("tracing on", { endpoint: redactUrlCredentials(tracingConfigUrl(opts.otelEnv ?? process.env)) });
  const { pipeline, leases } = daemonPipeline({
    status,
    recorder,
    client,
    decisions,
    book: budgets,
    rateRules: config.rateLimits,
    log,
    onRuntimeError: credentialCheck,
    onModelCallEnd: (e) => metrics.modelCallEnded(e),
    tracing,
  });
  const api = createLocalApi({
    token: config.token,
    frontendToken: config.frontendToken,
    status,
    pipeline,
    credentials,
    modelCa: ca,
    fetchImpl: modelFetch,
    spoolDepth: () => spool.depth,
    log,
    tracing,
    extraRoutes: [metricsRoute(metrics), replayRoute({ spool, wake: () => ship.wake(), log })],
  });

  loop.reloadPersisted();
  const oldUmask = process.umask(0o177);
  let server: Server<undefined>;
  try {
    // idleTimeout 0: a streamed answer may pause longer than the default 10 s between chunks.
    // No server-wide body limit: each route enforces its own while reading (json-body.ts) and
    // answers 413 in the local API's error format; Bun's own limit would answer a bare 413 and
    // close the connection. Bun discards the rest of an abandoned body without buffering it.
    server = Bun.serve({ unix: config.socketPath, fetch: api, idleTimeout: 0, maxRequestBodySize: Number.MAX_SAFE_INTEGER } as unknown as Parameters<typeof Bun.serve>[0]) as Server<undefined>;
  } catch (e) {
    await spool.close();
    lock.release();
    throw new StartError(`cannot listen on SVC_RUNTIME_SOCKET_PATH "${config.socketPath}": ${(e as Error).message}`);
  } finally {
    process.umask(oldUmask);
  }
  chmodSync(config.socketPath, 0o600);
  // The MCP gateway (issue 13): loopback TCP, identity from Open WebUI's session JWT.
  let gateway: Gateway | null = null;
  let gatewayServer: Server<undefined> | null = null;
  let mcpUrl: string | null = null;
  if (config.chatuiSecretKey) {
    const sessions = config.chatuiUrl ? new SessionChecks({ chatuiUrl: config.chatuiUrl, recheckMs: config.sessionRecheckMs, log }) : null;
    if (!sessions) log.warn("mcp sessions are checked by signature and expiry alone: SVC_PROXY_CHATUI_URL is not set, so a session Open WebUI revoked stays valid here until it expires");
    gateway = createMcpGateway({ status, pipeline, servers: mcp, secretKey: config.chatuiSecretKey, sessions, log, oauth: oauthUpstreams, tracing });
    try {
      gatewayServer = Bun.serve({ hostname: "127.0.0.1", port: config.mcpPort, fetch: gateway.fetch, idleTimeout: 0 }) as Server<undefined>;
    } catch (e) {
      await server.stop(true);
      await spool.close();
      lock.release();
      throw new StartError(`cannot listen on 127.0.0.1:${config.mcpPort} for the MCP gateway (SVC_PROXY_MCP_PORT): ${(e as Error).message}`);
    }
    mcpUrl = `http://127.0.0.1:${gatewayServer.port}${MCP_GATEWAY_PATH}`;
    log.info("mcp gateway listening", { url: mcpUrl });
  } else {
    log.info("mcp gateway off: CHATUI_SECRET_KEY is not set, so no session could be verified");
  }
  log.info("local api listening", { socket: config.socketPath, replica_id: replicaId, bundle_version: config.bundleVersion });
  let metricsServer: Server<undefined> | null = null;
  if (config.metricsListen) {
    try {
      metricsServer = serveMetrics(metrics, config.metricsListen) as Server<undefined>;
    } catch (e) {
      await server.stop(true);
      await spool.close();
      lock.release();
      throw new StartError(`cannot listen on SVC_PROXY_METRICS_LISTEN "${config.metricsListen.hostname}:${config.metricsListen.port}": ${(e as Error).message}`);
    }
    log.info("metrics listening", { url: metricsServer.url.href });
  }
  log.info("control plane", {
    url: redactUrlCredentials(config.controlPlaneUrl),
    egress_proxy: config.egressProxy ? redactUrlCredentials(config.egressProxy) : null,
    no_proxy: config.noProxy.join(",") || null,
  });

  ship.start();
  heartbeat.start();
  void loop.start().then(() => {
    void heartbeat.beat();
    limits.start();
    leases.start();
  });

  let shuttingDown: Promise<number> | null = null;
  return {
    status,
    spool,
    loop,
    shipper: ship,
    heartbeat,
    replicaId,
    mcpUrl,
    mcpSettled: async () => mcp.settled(),
    metrics,
    limits,
    metricsUrl: metricsServer ? new URL("/metrics", metricsServer.url).href : null,
    fatal: fatal.promise,
    async shutdown(deadlineMs = DRAIN_DEADLINE_MS) {
      shuttingDown ??= (async () => {
        const end = Date.now() + deadlineMs;
        loop.stop();
        heartbeat.stop();
        limits.stop();
        // Stop accepting and let requests in flight finish, but not past the deadline: a chat
        // stream may last minutes (idleTimeout 0) and would hold the exit forever. What is
        // left of the deadline goes to shipping; then open streams are cut.
        await Promise.race([server.stop(), Bun.sleep(deadlineMs)]);
        decisions.stop();
        stanzas.close();
        // What this replica still holds of the budgets goes back (calls still streaming keep theirs until cut).
        await Promise.race([leases.close(), Bun.sleep(Math.max(0, end - Date.now()))]);
        const left = await ship.drain(Math.max(0, end - Date.now()));
        await server.stop(true);
        await gatewayServer?.stop(true);
        await gateway?.close();
        await metricsServer?.stop(true);
        await mcp.close();
        await oauthUpstreams.close();
        await Promise.race([tracing.shutdown().catch(() => undefined), Bun.sleep(Math.max(0, end - Date.now()))]);
        await spool.close();
        lock.release();
        rmSync(config.socketPath, { force: true });
        log.info("stopped", { unshipped: left });
        return left;
      })();
      return shuttingDown;
    },
  };
}
