// `svc run`, the container's PID 1 (ARCHITECTURE.md "Processes in the container"):
// preflight → proxy → /readyz → tool sync → front end → first admin → seed → supervise.
// Every refusal is one line and a non-zero exit with no child left running: each child, the
// seed included, is started through one Supervision (supervision.ts).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PackError } from "../boot/exporter.ts";
import { ToolSyncError, syncTools } from "../boot/sync.ts";
import { CaFileError, trustedCaFromEnv } from "../runtime-link/trust.ts";
import { NO_PACKS, NO_TOOLS, packManifest } from "../boot/tool-sync.ts";
import type { ToolManifest } from "../contract/manifest.ts";
import { writePythonPackage } from "../guard-bridge/index.ts";
import type { Logger } from "../log/index.ts";
import { type Child, TIMEOUT, causeFromTail, startChild, withTimeout } from "./children.ts";
import { FRONTEND_TOKEN_ENV, frontendConfig, frontendEnv, newFrontendToken, onboardingState, withoutSecrets } from "./frontend.ts";
import { StartFailure } from "./start-failure.ts";
import { preflight } from "./preflight.ts";
import { keepProcessPrivate, notPrivateWarning } from "./private-process.ts";
import { startReaper } from "./reaper.ts";
import { svcSelfCommand } from "./self-command.ts";
import { type SignalSource, Stopped, Supervision } from "./supervision.ts";

export const EXIT_SEED_NO_ADMIN = 3;
/** The seed imports Open WebUI's model layer (slow on a small machine) and writes a few rows. */
export const SEED_TIMEOUT_MS = 300_000;
const POLL_MS = 250;
const ADMIN_POLL_MS = 2000;

/** A start failure: the message is the one line the operator sees. */
export { StartFailure } from "./start-failure.ts";

export type SupervisorDeps = {
  log: Logger;
  /** argv of the proxy daemon; `svc proxy serve` of this same binary unless a test injects one. */
  proxyCommand?: string[];
  /** How long the proxy may take to drain its spool after the forwarded signal (default DRAIN_GRACE_MS, 10 s). */
  drainGraceMs?: number;
  /** How long the front end and the seed get, together, after the forwarded signal (default STOP_GRACE_MS, 10 s). */
  stopGraceMs?: number;
  seedTimeoutMs?: number;
  /** The waits between tool-sync attempts (tests inject one; default: real sleeps). */
  syncSleep?: (ms: number) => Promise<void>;
  /** Where SIGTERM/SIGINT come from (default: this process); null installs no handlers. */
  signals?: SignalSource | null;
  /** Called with each child once started (tests read pids). */
  onChild?: (child: Child) => void;
};

type Env = Record<string, string | undefined>;

/**
 * The proxy's environment: the container's, with `set` on top, and SVC_PROXY_CA_FILE also as
 * NODE_EXTRA_CA_CERTS unless that is set already. Bun reads NODE_EXTRA_CA_CERTS at process
 * start into its default store, so the proxy's calls need no per-call `tls.ca` (with one, Bun
 * built a TLS context of every system root plus the file on each forwarded model call). Pure.
 */
export function proxyEnv(env: Env, set: Record<string, string>): Env {
  const ca = env.SVC_PROXY_CA_FILE?.trim();
  return { ...env, ...(ca && !env.NODE_EXTRA_CA_CERTS?.trim() ? { NODE_EXTRA_CA_CERTS: ca } : {}), ...set };
}

export async function runSupervisor(env: Env, uid: number, deps: SupervisorDeps): Promise<number> {
  const log = deps.log;
  // First: the front end (same UID) must never read the runtime token from /proc/1/environ.
  const notPrivate = keepProcessPrivate();
  if (notPrivate) log.warn(notPrivateWarning("svc run", notPrivate));
  const cfg = preflight(env, uid);
  // The front end's credential on the proxy's socket, instead of the runtime token (this boot only).
  const frontendToken = newFrontendToken();
  const fe = frontendConfig(env, cfg.stateDir);
  const pythonRoot = writePythonPackage(join(cfg.stateDir, "python"));

  // Broken packs stop the container before anything runs (spec §2 rule 3).
  let manifest: ToolManifest | null = null;
  if (cfg.packs.length > 0) {
    try {
      // The packs' code runs without the container's secrets: it needs none to declare tools.
      manifest = await packManifest({ packs: cfg.packs, python: fe.python }, pythonRoot, log, withoutSecrets(env));
    } catch (e) {
      if (e instanceof PackError) throw new StartFailure(e.message);
      throw e;
    }
    if (manifest.tools.length === 0) throw new StartFailure(`${NO_TOOLS} (SVC_CHATUI_TOOL_PACKS=${cfg.packs.join(",")})`);
  }

  // The MCP gateway's loopback port: the operator's, or a free one, known to proxy and seed alike.
  const mcpPort = env.SVC_PROXY_MCP_PORT?.trim() || String(freeLoopbackPort());
  const { env: chatEnv, ignored } = frontendEnv(env, {
    mcpUrl: `http://127.0.0.1:${mcpPort}/mcp`,
    secretKey: cfg.secretKey,
    dataDir: fe.dataDir,
    staticDir: fe.staticDir,
    pythonRoot,
    socketPath: cfg.socketPath,
    frontendToken,
  });
  for (const i of ignored) log.warn(`ignored ${i}: svc run forces this setting (the Pipe is the only model provider; every tool is governed; see docs/deploy.md)`);
  mkdirSync(fe.dataDir, { recursive: true, mode: 0o750 });
  mkdirSync(fe.staticDir, { recursive: true, mode: 0o750 });

  const sup = new Supervision({
    log,
    signals: deps.signals,
    drainGraceMs: deps.drainGraceMs,
    stopGraceMs: deps.stopGraceMs,
    start: (name, argv, opts) => {
      const child = startChild(name, argv, opts);
      deps.onChild?.(child);
      return child;
    },
  });
  const reaper = startReaper(() => sup.pids(), log);

  try {
    // 1. the proxy daemon
    const proxyArgv = deps.proxyCommand ?? [...svcSelfCommand(), "proxy", "serve"];
    const proxy = sup.start("proxy", proxyArgv, {
      env: proxyEnv(env, { SVC_STATE_DIR: cfg.stateDir, SVC_RUNTIME_SOCKET_PATH: cfg.socketPath, SVC_PROXY_MCP_PORT: mcpPort, SVC_PROXY_CHATUI_URL: fe.localUrl, [FRONTEND_TOKEN_ENV]: frontendToken }),
      drains: true,
    });
    await sup.guard(waitReady(proxy, cfg.socketPath, cfg.readyTimeoutMs));
    sup.watch(proxy);

    // 2. the tool sync: the packs' tools (the MCP servers' tools the proxy reports itself, for
    // the agent: docs/mcp.md "Whose tools")
    if (manifest) {
      await sup.guard(syncTools({ controlPlaneUrl: cfg.controlPlaneUrl, token: cfg.token, manifest, egress: cfg.egress, ca: trustedCaFromEnv(env), log, sleep: deps.syncSleep }));
    } else {
      log.info(NO_PACKS);
    }

    // 3. the front end
    log.info(`starting the front end: ${fe.command.join(" ")}`, { data_dir: fe.dataDir, url: fe.localUrl });
    const chat = sup.start("front end", fe.command, { env: chatEnv, cwd: fe.dataDir });
    sup.watch(chat);

    // 4. first admin, then seed
    let announced = false;
    for (;;) {
      const state = await sup.guard(onboardingState(fe.localUrl));
      if (state === "ready") {
        const seeded = await sup.guard(seed(sup, fe.python, chatEnv, fe.dataDir, log, deps.seedTimeoutMs ?? SEED_TIMEOUT_MS));
        if (seeded) break;
      } else if (state === "onboarding" && !announced) {
        log.info(`waiting for the first admin to sign up at ${fe.localUrl}; nobody can chat until then`);
        announced = true;
      }
      await sup.guard(Bun.sleep(state === "down" ? POLL_MS * 2 : ADMIN_POLL_MS));
    }

    // 5. supervise
    await sup.stopped;
  } catch (e) {
    if (!(e instanceof Stopped)) {
      sup.requestStop(1, "start failure");
      await sup.shutdown();
      reaper.stop();
      if (e instanceof ToolSyncError || e instanceof CaFileError) throw new StartFailure(e.message);
      throw e;
    }
  }
  await sup.shutdown();
  reaper.stop();
  const reason = sup.stopReason;
  log.info(`stopped (${reason?.why ?? "done"})`);
  return reason?.code ?? 0;
}

/** A loopback port nobody listens on now (the proxy binds it right after). */
function freeLoopbackPort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
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
      throw new StartFailure(`runtime bootstrap failed: the proxy was not ready within ${Math.round(timeoutMs / 1000)} s (SVC_PROXY_READY_TIMEOUT): ${cause ?? last}`);
    }
    await Promise.race([Bun.sleep(POLL_MS), proxy.exited]);
  }
}

/**
 * Run the seed as a supervised child (a signal or a dying front end stops it too; a seed that
 * fails or hangs stops the container). False when no admin exists yet (try again later).
 */
async function seed(sup: Supervision, python: string, env: Record<string, string>, cwd: string, log: Logger, timeoutMs: number): Promise<boolean> {
  const child = sup.start("seed", [python, "-m", "svc_chatui.boot", "--seed"], { env, cwd, stdout: "capture", echoStderr: false, tailLines: 200 });
  const code = await withTimeout(child.exited, timeoutMs);
  if (code === TIMEOUT) {
    await child.stop(5000);
    throw new StartFailure(`seeding the front end failed: no result within ${timeoutMs / 1000} s (python -m svc_chatui.boot --seed); the container stops`);
  }
  // Stopped meanwhile (a signal, the front end died): the seed's end is no news of its own.
  if (sup.stopReason) return false;
  // The report is the last stdout line: read to the end (bounded, should a grandchild hold the pipe).
  await withTimeout(child.outputClosed, 2000);
  if (code === EXIT_SEED_NO_ADMIN) return false;
  const lines = child.tail();
  for (const w of lines.filter((l) => l.startsWith("warning: "))) log.warn(`seed: ${w}`);
  if (code !== 0) {
    const said = lines.filter((l) => !l.startsWith("warning: "));
    log.error("seed output", { exit: code, output: said.slice(-20).join("\n") });
    throw new StartFailure(`seeding the front end failed (exit ${code}): ${said.at(-1) ?? "no output"}; the container stops`);
  }
  let report: { owner?: string; items?: Record<string, string> } = {};
  try {
    report = JSON.parse(child.output().trim().split("\n").at(-1) ?? "{}");
  } catch {}
  const items = report.items ?? {};
  // Toolkits only: the seed also reports the MCP connection it configured ("server:mcp:svc").
  const tools = Object.keys(items).filter((k) => k !== "svc" && k !== "svc_guard" && !k.startsWith("server:") && items[k] !== "removed");
  const mcp = Object.keys(items).filter((k) => k.startsWith("server:mcp:"));
  log.info(
    `svc functions seeded: Pipe "svc" and guard "svc_guard" active, ${tools.length} toolkit tool(s)${tools.length ? ` (${tools.join(", ")})` : ""}${mcp.length ? `; MCP connection ${mcp.map((k) => k.slice("server:mcp:".length)).join(", ")} configured` : ""}`,
    {
      owner: report.owner,
      pipe: items.svc,
      guard: items.svc_guard,
    },
  );
  return true;
}
