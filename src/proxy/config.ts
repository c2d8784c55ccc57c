// The proxy daemon's configuration: the one place `svc proxy serve` reads the environment.
// Every variable is validated at start with a message that names it; the rest of the daemon
// receives a typed ProxyConfig and never touches process.env.
import { parseRateRules, type RateRule } from "./policy/rate-limits.ts";
import { isAbsolute, join } from "node:path";
import { BUNDLE_VERSIONS, type BundleVersion } from "../contract/bundle.ts";
import { parseNoProxy, redactUrlCredentials } from "../contract/egress.ts";
import { DEFAULT_LOW_SPACE_BYTES } from "./audit/spool-space.ts";

export const ENV = {
  token: "SVC_RUNTIME_TOKEN",
  /** The front end's credential on the socket for this boot (`svc run` makes it), accepted besides the runtime token. */
  frontendToken: "SVC_FRONTEND_TOKEN",
  controlPlaneUrl: "SVC_RUNTIME_CONTROL_PLANE_URL",
  socketPath: "SVC_RUNTIME_SOCKET_PATH",
  stateDir: "SVC_PROXY_STATE_DIR",
  audit: "SVC_PROXY_AUDIT",
  heartbeatInterval: "SVC_PROXY_HEARTBEAT_INTERVAL",
  pollInterval: "SVC_PROXY_POLL_INTERVAL",
  bundleVersion: "SVC_PROXY_BUNDLE_VERSION",
  egressProxy: "SVC_PROXY_EGRESS_PROXY",
  noProxy: "SVC_PROXY_NO_PROXY",
  caFile: "SVC_PROXY_CA_FILE",
  /** Read by Bun at process start: extra CAs in the default store (see caInDefaultStore). */
  extraCaCerts: "NODE_EXTRA_CA_CERTS",
  auditLowSpace: "SVC_PROXY_AUDIT_LOW_SPACE",
  /** The front end's session secret: the MCP gateway verifies Open WebUI's session JWTs with it. */
  chatuiSecretKey: "CHATUI_SECRET_KEY",
  /** Loopback TCP port of the MCP gateway (0: any free port; the default when unset). */
  mcpPort: "SVC_PROXY_MCP_PORT",
  /** Open WebUI's own URL on loopback: the gateway asks it whether a session is still valid (issue 31). */
  chatuiUrl: "SVC_PROXY_CHATUI_URL",
  /** How long Open WebUI's answer on a session holds before it is asked again. */
  sessionRecheck: "SVC_PROXY_SESSION_RECHECK",
  /** Non-public addresses MCP servers and the model endpoint may have (issue 31): hosts, addresses, CIDR blocks, or `*`. */
  allowPrivateOutbound: "SVC_PROXY_ALLOW_PRIVATE_OUTBOUND",
  metricsListen: "SVC_PROXY_METRICS_LISTEN",
  limitsInterval: "SVC_PROXY_LIMITS_INTERVAL",
  rateLimits: "SVC_PROXY_RATE_LIMITS",
  /** The container's state directory (the supervisor's); the proxy keeps its own under it. */
  containerStateDir: "SVC_STATE_DIR",
} as const;

export const DEFAULT_CONTAINER_STATE_DIR = "/var/lib/svc";
export const DEFAULT_HEARTBEAT_MS = 60_000;
/** N of issue 31: a session Open WebUI revoked is refused by the gateway within this long. */
export const DEFAULT_SESSION_RECHECK_MS = 15_000;
/** Budgets and their spend are fetched this often by default (docs/proxy.md "Budgets"). */
export const DEFAULT_LIMITS_INTERVAL_MS = 15_000;

export type ProxyConfig = {
  token: string;
  /**
   * What the front end presents on the socket instead of the runtime token (`svc run` makes one
   * per boot, docs/frontend-boundary.md); null: only the runtime token is accepted.
   */
  frontendToken: string | null;
  /** Base URL with no path suffix and no trailing slash; the runtime appends /api/v1/… */
  controlPlaneUrl: string;
  socketPath: string;
  stateDir: string;
  /** The audit spool directory. */
  auditSpoolDir: string;
  /** Below this many free bytes on the spool's filesystem the proxy warns (state `low`). */
  auditLowSpaceBytes: number;
  heartbeatIntervalMs: number;
  /** Override of the bundle poll interval (tests, operators); null = what bootstrap says (≈60 s). */
  pollIntervalMs: number | null;
  bundleVersion: BundleVersion;
  egressProxy: string | null;
  noProxy: string[];
  caFile: string | null;
  /**
   * NODE_EXTRA_CA_CERTS names the same file as SVC_PROXY_CA_FILE, so Bun put it in the default
   * store at process start (svc run sets it so): calls need no per-call `tls.ca`, which made Bun
   * build a TLS context of every system root plus the file on each forwarded call (~0.3 ms).
   */
  caInDefaultStore: boolean;
  /** CHATUI_SECRET_KEY; null when unset, and then the MCP gateway does not listen. */
  chatuiSecretKey: string | null;
  /** The MCP gateway's loopback port (0: any free one). */
  mcpPort: number;
  /** SVC_PROXY_CHATUI_URL (no trailing slash); null: sessions are checked by signature and claims alone. */
  chatuiUrl: string | null;
  /** SVC_PROXY_SESSION_RECHECK in ms (default 15 s). */
  sessionRecheckMs: number;
  /** SVC_PROXY_ALLOW_PRIVATE_OUTBOUND, split; empty: only public addresses. */
  allowPrivateOutbound: string[];
  /** Where GET /metrics is also served over TCP (no token), e.g. 127.0.0.1:9464; null = the unix socket only. */
  metricsListen: { hostname: string; port: number } | null;
  /** How often budgets and their spend are fetched (GET /runtime/limits). */
  limitsIntervalMs: number;
  /** Requests-per-minute rules (SVC_PROXY_RATE_LIMITS); empty = none. */
  rateLimits: RateRule[];
};

/** `host:port`, `[v6]:port` or `:port` (all interfaces); port 0 picks a free one (tests). */
export function parseListen(name: string, raw: string): { hostname: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]*)):(\d{1,5})$/.exec(raw);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ConfigError(`${name} "${raw}" is not host:port (e.g. 127.0.0.1:9464, [::1]:9464, :9464)`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port };
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "30s", "1m", "1m30s", "250ms", "2h"; a bare number is seconds. Returns milliseconds or null. */
const SIZE_UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** A size: bare bytes, or with a binary unit (`64MiB`, `512k`, `1GiB`); null when not one. */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Math.round(Number(m[1]) * unit) : null;
}

export function parseDuration(text: string): number | null {
  const s = text.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (matched === 0 || matched !== s.length) return null;
  return Math.round(total);
}

/** Refuses what would fail later with a puzzling 404: the runtime appends /api/v1 itself. */
export function parseControlPlaneUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${ENV.controlPlaneUrl} "${redactUrlCredentials(raw)}" is not a URL`);
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") throw new ConfigError(`${ENV.controlPlaneUrl} must be an http(s) URL, got "${u.protocol}"`);
  if (u.username || u.password) throw new ConfigError(`${ENV.controlPlaneUrl} must not carry credentials`);
  if (u.search || u.hash) throw new ConfigError(`${ENV.controlPlaneUrl} must not have a query or fragment`);
  const path = u.pathname.replace(/\/+$/, "");
  if (/\/api\/v1$/i.test(path) || /\/api\/v1\//i.test(`${path}/`)) {
    throw new ConfigError(
      `${ENV.controlPlaneUrl} "${raw}" ends in /api/v1; give the control plane's base URL without it (the runtime appends /api/v1/... itself), e.g. ${u.origin}${path.replace(/\/api\/v1.*$/i, "")}`,
    );
  }
  return `${u.origin}${path}`;
}

function absolute(name: string, value: string): string {
  if (!isAbsolute(value)) throw new ConfigError(`${name} must be an absolute path, got "${value}"`);
  return value;
}

export function loadConfig(env: Record<string, string | undefined>): ProxyConfig {
  const get = (k: string) => {
    const v = env[k];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  };
  const token = get(ENV.token);
  if (!token) throw new ConfigError(`${ENV.token} is not set: the runtime credential from \`svc bot credential\` is required`);
  const frontendToken = get(ENV.frontendToken) ?? null;
  if (frontendToken !== null && frontendToken.length < 32) throw new ConfigError(`${ENV.frontendToken} is too short to be a credential (at least 32 characters; \`svc run\` makes one per boot)`);
  if (frontendToken === token) throw new ConfigError(`${ENV.frontendToken} must differ from ${ENV.token}: the front end must not hold the runtime token`);
  const cpRaw = get(ENV.controlPlaneUrl);
  if (!cpRaw) throw new ConfigError(`${ENV.controlPlaneUrl} is not set: the control plane's base URL (no /api/v1 suffix) is required`);
  const controlPlaneUrl = parseControlPlaneUrl(cpRaw);

  const stateDir = absolute(ENV.stateDir, get(ENV.stateDir) ?? join(get(ENV.containerStateDir) ?? DEFAULT_CONTAINER_STATE_DIR, "proxy"));
  const socketPath = absolute(ENV.socketPath, get(ENV.socketPath) ?? join(stateDir, "proxy.sock"));
  const auditSpoolDir = absolute(ENV.audit, get(ENV.audit) ?? join(stateDir, "audit-spool"));

  const duration = (name: string, raw: string | undefined, fallback: number | null, minMs: number) => {
    if (raw === undefined) return fallback;
    const ms = parseDuration(raw);
    if (ms === null) throw new ConfigError(`${name} "${raw}" is not a duration (examples: 30s, 1m, 1m30s)`);
    if (ms < minMs) throw new ConfigError(`${name} "${raw}" is shorter than the minimum ${minMs} ms`);
    return ms;
  };
  const heartbeatIntervalMs = duration(ENV.heartbeatInterval, get(ENV.heartbeatInterval), DEFAULT_HEARTBEAT_MS, 100)!;
  const pollIntervalMs = duration(ENV.pollInterval, get(ENV.pollInterval), null, 50);
  const limitsIntervalMs = duration(ENV.limitsInterval, get(ENV.limitsInterval), DEFAULT_LIMITS_INTERVAL_MS, 50)!;

  const bv = get(ENV.bundleVersion) ?? "1";
  const bundleVersion = Number(bv) as BundleVersion;
  if (!BUNDLE_VERSIONS.includes(bundleVersion) || !/^\d$/.test(bv)) throw new ConfigError(`${ENV.bundleVersion} must be 1 or 2, got "${bv}"`);

  const egress = get(ENV.egressProxy) ?? null;
  if (egress !== null) {
    try {
      const u = new URL(egress);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
    } catch {
      throw new ConfigError(`${ENV.egressProxy} "${redactUrlCredentials(egress)}" is not an http(s) proxy URL (e.g. http://proxy.internal:3128)`);
    }
  }
  const caFile = get(ENV.caFile) ?? null;
  if (caFile !== null) absolute(ENV.caFile, caFile);
  const lowRaw = get(ENV.auditLowSpace);
  const auditLowSpaceBytes = lowRaw === undefined ? DEFAULT_LOW_SPACE_BYTES : parseSize(lowRaw);
  if (auditLowSpaceBytes === null) throw new ConfigError(`${ENV.auditLowSpace} "${lowRaw}" is not a size (examples: 64MiB, 512KiB, 1GiB, 1048576)`);
  let rateLimits: RateRule[] = [];
  try {
    rateLimits = parseRateRules(get(ENV.rateLimits) ?? "");
  } catch (e) {
    throw new ConfigError(`${ENV.rateLimits}: ${(e as Error).message}`);
  }
  const listenRaw = get(ENV.metricsListen);
  const metricsListen = listenRaw === undefined ? null : parseListen(ENV.metricsListen, listenRaw);

  const mcpRaw = get(ENV.mcpPort) ?? "0";
  const mcpPort = Number(mcpRaw);
  if (!/^\d+$/.test(mcpRaw) || mcpPort > 65535) throw new ConfigError(`${ENV.mcpPort} must be a port number (0 for any free port), got "${mcpRaw}"`);

  const chatuiRaw = get(ENV.chatuiUrl);
  let chatuiUrl: string | null = null;
  if (chatuiRaw !== undefined) {
    let u: URL;
    try {
      u = new URL(chatuiRaw);
    } catch {
      throw new ConfigError(`${ENV.chatuiUrl} must be Open WebUI's URL (http://127.0.0.1:<port>), got "${chatuiRaw}"`);
    }
    if (!/^https?:$/.test(u.protocol) || u.search || u.hash || u.username) throw new ConfigError(`${ENV.chatuiUrl} must be an http(s) URL with no credentials, query or fragment, got "${chatuiRaw}"`);
    chatuiUrl = `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
  }
  const recheckRaw = get(ENV.sessionRecheck);
  const sessionRecheckMs = recheckRaw === undefined ? DEFAULT_SESSION_RECHECK_MS : parseDuration(recheckRaw);
  if (sessionRecheckMs === null || sessionRecheckMs > 300_000) throw new ConfigError(`${ENV.sessionRecheck} must be a duration of at most 5m (e.g. 15s), got "${recheckRaw}"`);
  const allowPrivateOutbound = (get(ENV.allowPrivateOutbound) ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

  return {
    chatuiUrl,
    sessionRecheckMs,
    allowPrivateOutbound,
    rateLimits,
    metricsListen,
    limitsIntervalMs,
    token,
    frontendToken,
    controlPlaneUrl,
    socketPath,
    stateDir,
    auditSpoolDir,
    auditLowSpaceBytes,
    heartbeatIntervalMs,
    pollIntervalMs,
    bundleVersion,
    egressProxy: egress,
    noProxy: parseNoProxy(get(ENV.noProxy)),
    caFile,
    caInDefaultStore: caFile !== null && get(ENV.extraCaCerts) === caFile,
    chatuiSecretKey: env[ENV.chatuiSecretKey] || null,
    mcpPort,
  };
}

/** The socket path as `svc proxy serve` would compute it (for `svc policy show`). */
export function socketPathFrom(env: Record<string, string | undefined>): string {
  const get = (k: string) => env[k]?.trim() || undefined;
  const stateDir = get(ENV.stateDir) ?? join(get(ENV.containerStateDir) ?? DEFAULT_CONTAINER_STATE_DIR, "proxy");
  return get(ENV.socketPath) ?? join(stateDir, "proxy.sock");
}
