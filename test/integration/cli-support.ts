// Shared by the cli-*.test.ts files: run the svc binary as an admin would (fresh $HOME, the
// control plane's URL and token in SVC_CONTROL_PLANE_URL / SVC_TOKEN unless a test signs in
// through the config file), and call the control plane's API directly to set up and check.
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { newId } from "../../src/contract/ids.ts";
import { type ControlPlaneProcess, callApi, cleanup, svcCommand } from "../support/controlplane-process.ts";

export type Run = { code: number; stdout: string; stderr: string };
export type RunOpts = { env?: Record<string, string | undefined>; stdin?: string | Uint8Array; home?: string; auth?: boolean };

export function tempHome(): string {
  return mkdtempSync(join(tmpdir(), "svc-cli-home-"));
}

/** Fresh $HOMEs for a test file's tests: `home()` makes one, `removeHomes()` (in afterAll) removes all it made. */
export function tempHomes(): { home: () => string; removeHomes: () => void } {
  const made: string[] = [];
  return {
    home() {
      const h = tempHome();
      made.push(h);
      return h;
    },
    removeHomes() {
      for (const h of made.splice(0)) cleanup(h);
    },
  };
}

/** The files under `dir`, at any depth, whose bytes hold `secret` (a secret the control plane must never store in plain text: expect none). */
export function filesHolding(dir: string, secret: string): string[] {
  const needle = Buffer.from(secret);
  const under = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? under(join(d, n)) : [join(d, n)]));
  return under(dir).filter((f) => readFileSync(f).includes(needle));
}

/** The environment a command runs with: no inherited svc credentials, HOME set to `home`. */
export function cliEnv(cp: ControlPlaneProcess | null, home: string, opts: RunOpts = {}): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, SVC_CONTROL_PLANE_URL: undefined, SVC_TOKEN: undefined, CHATUI_ADMIN_TOKEN: undefined };
  if (cp && opts.auth !== false) {
    env.SVC_CONTROL_PLANE_URL = cp.url;
    env.SVC_TOKEN = cp.token;
  }
  Object.assign(env, opts.env ?? {});
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;
}

/** Runs `svc <args>` with stdout and stderr on pipes. */
export async function svc(cp: ControlPlaneProcess | null, args: string[], opts: RunOpts = {}): Promise<Run> {
  const home = opts.home ?? tempHome();
  const proc = Bun.spawn([...svcCommand(), ...args], {
    env: cliEnv(cp, home, opts),
    stdin: opts.stdin === undefined ? "ignore" : typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Runs `svc <args>` with stdout attached to a pseudo-terminal (util-linux `script`). */
export async function svcOnTerminal(cp: ControlPlaneProcess | null, args: string[], opts: RunOpts = {}): Promise<Run> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const cmd = [...svcCommand(), ...args].map(quote).join(" ");
  const proc = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { env: cliEnv(cp, opts.home ?? tempHome(), opts), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** A JSON call to the control plane's API with the owner's token (or `token`). */
export async function api(cp: ControlPlaneProcess, method: string, path: string, body?: unknown, token: string = cp.token): Promise<{ status: number; json: any }> {
  return callApi(`${cp.url}/api/v1`, method, path, body, token);
}

export const org = (cp: ControlPlaneProcess, path: string) => `/organizations/${cp.orgId}${path}`;

/** An agent in the default workspace, made through the API (the CLI has no agent-create command). */
export async function createAgent(cp: ControlPlaneProcess, name = `agent-${crypto.randomUUID().slice(0, 8)}`): Promise<string> {
  const r = await api(cp, "POST", org(cp, "/agents"), { name, workspace: "default" });
  if (r.status >= 300) throw new Error(`creating an agent failed: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.id;
}

export async function createInstallation(cp: ControlPlaneProcess, agentId: string, name = `inst-${crypto.randomUUID().slice(0, 8)}`) {
  const r = await api(cp, "POST", org(cp, "/installations"), { platform: "chatui", name, agent_id: agentId, workspace: "default" });
  if (r.status >= 300) throw new Error(`creating an installation failed: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json as { id: string; name: string; workspace_id: string };
}

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
export function replicaId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(26));
  return `rep_${[...bytes].map((b) => CROCKFORD[b % 32]).join("")}`;
}

/** A runtime replica of the installation that bootstrapped (registering its credential-sync key). */
export async function bootstrapRuntime(cp: ControlPlaneProcess, installationId: string) {
  const cred = await api(cp, "POST", org(cp, `/installations/${installationId}/credential`), { rotate: true });
  if (cred.status >= 300) throw new Error(`credential failed: ${cred.status} ${JSON.stringify(cred.json)}`);
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  const replica = replicaId();
  const boot = await api(cp, "POST", "/runtime/bootstrap", { replica_id: replica, credential_sync_recipient: recipient, version: "test" }, cred.json.token);
  if (boot.status >= 300) throw new Error(`bootstrap failed: ${boot.status} ${JSON.stringify(boot.json)}`);
  return { token: cred.json.token as string, identity, recipient, replica, bootstrap: boot.json };
}

/** A tool decision record of the runtime's installation, as its proxy would ship it; `o` overrides fields. Its id is made at its `ts`, as the proxy's is. */
export function runtimeRecord(rt: Awaited<ReturnType<typeof bootstrapRuntime>>, o: Record<string, unknown> = {}) {
  const b = rt.bootstrap;
  const ts = typeof o.ts === "string" ? o.ts : new Date().toISOString();
  return {
    id: newId("auditRecord", Date.parse(ts)),
    ts,
    kind: "tool",
    harness: "chatui",
    organization_id: b.organization_id as string,
    workspace_id: b.workspace_id as string,
    installation_id: b.installation.id as string,
    agent_id: b.agent_id as string,
    action: "tool:crm.update",
    tool_name: "crm.update" as string | null,
    decision: "permit",
    reason: "policy",
    policy_revision: 1,
    subject: { user_id: null as string | null, remote_user_id: "owui-1" as string | null, via_installation: false },
    args_digest: `hmac-sha256:${"0".repeat(64)}` as string | null,
    digest_key_id: b.digest_key.id as string | null,
    recipient_key_ids: [] as string[],
    ciphertext: null as string | null,
    ...o,
  };
}
