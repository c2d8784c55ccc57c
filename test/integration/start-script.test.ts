// The README's run command (scripts/start.sh), control-plane mode: a fresh state dir gets a
// first owner, an agent, an installation and a runtime credential (file mode 0600); a second
// start reuses them. The runtime half is exercised by the end-to-end suite.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
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

test("start.sh sets up a working control plane once and reuses it", async () => {
  const port = freePort();
  const first = await start(port);
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
  first.kill("SIGTERM");
  await first.exited;

  const again = await start(port);
  const out = await new Promise<string>((done) => {
    let text = "";
    const reader = (again.stdout as ReadableStream<Uint8Array>).getReader();
    void (async () => {
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) break;
        text += new TextDecoder().decode(value);
        if (text.includes("with-token")) break;
      }
      done(text);
    })();
  });
  expect(out).toContain(`http://127.0.0.1:${port}`);
  const after = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/installations`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { installations: unknown[] };
  expect(after.installations.length).toBe(1);
  expect(readFileSync(join(dir, "runtime-token"), "utf8").trim()).toBe(token);
  again.kill("SIGTERM");
  await again.exited;
});
