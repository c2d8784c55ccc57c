// `svc run`, the container's PID 1 (ARCHITECTURE.md "Processes in the container"):
// preflight → proxy → /readyz → tool sync → front end → first admin → seed → supervise.
// Every refusal is one line and a non-zero exit with no child left running.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PackError } from "../boot/exporter.ts";
import { ToolSyncError, syncTools } from "../boot/sync.ts";
import { NO_PACKS, NO_TOOLS, packManifest } from "../boot/tool-sync.ts";
import type { ToolManifest } from "../contract/manifest.ts";
import { writePythonPackage } from "../guard-bridge/index.ts";
import type { Logger } from "../log/index.ts";
import { type Child, causeFromTail, startChild } from "./children.ts";
import { frontendConfig, frontendEnv, onboardingState } from "./frontend.ts";
import { preflight } from "./preflight.ts";
import { startReaper } from "./reaper.ts";
import { svcSelfCommand } from "./self-command.ts";

export const EXIT_SEED_NO_ADMIN = 3;
const FRONTEND_STOP_GRACE_MS = 15_000;
const POLL_MS = 250;
const ADMIN_POLL_MS = 2000;

/** A start failure: the message is the one line the operator sees. */
export class StartFailure extends Error {
  override name = "StartFailure";
}

/** Thrown inside the start sequence when a signal or a dying child ends it. */
class Stopped extends Error {}

export type SupervisorDeps = {
  log: Logger;
  /** argv of the proxy daemon; `svc proxy serve` of this same binary unless a test injects one. */
  proxyCommand?: string[];
  /** How long the proxy may take to drain its spool after SIGTERM (default 30 s). */
  drainGraceMs?: number;
  installSignalHandlers?: boolean;
};

type Env = Record<string, string | undefined>;

export async function runSupervisor(env: Env, uid: number, deps: SupervisorDeps): Promise<number> {
  const log = deps.log;
  const cfg = preflight(env, uid);
  const fe = frontendConfig(env, cfg.stateDir);
  const pythonRoot = writePythonPackage(join(cfg.stateDir, "python"));

  // Broken packs stop the container before anything runs (spec §2 rule 3).
  let manifest: ToolManifest | null = null;
  if (cfg.packs.length > 0) {
    try {
      manifest = await packManifest({ packs: cfg.packs, python: fe.python }, pythonRoot, log);
    } catch (e) {
      if (e instanceof PackError) throw new StartFailure(e.message);
      throw e;
    }
    if (manifest.tools.length === 0) throw new StartFailure(`${NO_TOOLS} (SVC_CHATUI_TOOL_PACKS=${cfg.packs.join(",")})`);
  }

  const { env: chatEnv, ignored } = frontendEnv(env, {
    secretKey: cfg.secretKey,
    dataDir: fe.dataDir,
    pythonRoot,
    socketPath: cfg.socketPath,
    token: cfg.token,
  });
  for (const i of ignored) log.warn(`ignored ${i}: svc run forces this setting (the Pipe is the only model provider; every tool is governed; see docs/deploy.md)`);
  mkdirSync(fe.dataDir, { recursive: true, mode: 0o750 });

  const children: Child[] = [];
  let stopReason: { code: number; why: string } | null = null;
  let wake: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const requestStop = (code: number, why: string) => {
    if (stopReason) return;
    stopReason = { code, why };
    wake();
  };
  const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, stopped.then(() => Promise.reject(new Stopped()))]);
  const onSignal = (sig: NodeJS.Signals) => {
    log.info(`received ${sig}; stopping the front end, then the proxy (it drains its audit spool)`);
    requestStop(0, sig);
  };
  if (deps.installSignalHandlers !== false) {
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  }
  const reaper = startReaper(() => children.map((c) => c.pid), log);

  /** From now on this child's death stops the container. */
  const watch = (child: Child) => {
    void child.exited.then((code) => {
      if (!stopReason) {
        log.error(`${child.name} exited (code ${code}); stopping`, { child: child.name, code });
        requestStop(1, `${child.name} exited`);
      }
    });
  };

  const shutdown = async () => {
    const [proxy, ...rest] = children;
    for (const c of rest.reverse()) await c.stop(FRONTEND_STOP_GRACE_MS);
    if (proxy) await proxy.stop(deps.drainGraceMs ?? 30_000);
    reaper.stop();
    if (deps.installSignalHandlers !== false) {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
    }
  };

  try {
    // 1. the proxy daemon
    const proxyArgv = deps.proxyCommand ?? [...svcSelfCommand(), "proxy", "serve"];
    const proxy = startChild("proxy", proxyArgv, {
      env: { ...env, SVC_STATE_DIR: cfg.stateDir, SVC_RUNTIME_SOCKET_PATH: cfg.socketPath },
    });
    children.push(proxy);
    await guard(waitReady(proxy, cfg.socketPath, cfg.readyTimeoutMs));
    watch(proxy);

    // 2. the tool sync
    if (manifest) {
      await guard(syncTools({ controlPlaneUrl: cfg.controlPlaneUrl, token: cfg.token, manifest, egress: cfg.egress, log }));
    } else {
      log.info(NO_PACKS);
    }

    // 3. the front end
    log.info(`starting the front end: ${fe.command.join(" ")}`, { data_dir: fe.dataDir, url: fe.localUrl });
    const chat = startChild("front end", fe.command, { env: chatEnv, cwd: fe.dataDir });
    children.push(chat);
    watch(chat);

    // 4. first admin, then seed
    let announced = false;
    for (;;) {
      const state = await guard(onboardingState(fe.localUrl));
      if (state === "ready") {
        const seeded = await guard(seed(fe.python, chatEnv, fe.dataDir, log));
        if (seeded) break;
      } else if (state === "onboarding" && !announced) {
        log.info(`waiting for the first admin to sign up at ${fe.localUrl}; nobody can chat until then`);
        announced = true;
      }
      await guard(Bun.sleep(state === "down" ? POLL_MS * 2 : ADMIN_POLL_MS));
    }

    // 5. supervise
    await stopped;
  } catch (e) {
    if (!(e instanceof Stopped)) {
      requestStop(1, "start failure");
      await shutdown();
      if (e instanceof ToolSyncError) throw new StartFailure(e.message);
      throw e;
    }
  }
  await shutdown();
  const reason = stopReason as { code: number; why: string } | null;
  log.info(`stopped (${reason?.why ?? "done"})`);
  return reason?.code ?? 0;
}

async function readyz(socketPath: string): Promise<{ ok: boolean; reason: string }> {
  try {
    const res = await fetch("http://svc-proxy/readyz", { unix: socketPath, signal: AbortSignal.timeout(2000) } as RequestInit);
    const text = (await res.text()).trim();
    if (res.ok) return { ok: true, reason: "ready" };
    let reason = text;
    try {
      const doc = JSON.parse(text) as Record<string, unknown>;
      reason = String(doc.reason ?? doc.detail ?? doc.state ?? text);
    } catch {}
    return { ok: false, reason: `HTTP ${res.status}${reason ? `: ${reason.slice(0, 300)}` : ""}` };
  } catch (e) {
    return { ok: false, reason: `no answer on ${socketPath} (${(e as Error).name})` };
  }
}

/** Wait for the proxy's /readyz; a proxy that exits or never gets ready is a bootstrap failure. */
async function waitReady(proxy: Child, socketPath: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "not started";
  for (;;) {
    if (proxy.hasExited()) {
      const code = await proxy.exited;
      throw new StartFailure(`runtime bootstrap failed: ${causeFromTail(proxy.tail()) ?? `the proxy exited with code ${code}`}`);
    }
    const r = await readyz(socketPath);
    if (r.ok) return;
    last = r.reason;
    if (Date.now() >= deadline) {
      await proxy.stop(5000);
      const cause = causeFromTail(proxy.tail());
      throw new StartFailure(
        `runtime bootstrap failed: the proxy was not ready within ${Math.round(timeoutMs / 1000)} s (SVC_PROXY_READY_TIMEOUT): ${cause ?? last}`,
      );
    }
    await Promise.race([Bun.sleep(POLL_MS), proxy.exited]);
  }
}

/** Run the seed; false when no admin exists yet (try again later). */
async function seed(python: string, env: Record<string, string>, cwd: string, log: Logger): Promise<boolean> {
  const proc = Bun.spawn([python, "-m", "svc_chatui.boot", "--seed"], { env, cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code === EXIT_SEED_NO_ADMIN) return false;
  const lines = err.split("\n").filter((l) => l.trim());
  for (const w of lines.filter((l) => l.startsWith("warning: "))) log.warn(`seed: ${w}`);
  if (code !== 0) {
    throw new StartFailure(`seeding the front end failed (exit ${code}): ${lines.filter((l) => !l.startsWith("warning: ")).at(-1) ?? "no output"}`);
  }
  let report: { owner?: string; items?: Record<string, string> } = {};
  try {
    report = JSON.parse(out.trim().split("\n").at(-1) ?? "{}");
  } catch {}
  const items = report.items ?? {};
  const tools = Object.keys(items).filter((k) => k !== "svc" && k !== "svc_guard" && items[k] !== "removed");
  log.info(`svc functions seeded: Pipe "svc" and guard "svc_guard" active, ${tools.length} toolkit tool(s)${tools.length ? ` (${tools.join(", ")})` : ""}`, {
    owner: report.owner,
    pipe: items.svc,
    guard: items.svc_guard,
  });
  return true;
}
