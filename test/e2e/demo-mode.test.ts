// The README's run command in demo mode (issue 19), as a newcomer runs it: `bash
// scripts/start.sh --demo` on a fresh state directory reaches a governed chat with no provider
// account: the demo model calls a tool, svc permits it under the owner's identity, a write is
// refused, and a Ctrl-C (SIGINT to the script alone, as a terminal sends it to the foreground
// job) stops everything once, the spool drained.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";
import { chatTurn, messageText, modelIds, signIn } from "../support/openwebui.ts";

setDefaultTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), "svc-demo-"));
const ports = { cp: freePort(), chat: freePort(), demo: freePort() };
let script: ReturnType<typeof Bun.spawn> | null = null;
let out = "";
const OWNER = "owner@example.com";

async function cp(path: string): Promise<any> {
  const token = readFileSync(join(dir, "controlplane/owner-api-token"), "utf8").trim();
  const res = await fetch(`http://127.0.0.1:${ports.cp}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("start.sh runs the runtime as UID 10001: run this suite as root (CI does)");
  script = Bun.spawn(["bash", "scripts/start.sh", "--demo"], {
    cwd: REPO,
    env: { ...process.env, SVC_LOCAL_DIR: dir, SVC_CP_PORT: String(ports.cp), SVC_CHAT_PORT: String(ports.chat), SVC_DEMO_PORT: String(ports.demo), SVC_TOKEN: undefined, SVC_CONTROL_PLANE_URL: undefined },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const s of [script.stdout, script.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = s.getReader();
      const dec = new TextDecoder();
      for (let r = await reader.read(); !r.done; r = await reader.read()) out += dec.decode(r.value, { stream: true });
    })();
  }
  await waitFor(() => {
    if (script!.exitCode !== null) throw new Error(`start.sh exited ${script!.exitCode}:\n${out}`);
    return out.includes("Ctrl-C stops everything.");
  }, "start.sh --demo to say everything is ready", 280_000);
});

afterAll(async () => {
  if (script && script.exitCode === null) {
    script.kill("SIGINT");
    await script.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("bash scripts/start.sh --demo", () => {
  test("the terminal shows the ready summary once, with the absolute svc, and no server output", () => {
    expect(out).toContain(`http://127.0.0.1:${ports.chat}`);
    expect(out).toContain(`CLI: ${REPO}/dist/svc`);
    expect(out.match(/Try it \(demo mode/g)?.length).toBe(1);
    // Open WebUI's and the servers' own output went to the log files, not the terminal.
    expect(out).not.toContain("uvicorn");
    expect(out).not.toContain('"level":');
    expect(readFileSync(join(dir, "logs/runtime.log"), "utf8")).toContain("svc functions seeded");
  });

  test("the demo model calls a tool, svc permits it and audits it under the owner's identity", async () => {
    const password = readFileSync(join(dir, "controlplane/chat-admin-password"), "utf8").trim();
    const admin = await signIn(`http://127.0.0.1:${ports.chat}`, OWNER, password);
    expect(await modelIds(`http://127.0.0.1:${ports.chat}`, admin)).toEqual(["svc.svc-demo"]);
    const turn = await chatTurn(`http://127.0.0.1:${ports.chat}`, admin, { model: "svc.svc-demo", content: "look up customer c-1", toolIds: ["acme_crm"] });
    expect(messageText(turn.message)).toContain("Ada Lovelace <ada@example.com>");

    const write = await chatTurn(`http://127.0.0.1:${ports.chat}`, admin, { model: "svc.svc-demo", content: "change the email of customer c-1 to ada@new.example", toolIds: ["acme_crm"] });
    expect(messageText(write.message)).toContain("Refused (svc.denied)");

    const me = await cp("/me");
    const owner = (await cp(`/organizations/${me.organization.id}/users?email=${encodeURIComponent(OWNER)}`)).users[0];
    await waitFor(async () => {
      const recs = (await cp(`/organizations/${me.organization.id}/audit-records?limit=50&kind=tool`)).records as any[];
      const permit = recs.find((r) => r.tool_name === "crm.lookup_customer" && r.decision === "permit");
      const deny = recs.find((r) => r.tool_name === "crm.update" && r.decision === "deny");
      return !!permit && !!deny && permit.subject.user_id === owner.id && deny.subject.user_id === owner.id;
    }, "the permit and the deny in the audit, under the owner's svc user", 60_000);
  });

  test("Ctrl-C stops everything once: one signal to svc run, the spool drained", async () => {
    script!.kill("SIGINT");
    expect(await script!.exited).not.toBe(null);
    const log = readFileSync(join(dir, "logs/runtime.log"), "utf8");
    const stops = log.split("\n").filter((l) => /"event":"stopped \(SIG/.test(l));
    expect(stops).toHaveLength(1);
    expect(log).toMatch(/"event":"stopped","unshipped":0/);
    expect(log).not.toContain("SIGKILL");
    const left = Bun.spawnSync(["pgrep", "-f", dir]).stdout.toString().trim();
    expect(left).toBe("");
  });
});
