// `svc harness sync --harness chatui --url <frontend_url>`: read-only check that the front end
// has svc's functions installed and switched on (spec §4). Exit 0 in sync, 1 on drift. It reads
// Open WebUI's GET /api/v1/functions/ with the admin token in CHATUI_ADMIN_TOKEN and changes
// nothing: the container's boot step is what installs and activates the functions.
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { redactUrlCredentials } from "../../contract/egress.ts";
import { type BaseUrlOpts, checkBaseUrl, urlProblemText } from "../shared/base-url.ts";
import { readCliEnv } from "../shared/config.ts";
import { type FrontEndFunction, GUARD_ID, PIPE_ID, harnessDrift, parseFunctionList, parseToolServers, type ToolServerConnection, toolServerDrift } from "./drift.ts";
import { jsonFlag, out, printJson } from "../shared/output.ts";

const LABEL = "svc harness sync";
export const HARNESSES = ["chatui"] as const;
const TIMEOUT_MS = 30_000;

/** The front end's URL: CHATUI_ADMIN_TOKEN goes to it, so the same rule as `svc login --url`. */
const FRONT_END_URL_RULE: BaseUrlOpts = { owner: "the front end", secret: "CHATUI_ADMIN_TOKEN", example: "https://chat.example.com" };

function frontEndUrl(raw: string): string {
  const check = checkBaseUrl(raw, FRONT_END_URL_RULE);
  if (!check.ok) throw new UsageError(`--url ${urlProblemText(check)}`);
  return check.url;
}

async function fetchFunctions(base: string, token: string): Promise<FrontEndFunction[]> {
  const url = `${base}/api/v1/functions/`;
  let res: Response;
  try {
    // Redirects are not followed: the token would go wherever the front end points, http too.
    res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: "application/json" }, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "manual" });
  } catch (e) {
    throw new CommandFailure(`${LABEL}: cannot reach the front end at ${base} (${(e as Error).message}); check --url`);
  }
  if (res.status >= 300 && res.status < 400) {
    const to = res.headers.get("location");
    const where = to ? ` to ${redactUrlCredentials(URL.parse(to, url)?.href ?? to)}` : "";
    throw new CommandFailure(
      `${LABEL}: GET ${url} answered HTTP ${res.status}, a redirect${where}; redirects are not followed, so that CHATUI_ADMIN_TOKEN goes nowhere else: pass the URL the front end is served at as --url`,
    );
  }
  if (res.status === 401 || res.status === 403) {
    throw new CommandFailure(`${LABEL}: the front end refused CHATUI_ADMIN_TOKEN (HTTP ${res.status}); set it to a valid admin JWT or API key of ${base}`);
  }
  if (!res.ok) throw new CommandFailure(`${LABEL}: GET ${url} answered HTTP ${res.status}; check that --url is the front end's base URL`);
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new CommandFailure(`${LABEL}: GET ${url} did not return JSON; check that --url is the front end's base URL`);
  }
  const list = parseFunctionList(body);
  if (!list) throw new CommandFailure(`${LABEL}: GET ${url} did not return a list of functions; check that --url points at the chat front end`);
  return list;
}

/** The front end's tool-server connections; [] when it has no such endpoint (older front ends). */
async function fetchToolServers(base: string, token: string): Promise<ToolServerConnection[]> {
  const url = `${base}/api/v1/configs/tool_servers`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: "application/json" }, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "manual" });
  } catch (e) {
    throw new CommandFailure(`${LABEL}: cannot reach the front end at ${base} (${(e as Error).message}); check --url`);
  }
  if (res.status === 404) return [];
  if (!res.ok) throw new CommandFailure(`${LABEL}: GET ${url} answered HTTP ${res.status}; the tool-server connections could not be checked`);
  const list = parseToolServers(await res.json().catch(() => null));
  if (!list) throw new CommandFailure(`${LABEL}: GET ${url} did not return the tool-server connections; check that --url points at the chat front end`);
  return list;
}

const sync = command({
  meta: { name: "sync", description: "Check (read-only) that the front end has the Pipe and svc_guard installed and active; exit 1 on drift" },
  args: {
    harness: { type: "string", required: true, description: 'the front end kind; "chatui"', valueHint: "chatui" },
    url: { type: "string", required: true, description: "the front end's base URL (admin token in CHATUI_ADMIN_TOKEN)", valueHint: "frontend_url" },
    ...jsonFlag,
  },
  examples: [
    "svc harness sync --harness chatui --url https://chat.example.com   # with CHATUI_ADMIN_TOKEN exported",
    "CHATUI_ADMIN_TOKEN=$(cat admin.jwt) svc harness sync --harness chatui --url https://chat.example.com --json",
  ],
  async run({ args }) {
    if (!(HARNESSES as readonly string[]).includes(args.harness)) throw new UsageError(`--harness must be "chatui", not "${args.harness}"`);
    const base = frontEndUrl(args.url);
    const token = readCliEnv().chatuiAdminToken;
    if (!token) {
      throw new CommandFailure(`${LABEL}: CHATUI_ADMIN_TOKEN is not set; export an admin JWT or API key of the front end in it (Settings > Account) and run it again`);
    }
    const functions = await fetchFunctions(base, token);
    const drifts = [...harnessDrift(functions), ...toolServerDrift(await fetchToolServers(base, token))];
    if (args.json) {
      printJson({ harness: args.harness, url: base, in_sync: drifts.length === 0, drifts });
    } else if (drifts.length === 0) {
      out(`In sync: Pipe ${PIPE_ID} is active and filter ${GUARD_ID} is active and global at ${base}; no tool server but svc's.`);
    } else {
      for (const d of drifts) out(`drift: ${d.message}`);
    }
    if (drifts.length > 0) {
      const hint = functions.length === 0 ? " (the front end lists no functions at all: are plugins disabled by ENABLE_PLUGINS=false or SAFE_MODE?)" : "";
      throw new CommandFailure(
        `${LABEL}: ${drifts.length} drift(s) at ${base}${hint}; restart the runtime container so its boot step re-seeds the functions, or fix them in the front end's Admin Panel > Functions (drift)`,
      );
    }
  },
});

export const harnessCommand = command({
  meta: { name: "harness", description: "The chat front end (harness) svc is installed into" },
  examples: ["svc harness sync --harness chatui --url https://chat.example.com"],
  subCommands: { sync },
});
