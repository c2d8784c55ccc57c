// The chat front end (Open WebUI) as the supervisor starts it: its command, its environment
// (secret, switches forced off, offline defaults, svc_chatui on PYTHONPATH), waiting for the
// first admin, and seeding the service's functions through the front end's own Python.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { prependPythonPath } from "../guard-bridge/index.ts";

/** Forced to "false" whatever the environment says (spec §8; §1.9 no ungoverned tools). */
export const FORCED_OFF = [
  // the three alternative model providers: the Pipe is the only one
  "ENABLE_OPENAI_API",
  "ENABLE_OLLAMA_API",
  "ENABLE_DIRECT_CONNECTIONS",
  // users cannot add their own (ungoverned) tools
  "USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS",
  "USER_PERMISSIONS_WORKSPACE_TOOLS_IMPORT",
  // nothing installs at run time: no pip install from a function's front matter
  "ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS",
] as const;

/**
 * Forced to "true": tool servers are on so that Open WebUI reaches svc's MCP gateway (issue 13);
 * the seed makes it the only tool-server connection served, and the guard strips any other.
 */
export const FORCED_ON = ["ENABLE_TOOL_SERVERS"] as const;

/** Set unless the operator set them: a container without internet must still start. */
export const OFFLINE_DEFAULTS: Record<string, string> = {
  RAG_EMBEDDING_ENGINE: "openai",
  RAG_EMBEDDING_MODEL_AUTO_UPDATE: "false",
  RAG_RERANKING_MODEL_AUTO_UPDATE: "false",
  OFFLINE_MODE: "true",
  ENABLE_VERSION_UPDATE_CHECK: "false",
  ANONYMIZED_TELEMETRY: "false",
  DO_NOT_TRACK: "true",
  SCARF_NO_ANALYTICS: "true",
};

/**
 * Set unless the operator set them. Open WebUI hides a model from users (role "user") until an
 * admin grants access to it model by model; the Pipe's models would stay invisible to everyone
 * but admins. svc policy (`model:invoke`) decides who may use a model, so the front end's own
 * per-model access lists are bypassed by default.
 */
export const GOVERNANCE_DEFAULTS: Record<string, string> = {
  BYPASS_MODEL_ACCESS_CONTROL: "true",
};

/**
 * Variables the front end must not see: the runtime token (code in the front end could take it
 * off the box and act as the installation at the control plane: fetch the digest key, register a
 * replica to receive the model API key, send audit records; docs/frontend-boundary.md), and the
 * control-plane settings, the proxy's business. CHATUI_SECRET_KEY reaches it as WEBUI_SECRET_KEY.
 */
const WITHHELD = ["SVC_RUNTIME_TOKEN", "CHATUI_SECRET_KEY", "SVC_RUNTIME_CONTROL_PLANE_URL", "SVC_PROXY_EGRESS_PROXY", "SVC_PROXY_NO_PROXY", "SVC_FRONTEND_TOKEN"];

/** What the front end presents on the proxy's socket; the proxy accepts it besides the runtime token. */
export const FRONTEND_TOKEN_ENV = "SVC_FRONTEND_TOKEN";

/** A fresh credential for one boot: it means nothing off this box, nor after a restart. */
export function newFrontendToken(): string {
  return `svc_fe_${randomBytes(32).toString("base64url")}`;
}

/** The environment without the container's secrets, for Python run from the packs (the manifest export). Pure. */
export function withoutSecrets(base: Env): Env {
  return Object.fromEntries(Object.entries(base).filter(([k]) => !WITHHELD.includes(k)));
}

export const DEFAULT_COMMAND = "open-webui serve --host {host} --port {port}";

export type FrontendConfig = {
  host: string;
  port: number;
  /** argv, placeholders {host} and {port} replaced. */
  command: string[];
  /** The front end's Python, for the export and the seed. */
  python: string;
  dataDir: string;
  /**
   * Where Open WebUI copies its favicon, splash and loader at every start (its STATIC_DIR).
   * Upstream's default is inside its own package, read-only for UID 10001 (a read-only root, a
   * venv owned by root): each copy then logs an ERROR. The state volume is writable.
   */
  staticDir: string;
  /** Where the supervisor polls /api/config. */
  localUrl: string;
};

type Env = Record<string, string | undefined>;

export function frontendConfig(env: Env, stateDir: string): FrontendConfig {
  const host = env.SVC_CHATUI_HOST?.trim() || "0.0.0.0";
  const port = Number(env.SVC_CHATUI_PORT?.trim() || "8080");
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`SVC_CHATUI_PORT must be a port number, not "${env.SVC_CHATUI_PORT}"`);
  const template = env.SVC_CHATUI_COMMAND?.trim() || DEFAULT_COMMAND;
  const command = template
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w.replaceAll("{host}", host).replaceAll("{port}", String(port)));
  const pollHost = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return {
    host,
    port,
    command,
    python: env.SVC_CHATUI_PYTHON?.trim() || pythonBeside(command[0]!, env.PATH),
    dataDir: env.DATA_DIR?.trim() || join(stateDir, "chatui"),
    staticDir: env.STATIC_DIR?.trim() || join(stateDir, "chatui-static"),
    localUrl: `http://${pollHost.includes(":") ? `[${pollHost}]` : pollHost}:${port}`,
  };
}

/** A venv's `bin/open-webui` has its `bin/python` beside it; otherwise `python3`. */
export function pythonBeside(program: string, path: string | undefined): string {
  const resolved = program.includes("/") ? program : Bun.which(program, { PATH: path ?? "" });
  if (resolved) {
    const candidate = join(dirname(resolved), "python");
    if (existsSync(candidate)) return candidate;
  }
  return "python3";
}

export type FrontendEnv = { env: Record<string, string>; ignored: string[] };

/** The front end's environment (pure). `ignored` lists overrides that were refused. */
export function frontendEnv(base: Env, opts: { secretKey: string; dataDir: string; staticDir: string; pythonRoot: string; socketPath: string; frontendToken: string; mcpUrl?: string }): FrontendEnv {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !WITHHELD.includes(k)) env[k] = v;
  const ignored: string[] = [];
  for (const name of FORCED_OFF) {
    const given = base[name];
    if (given !== undefined && given.trim().toLowerCase() !== "false") ignored.push(`${name}=${given}`);
    env[name] = "false";
  }
  for (const name of FORCED_ON) {
    const given = base[name];
    if (given !== undefined && given.trim().toLowerCase() !== "true") ignored.push(`${name}=${given}`);
    env[name] = "true";
  }
  // The Open WebUI base image sets WEBUI_SECRET_KEY="": only a real other value is worth a warning.
  if (base.WEBUI_SECRET_KEY?.trim() && base.WEBUI_SECRET_KEY !== opts.secretKey) ignored.push("WEBUI_SECRET_KEY (CHATUI_SECRET_KEY is used)");
  env.WEBUI_SECRET_KEY = opts.secretKey;
  for (const [k, v] of Object.entries({ ...OFFLINE_DEFAULTS, ...GOVERNANCE_DEFAULTS })) if (env[k] === undefined) env[k] = v;
  env.DATA_DIR = opts.dataDir;
  env.STATIC_DIR = opts.staticDir;
  env.PYTHONPATH = prependPythonPath([opts.pythonRoot], base.PYTHONPATH);
  env.SVC_RUNTIME_SOCKET_PATH = opts.socketPath;
  env[FRONTEND_TOKEN_ENV] = opts.frontendToken;
  // The seed writes it as the one MCP connection; the guard lets `server:mcp:svc` through.
  if (opts.mcpUrl) env.SVC_MCP_GATEWAY_URL = opts.mcpUrl;
  env.PYTHONUNBUFFERED = "1";
  return { env, ignored };
}

/** `onboarding` of the unauthenticated /api/config: true while nobody has signed up. */
export async function onboardingState(localUrl: string): Promise<"down" | "onboarding" | "ready"> {
  try {
    const res = await fetch(`${localUrl}/api/config`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) return "down";
    const doc = (await res.json()) as { onboarding?: boolean };
    return doc.onboarding === true ? "onboarding" : "ready";
  } catch {
    return "down";
  }
}
