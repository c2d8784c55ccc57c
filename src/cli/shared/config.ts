// Where the admin CLI keeps its sign-in (~/.config/svc/config.json: url, token, organization
// id; file 0600, directory 0700) and the one place the CLI reads its environment:
// SVC_CONTROL_PLANE_URL and SVC_TOKEN override the file for automation (the organization id
// then comes from GET /api/v1/me), CHATUI_ADMIN_TOKEN is the front end's admin token for
// `svc harness sync`. $HOME decides the config directory, so tests can point it at a temp dir.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CommandFailure } from "../../command/index.ts";
import { type BaseUrlOpts, checkBaseUrl, urlProblemText } from "./base-url.ts";

export const CONFIG_DIR_MODE = 0o700;
export const CONFIG_FILE_MODE = 0o600;
export const SECRET_FILE_MODE = 0o600;

/** What `svc login` saves. */
export type CliConfig = { url: string; token: string; organization_id: string; email?: string };

/** The environment the admin CLI reads, read once. */
export type CliEnv = {
  home: string;
  controlPlaneUrl?: string;
  token?: string;
  chatuiAdminToken?: string;
};

/** What the control plane's URL is checked as: the admin token travels to it. */
export const CONTROL_PLANE_URL_RULE: BaseUrlOpts = { owner: "the control plane", secret: "your admin token", example: "https://svc.example.com" };

export function readCliEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  const nonEmpty = (v: string | undefined) => (v && v.trim() ? v.trim() : undefined);
  return {
    home: nonEmpty(env.HOME) ?? homedir(),
    controlPlaneUrl: nonEmpty(env.SVC_CONTROL_PLANE_URL),
    token: nonEmpty(env.SVC_TOKEN),
    chatuiAdminToken: nonEmpty(env.CHATUI_ADMIN_TOKEN),
  };
}

export function configDir(home: string): string {
  return join(home, ".config", "svc");
}
export function configPath(home: string): string {
  return join(configDir(home), "config.json");
}
/** Default file of the audit identity made by `svc audit keys create`. */
export function defaultIdentityPath(home: string): string {
  return join(configDir(home), "audit-identity.txt");
}

/** "~/x" → "<home>/x", for paths passed as --flag=~/x, where the shell leaves "~" alone. Pure. */
export function expandHome(path: string, home: string): string {
  return path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** Creates a directory (and parents) that only the owner can enter, tightening it if it exists. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: CONFIG_DIR_MODE });
  chmodSync(dir, CONFIG_DIR_MODE);
}

/** The control plane's base URL without trailing slashes (rule in base-url.ts); a path like /api/v1 is refused too. */
export function normalizeBaseUrl(raw: string): string {
  const check = checkBaseUrl(raw, CONTROL_PLANE_URL_RULE);
  if (!check.ok) throw new CommandFailure(urlProblemText(check));
  if (/\/api\/v1$/.test(check.url)) throw new CommandFailure(urlProblemText({ shown: check.url, problem: "ends in /api/v1", fix: "pass the base URL without it" }));
  return check.url;
}

export function readConfigFile(home: string): CliConfig | null {
  const file = configPath(home);
  if (!existsSync(file)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    throw new CommandFailure(`${file} is not valid JSON; delete it and run \`svc login\` again`);
  }
  const c = parsed as Partial<CliConfig>;
  if (typeof c.url !== "string" || typeof c.token !== "string" || typeof c.organization_id !== "string") {
    throw new CommandFailure(`${file} lacks url, token or organization_id; run \`svc login\` again`);
  }
  return { url: c.url, token: c.token, organization_id: c.organization_id, ...(typeof c.email === "string" ? { email: c.email } : {}) };
}

/** Writes the config atomically with mode 0600 in a 0700 directory. */
export function writeConfigFile(home: string, config: CliConfig): string {
  const file = configPath(home);
  ensurePrivateDir(dirname(file));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: CONFIG_FILE_MODE });
  chmodSync(tmp, CONFIG_FILE_MODE);
  renameSync(tmp, file);
  return file;
}

/** Where the CLI's credentials come from: the env pair, or the config file. */
export type Credentials = { url: string; token: string; organizationId: string | null; source: "env" | "file" };

/**
 * The credentials to call the admin API with. Either environment variable overrides the file;
 * the organization id is then unknown here (null) and is looked up with GET /me.
 */
export function resolveCredentials(env: CliEnv): Credentials {
  const file = env.controlPlaneUrl && env.token ? null : readConfigFile(env.home);
  if (env.controlPlaneUrl || env.token) {
    const url = env.controlPlaneUrl ?? file?.url;
    // A saved token goes only to the control plane it was saved for (as gh keys tokens by host):
    // SVC_CONTROL_PLANE_URL naming another one does not get it.
    if (!env.token && file && env.controlPlaneUrl && !sameOrigin(env.controlPlaneUrl, file.url)) {
      throw new CommandFailure(
        `SVC_CONTROL_PLANE_URL (${env.controlPlaneUrl}) is not the control plane the saved token belongs to (${file.url}); set SVC_TOKEN for it or run \`svc login --url ${env.controlPlaneUrl}\``,
      );
    }
    const token = env.token ?? file?.token;
    if (!url) throw new CommandFailure("SVC_TOKEN is set but no control-plane URL is known; set SVC_CONTROL_PLANE_URL too or run `svc login --url <url>`");
    if (!token) throw new CommandFailure("SVC_CONTROL_PLANE_URL is set but no token is known; set SVC_TOKEN too or run `svc login`");
    const where = env.controlPlaneUrl ? "SVC_CONTROL_PLANE_URL" : `the URL saved in ${configPath(env.home)}`;
    return { url: checkedUrl(url, where), token, organizationId: null, source: "env" };
  }
  if (!file) throw new CommandFailure("not signed in; run `svc login --url <control-plane-url>` (or set SVC_CONTROL_PLANE_URL and SVC_TOKEN)");
  return { url: checkedUrl(file.url, `the URL saved in ${configPath(env.home)}`), token: file.token, organizationId: file.organization_id, source: "file" };
}

/** Whether two base URLs have the same scheme, host and port (unparsable ones never match). */
export function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** normalizeBaseUrl, with a refusal that names where the URL came from. */
function checkedUrl(raw: string, where: string): string {
  try {
    return normalizeBaseUrl(raw);
  } catch (e) {
    if (!(e instanceof CommandFailure)) throw e;
    const fix = where === "SVC_CONTROL_PLANE_URL" ? "set SVC_CONTROL_PLANE_URL to the control plane's base URL" : "run `svc login --url <control-plane-url>` again";
    throw new CommandFailure(`${where} is not usable: ${e.message.split("; ")[0]}; ${fix}`);
  }
}
