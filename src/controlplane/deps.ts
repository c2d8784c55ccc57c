// What every control-plane module is built with: storage, key wrapping, configuration, clock
// and log. Passed down explicitly; nothing below reads the environment.
import type { Logger } from "../log/index.ts";
import type { Db } from "./db/index.ts";
import type { Kms } from "./kms/index.ts";

export type ControlPlaneConfig = {
  /** The URL users and runtimes reach the control plane at (claim links, login approval). */
  publicUrl: string;
  pollIntervalSeconds: number;
  heartbeatIntervalSeconds: number;
  claimTtlSeconds: number;
  sessionTtlSeconds: number;
  loginRequestTtlSeconds: number;
  /** Secure cookies unless the public URL is plain http on loopback. */
  secureCookies: boolean;
  /** PEM of an extra CA trusted by outbound calls to Entra ID / Microsoft Graph (SVC_CP_EXTRA_CA_FILE). */
  extraCaPem?: string;
};

export type ControlPlaneDeps = {
  db: Db;
  kms: Kms;
  config: ControlPlaneConfig;
  now: () => number;
  log: Logger;
};

export function defaultConfig(publicUrl: string): ControlPlaneConfig {
  const u = new URL(publicUrl);
  return {
    publicUrl: publicUrl.replace(/\/+$/, ""),
    pollIntervalSeconds: 60,
    heartbeatIntervalSeconds: 60,
    claimTtlSeconds: 15 * 60,
    sessionTtlSeconds: 12 * 3600,
    loginRequestTtlSeconds: 10 * 60,
    secureCookies: !(u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)),
  };
}
