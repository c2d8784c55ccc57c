// A control plane of the built binary for bench/audit-scale.ts, on a data directory and a store
// (bench/lib/audit-scale-store.ts), and the runtimes that talk to it: new installations
// bootstrapped as the CLI tests make them (cli-support.ts), each with its own proxy chain.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { newId } from "../../src/contract/ids.ts";
import { AuditChain } from "../../src/proxy/audit/chain.ts";
import { bootstrapRuntime, createAgent, createInstallation, runtimeRecord } from "../../test/integration/cli-support.ts";
import { type ControlPlaneProcess, callApi, freePort, waitFor } from "../../test/support/controlplane-process.ts";

export type Cp = { url: string; token: string; orgId: string; dir: string; proc: ReturnType<typeof Bun.spawn> };
export type Runtime = Awaited<ReturnType<typeof runtime>>;

/** The environment of `svc controlplane …` on `dir`; `database` is SVC_CP_DATABASE (none: the SQLite file in `dir`). */
export const cpEnv = (dir: string, port: number, database: string | undefined) =>
  ({
    ...process.env,
    XDG_CONFIG_HOME: join(dir, "config"),
    SVC_CP_DATA_DIR: dir,
    SVC_CP_LISTEN: `127.0.0.1:${port}`,
    SVC_CP_PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...(database ? { SVC_CP_DATABASE: database } : {}),
  }) as Record<string, string>;

export const org = (cp: Cp, path: string) => `/api/v1/organizations/${cp.orgId}${path}`;
export const api = async (cp: Cp, method: string, path: string, body?: unknown, token = cp.token) => callApi(cp.url, method, path.startsWith("/api/") ? path : `/api/v1${path}`, body, token);

export async function serve(bin: string, dir: string, database: string | undefined): Promise<Cp> {
  const port = freePort();
  const proc = Bun.spawn([bin, "controlplane", "serve"], { env: cpEnv(dir, port, database), stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/healthz`)).ok, `control plane at ${url}`, 60_000);
  const { token, orgId } = JSON.parse(readFileSync(join(dir, "bench.json"), "utf8")) as { token: string; orgId: string };
  return { url, token, orgId, dir, proc };
}

export async function stop(cp: Cp): Promise<void> {
  cp.proc.kill("SIGTERM");
  await cp.proc.exited;
}

/** A runtime of a new installation and its records, chained. */
export async function runtime(cp: Cp) {
  const asProcess = cp as unknown as ControlPlaneProcess;
  const rt = await bootstrapRuntime(asProcess, (await createInstallation(asProcess, await createAgent(asProcess))).id);
  const chain = new AuditChain();
  const record = (ts: number) => chain.stamp(runtimeRecord(rt, { id: newId("auditRecord", ts), ts: new Date(ts).toISOString() }) as never);
  return { token: rt.token, record };
}

/** Polls an organization's `path` every 250 ms until `done` says so. */
export async function followed(cp: Cp, path: string, done: (j: any) => boolean): Promise<void> {
  for (;;) {
    const r = await api(cp, "GET", org(cp, path));
    if (done(r.json)) return;
    await Bun.sleep(250);
  }
}
