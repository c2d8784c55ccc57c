// A real control-plane process for cross-process tests: the compiled binary ($SVC_BIN, built
// by `bun run build`) or, without it, `bun src/main.ts`. Fresh data dir, free port, first
// owner bootstrapped with an API token.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { TEST_POSTGRES_URL, freshPostgresDatabase } from "../../src/controlplane/db/test-store.ts";

export const REPO = resolve(import.meta.dir, "../..");

export function svcCommand(): string[] {
  return process.env.SVC_BIN ? [process.env.SVC_BIN] : ["bun", join(REPO, "src/main.ts")];
}

export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export async function waitFor(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Everything a child writes to stdout and stderr, accumulated as it arrives. */
export function collectOutput(proc: Subprocess): { text: () => string; closed: Promise<void> } {
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out += dec.decode(value, { stream: true });
    }
  };
  const closed = Promise.all([pump(proc.stdout as ReadableStream<Uint8Array>), pump(proc.stderr as ReadableStream<Uint8Array>)]).then(() => {});
  return { text: () => out, closed };
}

/** A JSON call to a control plane: status and parsed body (null when empty or not JSON). */
export async function callApi(baseUrl: string, method: string, path: string, body?: unknown, token?: string | null): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, json };
}

export type ControlPlaneProcess = {
  url: string;
  token: string;
  orgId: string;
  dataDir: string;
  /** Where its store is: the SQLite file or the PostgreSQL URL (SVC_CP_DATABASE). */
  database: string;
  /** What `svc controlplane bootstrap-admin` printed (the audit signing key among it). */
  bootstrapOutput: string;
  env: Record<string, string>;
  proc: Subprocess;
  logs: () => string;
  stop(): Promise<void>;
  restart(): Promise<void>;
};

export async function startControlPlane(opts: { env?: Record<string, string> } = {}): Promise<ControlPlaneProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-cp-"));
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  // With SVC_TEST_POSTGRES_URL the process gets a fresh PostgreSQL database, else SQLite in its data dir.
  const database = TEST_POSTGRES_URL ? { SVC_CP_DATABASE: await freshPostgresDatabase() } : {};
  // The master key goes where it does by default, apart from the data directory: under XDG_CONFIG_HOME (here inside the temp dir, removed with it).
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(dataDir, "config"),
    SVC_CP_DATA_DIR: dataDir,
    SVC_CP_LISTEN: `127.0.0.1:${port}`,
    SVC_CP_PUBLIC_URL: url,
    SVC_CP_ALLOW_PRIVATE_OUTBOUND: "1",
    ...database,
    ...(opts.env ?? {}),
  } as Record<string, string>;
  const boot = Bun.spawnSync([...svcCommand(), "controlplane", "bootstrap-admin", "--email", "owner@example.com", "--org-name", "Acme", "--token-out", join(dataDir, "token")], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (boot.exitCode !== 0) throw new Error(`bootstrap-admin failed: ${boot.stderr.toString()}`);
  const orgId = /organization (org_[0-9A-Z]+)/.exec(boot.stdout.toString())![1]!;
  const token = readFileSync(join(dataDir, "token"), "utf8").trim();
  let output = { text: () => "" };
  const state = { proc: undefined as unknown as Subprocess };
  const spawn = async () => {
    state.proc = Bun.spawn([...svcCommand(), "controlplane", "serve"], { env, stdout: "pipe", stderr: "pipe" });
    const previous = output.text();
    const current = collectOutput(state.proc);
    output = { text: () => previous + current.text() };
    await waitFor(async () => (await fetch(`${url}/healthz`)).ok, `control plane at ${url}`);
  };
  await spawn();
  const cp: ControlPlaneProcess = {
    url,
    token,
    orgId,
    dataDir,
    database: env.SVC_CP_DATABASE || join(dataDir, "controlplane.db"),
    bootstrapOutput: boot.stdout.toString(),
    env,
    get proc() {
      return state.proc;
    },
    logs: () => output.text(),
    async stop() {
      state.proc.kill("SIGTERM");
      await state.proc.exited;
    },
    async restart() {
      state.proc.kill("SIGTERM");
      await state.proc.exited;
      await spawn();
    },
  };
  return cp;
}

export function cleanup(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
