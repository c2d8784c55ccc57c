// The end-to-end suite's shared world: a control plane, a model provider double (HTTPS, test
// CA), and one runtime container — `svc run` as UID 10001 with the real Open WebUI from the
// cached venv — set up in the order of spec §1 with the `svc` CLI. Set-up is split into
// memoized stages, so any scenario can run alone (`bun test test/e2e -t "scenario 5"`) and
// the whole suite boots Open WebUI once. What a stage observed on the way (the model list
// before a profile and before a permit) is kept for the scenario that asserts it.
import { chmodSync, copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Run, api, org, svc as runSvc, tempHome } from "../integration/cli-support.ts";
import { AS_CONTAINER_USER, type Running, spawnCollect, stateDir } from "../integration/supervisor-helpers.ts";
import { type ControlPlaneProcess, REPO, freePort, startControlPlane, waitFor } from "../support/controlplane-process.ts";
import { testTls } from "../support/tls.ts";
import { type ModelServer, startModelServer } from "../support/model-server.ts";
import { OPENWEBUI_BIN, OPENWEBUI_PYTHON, type OwuiUser, addUser, modelIds, signIn } from "../support/openwebui.ts";

export const MODEL_API_KEY = "sk-e2e-upstream-key";
export const MODEL = "svc.gpt-e2e"; // the Pipe's id "svc" + the profile's model
export const ADMIN = { email: "admin@example.com", password: "admin-pass-1", name: "Admin" };
export const ALICE = { email: "alice@example.com", password: "alice-pass-1", name: "Alice" };
export const BOB = { email: "bob@example.com", password: "bob-pass-1", name: "Bob" };
export const CAROL = { email: "carol@example.com", password: "carol-pass-1", name: "Carol" };
/** Bob's password at the control plane (his account there; he signs in on the claim page). */
export const BOB_CP_PASSWORD = "bob-console-pass-1";
export const PACKS = "acme_tools,misnamed_pack";

/** The compiled binary: `svc run` must be the real container entrypoint. */
function svcBinary(): string {
  const bin = process.env.SVC_BIN ?? join(REPO, "dist/svc");
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`bun run build\` first (scripts/test.sh does)`);
  process.env.SVC_BIN = bin; // cli-support and controlplane-process use it too
  return bin;
}

/** True when UID 10001 can open `path` with `mode` (checked by running `test` as that user). */
function containerUserCan(path: string, flag: "-r" | "-x"): boolean {
  return Bun.spawnSync([...AS_CONTAINER_USER, "test", flag, path]).exitCode === 0;
}

export type Container = Running & { env: Record<string, string>; url: string; stateDir: string };

export type World = {
  cp: ControlPlaneProcess;
  model: ModelServer;
  /** Files UID 10001 reads: the CA, the example packs (and the binary if the repo is not readable). */
  shared: string;
  bin: string;
  home: string;
  /** `svc <args>` as the admin signed in with `svc login` (config in `home`). */
  cli(args: string[], stdin?: string, env?: Record<string, string>): Promise<Run>;
  agentId: string;
  installationId: string;
  runtimeToken: string;
  container: Container | null;
  admin: OwuiUser;
  alice: OwuiUser;
  bob: OwuiUser;
  carol: OwuiUser;
  /** Service users (control plane). */
  aliceUserId: string;
  profileId: string;
  /** What the set-up saw on the way (scenarios 1 and 2 assert these). */
  log: { step: string; run: Run }[];
  modelsSeen: { beforeProfile: string[]; beforePermit: string[]; afterPermit: string[] };
};

const w: Omit<Partial<World>, "modelsSeen"> & { log: World["log"]; modelsSeen: Partial<World["modelsSeen"]> } = { log: [], modelsSeen: {} };
const stages = new Map<string, Promise<void>>();
const cleanups: (() => Promise<void> | void)[] = [];

async function stage(name: string, fn: () => Promise<void>): Promise<void> {
  let p = stages.get(name);
  if (!p) {
    p = fn();
    stages.set(name, p);
  }
  return p;
}

async function cliStep(step: string, args: string[], stdin?: string): Promise<Run> {
  const r = await runSvc(w.cp!, args, { home: w.home!, auth: false, stdin });
  w.log.push({ step, run: r });
  if (r.code !== 0) throw new Error(`${step}: svc ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

/** The control plane, the model double and the admin's `svc login` (spec §1: login first). */
export async function base(): Promise<World> {
  return stage("base", async () => {
    if (process.getuid?.() !== 0) throw new Error("the end-to-end suite runs `svc run` as UID 10001 through setpriv and owns its state dirs by chown: run it as root (CI does)");
    const bin = svcBinary();
    // The control plane trusts the suite's test CA for its own outbound calls (scenario 19's authorization server).
    w.cp = await startControlPlane({ env: { SVC_CP_EXTRA_CA_FILE: testTls().caFile } });
    cleanups.push(async () => w.cp!.stop());
    w.model = startModelServer({ apiKey: MODEL_API_KEY });
    cleanups.push(async () => w.model!.stop());
    const shared = mkdtempSync(join(tmpdir(), "svc-e2e-shared-"));
    chmodSync(shared, 0o755);
    copyFileSync(w.model.caFile, join(shared, "ca.pem"));
    chmodSync(join(shared, "ca.pem"), 0o644);
    cpSync(join(REPO, "examples"), join(shared, "packs"), { recursive: true });
    Bun.spawnSync(["chmod", "-R", "a+rX", join(shared, "packs")]);
    w.bin = bin;
    if (!containerUserCan(bin, "-x")) {
      copyFileSync(bin, join(shared, "svc"));
      chmodSync(join(shared, "svc"), 0o755);
      w.bin = join(shared, "svc");
    }
    if (!containerUserCan(OPENWEBUI_BIN, "-x")) throw new Error(`${OPENWEBUI_BIN} is not runnable by UID 10001 (run scripts/openwebui-venv.sh)`);
    w.shared = shared;
    cleanups.push(() => rmSync(shared, { recursive: true, force: true }));
    w.home = tempHome();
    w.cli = async (args, stdin, env) => runSvc(w.cp!, args, { home: w.home!, auth: false, stdin, env });
    await cliStep("login", ["login", "--url", w.cp.url, "--with-token"], w.cp.token);
  }).then(() => w as unknown as World);
}

/** Spec §1 steps 1–3: the agent (API: the CLI has none), the installation, the credential. */
export async function installation(): Promise<World> {
  return stage("installation", async () => {
    await base();
    const agent = await api(w.cp!, "POST", org(w.cp!, "/agents"), { name: "helpdesk-agent", workspace: "default" });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
    w.agentId = agent.json.id;
    const init = await cliStep("bot init", ["bot", "init", "--platform", "chatui", "--name", "helpdesk", "--agent", w.agentId!, "--workspace", "default", "--json"]);
    w.installationId = JSON.parse(init.stdout).id;
    // piped to the "secret manager" (this process), never a terminal
    const cred = await cliStep("bot credential", ["bot", "credential", "--installation", w.installationId!, "--workspace", "default"]);
    w.runtimeToken = cred.stdout.trim();
  }).then(() => w as unknown as World);
}

export function containerEnv(o: { token: string; stateDir: string; port: number; packs?: string; url?: string; extra?: Record<string, string> }): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: o.stateDir,
    SVC_RUNTIME_TOKEN: o.token,
    SVC_RUNTIME_CONTROL_PLANE_URL: o.url ?? w.cp!.url,
    CHATUI_SECRET_KEY: "e2e-chat-secret",
    SVC_CHATUI_TOOL_PACKS: o.packs ?? PACKS,
    SVC_STATE_DIR: o.stateDir,
    SVC_PROXY_AUDIT: join(o.stateDir, "audit-spool"),
    SVC_PROXY_CA_FILE: join(w.shared!, "ca.pem"),
    SVC_PROXY_POLL_INTERVAL: "1s",
    SVC_PROXY_LIMITS_INTERVAL: "1s",
    // the model double and the MCP servers listen on loopback: the suite opts in to it
    SVC_PROXY_ALLOW_PRIVATE_OUTBOUND: "127.0.0.1,::1,localhost",
    SVC_PROXY_HEARTBEAT_INTERVAL: "5s",
    SVC_PROXY_PATH: w.bin!,
    SVC_CHATUI_HOST: "127.0.0.1",
    SVC_CHATUI_PORT: String(o.port),
    SVC_CHATUI_COMMAND: `${OPENWEBUI_BIN} serve --host {host} --port {port}`,
    SVC_CHATUI_PYTHON: OPENWEBUI_PYTHON,
    PYTHONPATH: join(w.shared!, "packs"),
    WEBUI_ADMIN_EMAIL: ADMIN.email,
    WEBUI_ADMIN_PASSWORD: ADMIN.password,
    WEBUI_ADMIN_NAME: ADMIN.name,
    ...(o.extra ?? {}),
  };
}

/** `svc run` as UID 10001 (the container). */
export function startContainer(env: Record<string, string>): Container {
  const r = spawnCollect([...AS_CONTAINER_USER, w.bin!, "run"], env);
  return { ...r, env, url: `http://127.0.0.1:${env.SVC_CHATUI_PORT}`, stateDir: env.SVC_STATE_DIR! };
}

export async function stopContainer(c: Container): Promise<number> {
  if (c.proc.exitCode === null) c.proc.kill("SIGTERM");
  return c.exit;
}

/** A fresh state volume owned by UID 10001. */
export function freshStateDir(): string {
  const d = stateDir("svc-e2e-state-");
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Spec §1 step 6 (deploy) done early so the runtime registers its key: the container boots and seeds. */
export async function booted(): Promise<World> {
  return stage("booted", async () => {
    await installation();
    const port = freePort();
    const c = startContainer(containerEnv({ token: w.runtimeToken!, stateDir: freshStateDir(), port }));
    w.container = c;
    cleanups.push(async () => {
      if (w.container) await stopContainer(w.container);
    });
    await waitFor(
      () => {
        if (c.proc.exitCode !== null) throw new Error("exited");
        return c.stderr().includes("svc functions seeded");
      },
      "the container to boot and seed Open WebUI",
      180_000,
    ).catch((e) => {
      throw new Error(`${(e as Error).message}\n--- svc run output (tail) ---\n${c.stderr().slice(-6000)}`);
    });
    w.admin = await signIn(c.url, ADMIN.email, ADMIN.password);
    w.alice = await addUser(c.url, w.admin, ALICE);
    w.bob = await addUser(c.url, w.admin, BOB);
    w.carol = await addUser(c.url, w.admin, CAROL);
    w.modelsSeen.beforeProfile = await modelIds(c.url, w.alice);
  }).then(() => w as unknown as World);
}

/** The bundle revision the control plane serves now, then wait until the proxy (the shared container's, or another runtime's) runs it. */
export async function bundleApplied(runtime?: { stateDir: string; token: string }): Promise<number> {
  const token = runtime?.token ?? w.runtimeToken!;
  const b = await api(w.cp!, "GET", "/runtime/policy-bundle?version=1", undefined, token);
  if (b.status !== 200) throw new Error(`bundle: ${b.status} ${JSON.stringify(b.json)}`);
  const rev = b.json.revision as number;
  const sock = join(runtime?.stateDir ?? w.container!.stateDir, "proxy.sock");
  await waitFor(
    async () => {
      const res = await fetch("http://svc-proxy/v1/policy", { unix: sock, headers: { authorization: `Bearer ${token}` } } as RequestInit);
      const j = (await res.json()) as { policy_revision: number | null };
      return (j.policy_revision ?? 0) >= rev;
    },
    `the proxy to load bundle revision ${rev}`,
    30_000,
  );
  return rev;
}

/** The proxy's Prometheus text (GET /metrics on its socket, with the runtime token). */
export async function proxyMetrics(): Promise<string> {
  const sock = join(w.container!.stateDir, "proxy.sock");
  const res = await fetch("http://svc-proxy/metrics", { unix: sock, headers: { authorization: `Bearer ${w.runtimeToken!}` } } as RequestInit);
  return res.text();
}

/**
 * `svc model-profiles create` of an api_key profile on the model double (gpt-e2e) in the default
 * workspace; its key (MODEL_API_KEY) goes on stdin. `more`: further flags (--agent, --json).
 */
export function modelProfileCreateArgs(displayName: string, more: string[] = []): string[] {
  return ["model-profiles", "create", "--display-name", displayName, "--endpoint", w.model!.endpoint, "--auth-type", "api_key", "--default-model", "gpt-e2e", "--workspace", "default", ...more];
}

/** `svc policies create` for the world's agent in the default workspace: a permit unless `effect` says otherwise. */
export function policyCreateArgs(p: { name: string; src: string; dst: string; effect?: string; condition?: string }): string[] {
  const condition = p.condition ? ["--condition", p.condition] : [];
  return ["policies", "create", "--name", p.name, "--src-pattern", p.src, "--dst-pattern", p.dst, "--effect", p.effect ?? "permit", ...condition, "--agent-id", w.agentId!, "--workspace", "default"];
}

/** Spec §1 step 4: a model profile (api_key: the runtime registered its key at boot), assigned. */
export async function profiled(): Promise<World> {
  return stage("profiled", async () => {
    await booted();
    const create = await cliStep("model-profiles create", modelProfileCreateArgs("E2E model", ["--json"]), `${MODEL_API_KEY}\n`);
    w.profileId = JSON.parse(create.stdout).id;
    await cliStep("model-profiles assign", ["model-profiles", "assign", w.profileId!, "--workspace", "default", "--agent", w.agentId!]);
    await cliStep("model-profiles readiness", ["model-profiles", "readiness", w.profileId!, "--workspace", "default"]);
    await bundleApplied();
    w.modelsSeen.beforePermit = await modelIds(w.container!.url, w.alice!);
  }).then(() => w as unknown as World);
}

/** Spec §1 step 5: policies. Alice's service user exists first so a policy can name her. */
export async function permitted(): Promise<World> {
  return stage("permitted", async () => {
    await profiled();
    const u = await api(w.cp!, "POST", org(w.cp!, "/users"), { email: ALICE.email, display_name: ALICE.name });
    if (u.status !== 201) throw new Error(`user: ${u.status} ${JSON.stringify(u.json)}`);
    w.aliceUserId = u.json.id;
    const policy = async (name: string, src: string, dst: string) => cliStep(`policies create ${name}`, [...policyCreateArgs({ name, src, dst }), "--json"]);
    await policy("chat", "*", "model:invoke");
    await policy("crm-readers", `user:${w.aliceUserId}`, "tool:crm.lookup_customer");
    // A permit for the misnamed pack's declared name: it cannot help, the method sends another name.
    await policy("notes", "*", "tool:notes.search");
    // deliberately no permit for tool:crm.update (the write tool)
    await bundleApplied();
    w.modelsSeen.afterPermit = await modelIds(w.container!.url, w.alice!);
  }).then(() => w as unknown as World);
}

/** Spec §1 step 7: link Alice's front-end account to her service user (admin linking by hand). */
export async function linked(): Promise<World> {
  return stage("linked", async () => {
    await permitted();
    const r = await api(w.cp!, "POST", org(w.cp!, `/users/${w.aliceUserId}/remote-identities`), { platform: "chatui", remote_user_id: w.alice!.id });
    if (r.status >= 300) throw new Error(`link: ${r.status} ${JSON.stringify(r.json)}`);
    await cliStep("users remote-identities list", ["users", "remote-identities", "list", ALICE.email, "--json"]);
    await bundleApplied();
  }).then(() => w as unknown as World);
}

/** Audit records of the organization matching the query (admin API). */
export async function auditRecords(query: Record<string, string>): Promise<any[]> {
  const qs = new URLSearchParams({ limit: "200", ...query }).toString();
  const r = await api(w.cp!, "GET", org(w.cp!, `/audit-records?${qs}`));
  if (r.status !== 200) throw new Error(`audit query: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.records;
}

/** Waits until the audit query returns a record that `match` accepts (records ship asynchronously). */
export async function auditRecord(query: Record<string, string>, match: (r: any) => boolean = () => true, what = JSON.stringify(query)): Promise<any> {
  let found: any = null;
  await waitFor(
    async () => {
      found = (await auditRecords(query)).find(match) ?? null;
      return found !== null;
    },
    `an audit record ${what}`,
    30_000,
  );
  return found;
}

/** The pid of the container's process (at any depth under `svc run`) whose argv `match` accepts. */
export function childPid(c: Container, match: (argv: string[]) => boolean, what: string): number {
  const children = (pid: number): number[] => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const todo = [c.proc.pid];
  while (todo.length) {
    const p = todo.shift()!;
    for (const k of children(p)) {
      if (match(readFileSync(`/proc/${k}/cmdline`, "utf8").split("\0"))) return k;
      todo.push(k);
    }
  }
  throw new Error(`no ${what} child found`);
}

/** The pid of the container's `svc proxy serve` child. */
export function proxyPid(c: Container): number {
  return childPid(c, (cmd) => cmd.includes("proxy") && cmd.includes("serve"), "svc proxy serve");
}

/** The pid of the container's Open WebUI (`open-webui serve`). */
export function frontendPid(c: Container): number {
  return childPid(c, (cmd) => cmd.some((a) => a.endsWith("/open-webui") || a === "open-webui") && cmd.includes("serve"), "open-webui serve");
}

export async function teardown(): Promise<void> {
  for (const c of cleanups.reverse()) {
    try {
      await c();
    } catch {}
  }
  cleanups.length = 0;
}

export const world = () => w as unknown as World;
