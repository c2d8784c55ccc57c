// How the tests start the Python MCP servers here (notes_server.py, identity_server.py,
// oauth_notes_server.py): over https with the test CA's certificate on a port of their own,
// each appending what it saw to a JSON-lines file the test reads back; up once it answers. The
// venv they run from is the one scripts/mcp-servers-venv.sh caches.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../controlplane-process.ts";
import { testTls } from "../tls.ts";

let bin: string | null = null;

/** The venv's bin directory (installed once by the repo script, cached under /var/cache/svc). */
export function mcpServersBin(): string {
  if (bin) return bin;
  const r = Bun.spawnSync(["bash", join(import.meta.dir, "../../../scripts/mcp-servers-venv.sh")], { stdout: "pipe", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error("scripts/mcp-servers-venv.sh failed");
  bin = r.stdout.toString().trim().split("\n").at(-1)!;
  return bin;
}

/** Resolves once `url` answers anything (a 401 or 405 is an answer); throws if `proc` exits first or 30 s pass. */
export async function waitForAnswer(proc: Subprocess, url: string, name: string, o: { ca?: string; everyMs: number }): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}`);
    const init = { method: "GET", signal: AbortSignal.timeout(1000), ...(o.ca ? { tls: { ca: o.ca } } : {}) } as RequestInit;
    const up = await fetch(url, init).then(
      () => true,
      () => false,
    );
    if (up) return;
    if (Date.now() > deadline) throw new Error(`${name} did not answer within 30 s`);
    await Bun.sleep(o.everyMs);
  }
}

export type PythonMcpServer<Entry> = { url: string; port: number; entries(): Entry[]; stop(): Promise<void> };

/**
 * `script` (beside this file) under the venv's python with --port, --cert, --key, `logFlag`
 * naming its JSON-lines file, and `args`; resolves once it answers on /mcp.
 */
export async function startPythonMcpServer<Entry>(script: string, o: { port?: number; logFlag: string; args?: string[] }): Promise<PythonMcpServer<Entry>> {
  const tls = testTls();
  const port = o.port ?? freePort();
  const log = join(mkdtempSync(join(tmpdir(), `svc-mcp-${basename(script, ".py")}-`)), "log.jsonl");
  writeFileSync(log, "");
  const argv = [join(mcpServersBin(), "python"), join(import.meta.dir, script), "--port", String(port), "--cert", tls.certFile, "--key", tls.keyFile, o.logFlag, log, ...(o.args ?? [])];
  const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "inherit" });
  const url = `https://127.0.0.1:${port}/mcp`;
  await waitForAnswer(proc, url, script, { ca: tls.ca, everyMs: 200 });
  return {
    url,
    port,
    entries: () =>
      readFileSync(log, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Entry),
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}
