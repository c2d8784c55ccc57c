// The README's run command (scripts/start.sh), control-plane mode: a fresh state dir gets a
// first owner, an agent, an installation and a runtime credential (file mode 0600); a second
// start reuses them and says it is a later run; Ctrl-C on a terminal whose output is piped
// through tee stops every server. The runtime half is exercised by the end-to-end suite.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";
import { listening, onTerminal, processesWithEnv } from "../support/terminal.ts";

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

/** What start.sh printed up to its last line before the servers run ("Ctrl-C stops it."). */
async function output(proc: Awaited<ReturnType<typeof start>>): Promise<string> {
  let text = "";
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (text.includes("Ctrl-C stops it.")) break;
  }
  reader.releaseLock();
  return text;
}

test("start.sh sets up a working control plane once and reuses it", async () => {
  const port = freePort();
  const first = await start(port);
  const firstOut = await output(first);
  await waitFor(
    () => {
      try {
        return statSync(join(dir, "agent-id")).size > 0;
      } catch {
        return false;
      }
    },
    "the first-run set-up",
    60_000,
  );
  const token = readFileSync(join(dir, "runtime-token"), "utf8").trim();
  expect(token).toMatch(/^svc_rt_/);
  expect(statSync(join(dir, "runtime-token")).mode & 0o777).toBe(0o600);
  const owner = readFileSync(join(dir, "controlplane/owner-api-token"), "utf8").trim();
  const me = (await (await fetch(`http://127.0.0.1:${port}/api/v1/me`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { organization: { id: string } };
  const insts = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/installations`, { headers: { authorization: `Bearer ${owner}` } })).json()) as {
    installations: { id: string; platform: string }[];
  };
  expect(insts.installations.map((i) => i.platform)).toEqual(["chatui"]);
  // the audit's signing key is printed on the first run, as the control plane names it
  const key = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/audit-signing-key`, { headers: { authorization: `Bearer ${owner}` } })).json()) as {
    public_key: string;
    fingerprint: string;
  };
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
  // a later run says what a later run does: nothing installed or created again
  expect(out).toStartWith("start: checking what svc needs and building dist/svc…\n");
  expect(out).toContain("A later run on the same state: nothing was created again.");
  expect(out).not.toContain("first run");
  const after = (await (await fetch(`http://127.0.0.1:${port}/api/v1/organizations/${me.organization.id}/installations`, { headers: { authorization: `Bearer ${owner}` } })).json()) as {
    installations: unknown[];
  };
  expect(after.installations.length).toBe(1);
  expect(readFileSync(join(dir, "runtime-token"), "utf8").trim()).toBe(token);
  again.kill("SIGTERM");
  await again.exited;
});

test("Ctrl-C on a terminal with the output piped through tee (the reader dies too): every server stops, and the stop is still shown", async () => {
  const own = mkdtempSync(join(tmpdir(), "svc-start-tty-"));
  const port = freePort();
  try {
    const term = onTerminal(`bash scripts/start.sh 2>&1 | tee ${own}/start.log`, { env: { ...process.env, SVC_LOCAL_DIR: own, SVC_CP_PORT: String(port), SVC_START_NO_RUNTIME: "1" } });
    await term.shows("Ctrl-C stops it.", 120_000);
    expect(await listening(port)).toBe(true);
    term.ctrlC();
    expect(await term.exited).toBe(130);
    // tee died of the same Ctrl-C: the last words reached the terminal itself
    expect(term.screen()).toContain("start: stopping…");
    expect(term.screen().trimEnd()).toEndWith("start: stopped");
    expect(term.screen().match(/start: stopp/g)).toHaveLength(2); // "stopping…" and "stopped", once each
    await waitFor(async () => processesWithEnv(`SVC_LOCAL_DIR=${own}`).length === 0 && !(await listening(port)), "every process of the run to be gone", 15_000);
  } finally {
    for (const pid of processesWithEnv(`SVC_LOCAL_DIR=${own}`)) process.kill(pid, "SIGKILL");
    rmSync(own, { recursive: true, force: true });
  }
});
