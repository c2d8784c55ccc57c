// The README's run command (scripts/start.sh), control-plane mode: a fresh state dir gets a
// first owner, an agent, an installation and a runtime credential (file mode 0600); a second
// start reuses them. The runtime half is exercised by the end-to-end suite.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";

setDefaultTimeout(180_000);
const dir = mkdtempSync(join(tmpdir(), "svc-start-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(port: number) {
  const proc = Bun.spawn(["bash", "scripts/start.sh"], {
    cwd: REPO,
    env: { ...process.env, SVC_LOCAL_DIR: dir, SVC_CP_PORT: String(port), SVC_START_NO_RUNTIME: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, "the control plane of start.sh", 120_000);
  return proc;
}

/** What start.sh printed up to its "where to go" lines. */
async function output(proc: Awaited<ReturnType<typeof start>>): Promise<string> {
  let text = "";
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (text.includes("with-token")) break;
  }
  reader.releaseLock();
  return text;
}

test("start.sh sets up a working control plane once and reuses it", async () => {
  const port = freePort();
  const first = await start(port);
  const firstOut = await output(first);
  await waitFor(() => {
    try {
      return statSync(join(dir, "agent-id")).size > 0;
    } catch {
      return false;
    }
  }, "the first-run set-up", 60_000);
  const token = readFileSync(join(dir, "runtime-token"), "utf8").trim();
  expect(token).toMatch(/^svc_rt_/);
  expect(statSync(join(dir, "runtime-token")).mode & 0o777).toBe(0o600);
  const owner = readFileSync(join(dir, "controlplane/owner-api-token"), "utf8").trim();
  const me = (await (await fetch(`http://127.0.0.1:${port}/api/v1/me`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { organization: { id: string } };
  const insts = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/installations`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { installations: { id: string; platform: string }[] };
  expect(insts.installations.map((i) => i.platform)).toEqual(["chatui"]);
  // the audit's signing key is printed on the first run, as the control plane names it
  const key = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/audit-signing-key`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { public_key: string; fingerprint: string };
  expect(firstOut).toContain(`Audit checkpoint-signing key`);
  expect(firstOut).toContain(key.public_key);
  expect(firstOut).toContain(key.fingerprint);
  // the master key is kept apart from the database's folder
  expect(statSync(join(dir, "keys/master.key")).mode & 0o777).toBe(0o600);
  expect(existsSync(join(dir, "controlplane/master.key"))).toBe(false);
  first.kill("SIGTERM");
  await first.exited;

  const again = await start(port);
  const out = await output(again);
  expect(out).toContain(`http://127.0.0.1:${port}`);
  expect(out).not.toContain("Audit checkpoint-signing key");
  const after = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/installations`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { installations: unknown[] };
  expect(after.installations.length).toBe(1);
  expect(readFileSync(join(dir, "runtime-token"), "utf8").trim()).toBe(token);
  again.kill("SIGTERM");
  await again.exited;
});
