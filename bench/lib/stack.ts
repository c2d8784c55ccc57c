// The system under measurement: the compiled binary, a real control plane process, a scenario
// set up through the admin API (agent, installation, credential, users, group, tools,
// policies, model profile), a model server double in its own process, and `svc proxy serve`
// processes whose logs go to a file (as a container runtime would collect them), not to memory.
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { addPolicy, adminApi, type Api, must, type Scenario, setUpScenario, waitFor } from "../../src/proxy/testing/integration.ts";
import { type ControlPlaneProcess, REPO, startControlPlane } from "../../test/support/controlplane-process.ts";

export const BINARY = join(REPO, "dist/svc");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** dist/svc, rebuilt (`bun run build`) when missing, older than src/, or when asked. */
export function ensureBinary(force: boolean, say: (s: string) => void): string {
  const stale = !existsSync(BINARY) || statSync(BINARY).mtimeMs < newestMtime(join(REPO, "src"));
  if (force || stale) {
    say(`building ${BINARY} (bun run build)…`);
    const r = Bun.spawnSync(["bun", "run", "build"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`bun run build failed: ${r.stderr.toString()}`);
  }
  process.env.SVC_BIN = BINARY;
  return BINARY;
}

export type ModelServerProcess = { endpoint: string; caFile: string; proc: Subprocess; stop(): Promise<void> };

/** The first line a bench process prints once it is ready. */
async function announced(proc: Subprocess, what: string): Promise<string> {
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`${what} exited before announcing itself`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.split("\n")[0]!;
}

/** The OpenAI-compatible model double (test/support/model-server.ts) in a process of its own. */
export async function startModelServerProcess(): Promise<ModelServerProcess> {
  const proc = Bun.spawn(["bun", join(import.meta.dir, "../load/model-server.ts")], { stdout: "pipe", stderr: "inherit" });
  const info = JSON.parse(await announced(proc, "model server")) as { endpoint: string; caFile: string };
  return {
    ...info,
    proc,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** The bare Bun relay (../load/bare-relay.ts) to the model double, on a unix socket in `dir`: the hop's floor. */
export async function startBareRelay(model: ModelServerProcess, dir: string): Promise<{ socket: string; stop(): Promise<void> }> {
  const socket = join(dir, "bare-relay.sock");
  const proc = Bun.spawn(["bun", join(import.meta.dir, "../load/bare-relay.ts"), socket, `${model.endpoint}/chat/completions`, model.caFile], { stdout: "pipe", stderr: "inherit" });
  await announced(proc, "bare relay");
  return {
    socket,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

export type BenchProxy = {
  proc: Subprocess;
  socket: string;
  token: string;
  dir: string;
  logFile: string;
  /** ms from spawn to the first 200 on /readyz */
  startMs: number;
  call(path: string, init?: { body?: unknown; user?: string | null; method?: string }): Promise<Response>;
  policy(): Promise<{ policy_revision: number; spool_depth: number; tool_count: number }>;
  stop(): Promise<void>;
};

/** `svc proxy serve` with its state dir, socket and spool on the root file system (real fsync). */
export async function startBenchProxy(opts: { token: string; cpUrl: string; caFile: string; root: string; env?: Record<string, string>; command?: string[] }): Promise<BenchProxy> {
  const dir = mkdtempSync(join(opts.root, "px-"));
  const socket = join(dir, "p.sock");
  const logFile = join(dir, "proxy.log");
  const fd = openSync(logFile, "a");
  const env = {
    ...process.env,
    SVC_RUNTIME_TOKEN: opts.token,
    SVC_RUNTIME_CONTROL_PLANE_URL: opts.cpUrl,
    SVC_PROXY_STATE_DIR: join(dir, "state"),
    SVC_RUNTIME_SOCKET_PATH: socket,
    SVC_PROXY_AUDIT: join(dir, "spool"),
    SVC_PROXY_CA_FILE: opts.caFile,
    // As `svc run` starts the proxy (supervisor/run.ts proxyEnv): the CA in Bun's default store.
    NODE_EXTRA_CA_CERTS: opts.caFile,
    SVC_PROXY_POLL_INTERVAL: "500ms",
    SVC_PROXY_HEARTBEAT_INTERVAL: "10s",
    SVC_PROXY_ALLOW_PRIVATE_OUTBOUND: "127.0.0.1,::1,localhost",
    ...(opts.env ?? {}),
  } as Record<string, string>;
  const t0 = performance.now();
  const proc = Bun.spawn([...(opts.command ?? [BINARY]), "proxy", "serve"], { env, stdout: fd, stderr: fd });
  closeSync(fd);
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`proxy exited ${proc.exitCode}: ${readFileSync(logFile, "utf8").slice(-2000)}`);
    const ok = await fetch("http://localhost/readyz", { unix: socket } as RequestInit).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (performance.now() - t0 > 30_000) throw new Error(`proxy not ready after 30 s: ${readFileSync(logFile, "utf8").slice(-2000)}`);
    await Bun.sleep(2);
  }
  const startMs = performance.now() - t0;
  const call: BenchProxy["call"] = async (path, init = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${opts.token}` };
    if (init.user) headers["x-svc-user-id"] = init.user;
    if (init.body !== undefined) headers["content-type"] = "application/json";
    return fetch(`http://localhost${path}`, {
      unix: socket,
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    } as RequestInit);
  };
  return {
    proc,
    socket,
    token: opts.token,
    dir,
    logFile,
    startMs,
    call,
    policy: async () => (await call("/v1/policy")).json() as Promise<{ policy_revision: number; spool_depth: number; tool_count: number }>,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Stack = {
  root: string;
  cp: ControlPlaneProcess;
  api: Api;
  scenario: Scenario;
  model: ModelServerProcess;
  proxy: BenchProxy;
  /** Register two audit keys (encrypt to two recipients) or disable them (digest-only); waits for the proxy. */
  setEncryption(on: boolean): Promise<void>;
  waitProxyRevision(above: number, proxy?: BenchProxy): Promise<void>;
  stop(): Promise<void>;
};

export async function startStack(say: (s: string) => void): Promise<Stack> {
  const root = join(tmpdir(), "svc-bench");
  mkdirSync(root, { recursive: true });
  const work = mkdtempSync(join(root, "run-"));
  say("starting control plane, model server, scenario…");
  const cp = await startControlPlane();
  const api = adminApi(cp);
  const scenario = await setUpScenario(api, "bench");
  const model = await startModelServerProcess();
  await addPolicy(api, scenario, `group:sales-bench`, "tool:crm.read");
  await addPolicy(api, scenario, "*", "tool:crm.update");
  await addPolicy(api, scenario, `user:${scenario.users.bob!.id}`, "tool:crm.update", "deny");
  await addPolicy(api, scenario, `user:${scenario.users.alice!.id}`, "model:invoke");
  const mp = await must(
    api("POST", "/model-profiles", { display_name: "Bench LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", models: ["m-small"], workspace: scenario.workspace }),
    "create model profile",
  );
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: scenario.agentId }), "assign model profile");
  const proxy = await startBenchProxy({ token: scenario.runtimeToken, cpUrl: cp.url, caFile: model.caFile, root: work });
  const keys: string[] = [];

  const stack: Stack = {
    root: work,
    cp,
    api,
    scenario,
    model,
    proxy,
    async waitProxyRevision(above, px = stack.proxy) {
      await waitFor(async () => (await px.policy()).policy_revision > above, "the proxy to load a newer bundle", 20_000);
    },
    async setEncryption(on) {
      if (on === keys.length > 0) return;
      const rev = (await stack.proxy.policy()).policy_revision;
      if (on) {
        for (const name of ["bench key a", "bench key b"]) {
          const k = await must(api("POST", "/audit-encryption-keys", { name: `${name} ${Date.now()}`, public_key: await identityToRecipient(await generateX25519Identity()) }), "register audit key");
          keys.push(k.id);
        }
      } else {
        for (const id of keys.splice(0)) await must(api("POST", `/audit-encryption-keys/${id}:disable`), "disable audit key");
      }
      await stack.waitProxyRevision(rev);
    },
    async stop() {
      await stack.proxy.stop().catch(() => {});
      await model.stop().catch(() => {});
      await cp.stop().catch(() => {});
      rmSync(work, { recursive: true, force: true });
      rmSync(cp.dataDir, { recursive: true, force: true });
    },
  };
  return stack;
}
