// `svc login`: sign the CLI in to a control plane. By default a browser approval like a device
// login (docs/api.md "Sign-in and svc login"): print the approve URL and user code, poll until an
// owner or admin approves, save the token. `--with-token` reads a token from stdin instead.
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import type { LoginRequest, LoginToken } from "../../contract/admin-api.ts";
import { AdminClient, ApiError, type Me } from "../shared/client.ts";
import { type CliConfig, normalizeBaseUrl, readCliEnv, readConfigFile, writeConfigFile } from "../shared/config.ts";
import { note, out } from "../shared/output.ts";
import { type StdinSecret, readStdinSecret } from "../shared/stdin-secret.ts";

const LABEL = "svc login";
const DEFAULT_INTERVAL_SECONDS = 2;

async function readStdinToken(url: string): Promise<string> {
  const secret: StdinSecret = { reader: "--with-token", what: "the API token", example: `printf %s "$TOKEN" | svc login --url ${url} --with-token` };
  const token = (await readStdinSecret(secret)).trim();
  if (/\s/.test(token)) throw new UsageError("stdin holds more than one word; pipe only the API token (svc_at_…)");
  return token;
}

async function browserLogin(url: string): Promise<string> {
  const anon = new AdminClient(url, null, LABEL, "login");
  const req = await anon.json<LoginRequest>("POST", "/auth/login-requests", { body: {}, auth: false });
  note(`! First copy your one-time code: ${req.user_code}`);
  note(`Open this URL in a browser where you are signed in as an organization owner or admin, check the code, and approve:\n  ${req.approve_url}`);
  note("Waiting for approval…");
  const intervalMs = Math.max(1, req.interval_seconds ?? DEFAULT_INTERVAL_SECONDS) * 1000;
  const expires = Date.parse(req.expires_at);
  for (;;) {
    try {
      const got = await anon.json<LoginToken>("POST", `/auth/login-requests/${encodeURIComponent(req.id)}/token`, { body: { poll_secret: req.poll_secret }, auth: false });
      return got.token;
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      if (e.code === "login_expired") throw new CommandFailure(`${LABEL}: the login request expired or was already used; run \`svc login\` again and approve within the time shown (login_expired)`);
      if (e.code !== "authorization_pending" && e.code !== "rate_limited" && e.code !== "unreachable") throw e;
    }
    if (Number.isFinite(expires) && Date.now() > expires) throw new CommandFailure(`${LABEL}: nobody approved the login request before it expired; run \`svc login\` again (login_expired)`);
    await Bun.sleep(intervalMs);
  }
}

export const loginCommand = command({
  meta: { name: "login", description: "Sign the CLI in to a control plane (browser approval, or a token on stdin)" },
  args: {
    url: { type: "string", description: "the control plane's base URL (default: SVC_CONTROL_PLANE_URL, then the saved URL)", valueHint: "url" },
    "with-token": { type: "boolean", description: "read an API token (svc_at_…) from stdin instead of approving in a browser" },
  },
  examples: ["svc login --url https://svc.example.com", "svc login --url https://svc.example.com --with-token < token.txt"],
  async run({ args }) {
    const env = readCliEnv();
    let saved: string | undefined;
    try {
      saved = readConfigFile(env.home)?.url;
    } catch {} // a broken config file is replaced by this login
    const rawUrl = args.url ?? env.controlPlaneUrl ?? saved;
    if (!rawUrl) throw new UsageError("missing required flag --url <url> (no SVC_CONTROL_PLANE_URL is set and no URL is saved); add it and run the command again");
    let url: string;
    try {
      url = normalizeBaseUrl(rawUrl);
    } catch (e) {
      // Name where the bad URL came from: only --url is on the command line.
      const where = args.url !== undefined ? "--url" : env.controlPlaneUrl !== undefined ? "SVC_CONTROL_PLANE_URL" : "the saved URL";
      throw new UsageError(`${where} ${(e as Error).message}${args.url !== undefined ? "" : " (or pass --url)"}`);
    }
    const token = args["with-token"] ? await readStdinToken(url) : await browserLogin(url);
    const me = await new AdminClient(url, token, LABEL, "login").json<Me>("GET", "/me");
    if (!me?.organization?.id) throw new CommandFailure(`${LABEL}: the control plane did not say which organization the token belongs to; check that --url points at the svc control plane`);
    if (me.role !== "owner" && me.role !== "admin") note(`warning: ${me.account.email} is a ${me.role} of ${me.organization.name}; admin commands need an owner or admin (forbidden)`);
    const config: CliConfig = { url, token, organization_id: me.organization.id, email: me.account.email };
    const file = writeConfigFile(env.home, config);
    out(`Logged in to ${url} as ${me.account.email} (${me.role} of ${me.organization.name}, ${me.organization.id}).`);
    note(`Saved to ${file} (mode 0600).`);
    if (me.token_expires_at) note(`The token expires at ${me.token_expires_at}; run \`svc login\` again to renew it.`);
  },
});
