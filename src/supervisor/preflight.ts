// Preflight of `svc run` (spec §7 "Container start failures"): read and check the
// environment once, in the spec's order, before any child starts. Each refusal is one line
// beginning with the spec's message. A message quoting a URL quotes it with its password
// redacted: these lines end up in container logs.
import { accessSync, constants, mkdirSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Egress, egressFromEnv } from "../runtime-link/egress.ts";
import { packsFromEnv } from "../boot/tool-sync.ts";
import { redactUrlCredentials } from "../contract/egress.ts";

export const CONTAINER_UID = 10001;
export const CONTAINER_GID = 10001;
export const DEFAULT_STATE_DIR = "/var/lib/svc";
export const STATE_DIR_REFUSAL = "state directory is not a writable directory; refusing to start";

export class PreflightError extends Error {
  override name = "PreflightError";
}

export type RuntimeConfig = {
  stateDir: string;
  secretKey: string;
  token: string;
  controlPlaneUrl: string;
  socketPath: string;
  readyTimeoutMs: number;
  packs: string[];
  egress: Egress;
};

type Env = Record<string, string | undefined>;

function stateDirProblem(dir: string): string | null {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return `${dir} is not a directory`;
    return `${dir} does not exist and cannot be created (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
  let st;
  try {
    st = statSync(dir);
  } catch (e) {
    return `${dir} cannot be read (${(e as NodeJS.ErrnoException).code})`;
  }
  if (!st.isDirectory()) return `${dir} is not a directory`;
  const owner = `owner UID ${st.uid}, GID ${st.gid}, mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")}`;
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    const probe = join(dir, `.svc-write-probe-${process.pid}`);
    writeFileSync(probe, "");
    unlinkSync(probe);
  } catch {
    return `${dir} is not writable by UID ${process.getuid?.()} (${owner}); give the volume to UID/GID ${CONTAINER_UID} (fsGroup ${CONTAINER_GID})`;
  }
  return null;
}

function seconds(env: Env, name: string, def: number): number {
  const raw = env[name]?.trim();
  if (!raw) return def * 1000;
  const n = Number(raw.replace(/s$/, ""));
  if (!Number.isFinite(n) || n <= 0) throw new PreflightError(`${name} must be a positive number of seconds, not "${raw}"; refusing to start`);
  return Math.round(n * 1000);
}

/**
 * The checks in order: container user, state directory, secret key, runtime token,
 * control-plane URL. `uid` is the process's real UID (tests cannot fake it: they run the
 * supervisor under setpriv).
 */
export function preflight(env: Env, uid: number): RuntimeConfig {
  const stateDir = env.SVC_STATE_DIR?.trim() || DEFAULT_STATE_DIR;
  if (uid !== CONTAINER_UID) {
    throw new PreflightError(
      `${STATE_DIR_REFUSAL}: svc runs as UID ${CONTAINER_UID} (GID ${CONTAINER_GID}) and this process is UID ${uid}; set the container user (runAsUser, runAsGroup, fsGroup) to ${CONTAINER_UID}`,
    );
  }
  const problem = stateDirProblem(stateDir);
  if (problem) throw new PreflightError(`${STATE_DIR_REFUSAL}: ${problem} (SVC_STATE_DIR)`);
  const secretKey = env.CHATUI_SECRET_KEY ?? "";
  if (!secretKey.trim()) {
    throw new PreflightError("secret key not set; refusing to start: CHATUI_SECRET_KEY is empty (the front end's secret key, from a secret manager, the same for every replica)");
  }
  const token = env.SVC_RUNTIME_TOKEN?.trim() ?? "";
  if (!token) {
    throw new PreflightError("runtime token not set; refusing to start: SVC_RUNTIME_TOKEN is empty (the output of `svc bot credential`, from a secret manager)");
  }
  const controlPlaneUrl = env.SVC_RUNTIME_CONTROL_PLANE_URL?.trim() ?? "";
  if (!controlPlaneUrl) {
    throw new PreflightError("control-plane URL not set; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL is empty (the service's base URL, e.g. https://svc.example.com)");
  }
  const invalid = "control-plane URL is not valid; refusing to start: SVC_RUNTIME_CONTROL_PLANE_URL";
  let parsed: URL;
  try {
    parsed = new URL(controlPlaneUrl);
  } catch {
    throw new PreflightError(`${invalid} "${redactUrlCredentials(controlPlaneUrl)}" is not a URL`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new PreflightError(`${invalid} must be http(s), not ${parsed.protocol}`);
  }
  // The runtime token is the credential; a user or password in the URL would be sent nowhere
  // useful and written to logs. The proxy refuses it too, but only after it has started.
  if (parsed.username || parsed.password) {
    throw new PreflightError(`${invalid} "${redactUrlCredentials(controlPlaneUrl)}" carries a user name or password; remove them (SVC_RUNTIME_TOKEN is the only credential sent to the control plane)`);
  }
  return {
    stateDir,
    secretKey,
    token,
    controlPlaneUrl: controlPlaneUrl.replace(/\/+$/, ""),
    socketPath: env.SVC_RUNTIME_SOCKET_PATH?.trim() || join(stateDir, "proxy.sock"),
    readyTimeoutMs: seconds(env, "SVC_PROXY_READY_TIMEOUT", 60),
    packs: packsFromEnv(env.SVC_CHATUI_TOOL_PACKS),
    egress: egressFromEnv(env),
  };
}
