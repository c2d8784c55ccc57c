// svc bot init|list|status|agents list|credential against a real control plane, including
// the credential's refusals before issuing (stdout on a pty, /dev/null), the one-time,
// pipe-or-file-only write, and a write that fails after issuing (EPIPE).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlaneProcess, cleanup, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { api, cliEnv, createAgent, org, replicaId, svc, svcOnTerminal, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let agentId: string;
beforeAll(async () => {
  cp = await startControlPlane();
  agentId = await createAgent(cp, "helpdesk-agent");
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

async function init(name: string): Promise<string> {
  const r = await svc(cp, ["bot", "init", "--platform", "chatui", "--name", name, "--agent", agentId, "--workspace", "default", "--json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout).id;
}

test("init creates an installation bound to the agent", async () => {
  const r = await svc(cp, ["bot", "init", "--platform", "chatui", "--name", "helpdesk", "--agent", agentId, "--workspace", "default"]);
  expect(r.code).toBe(0);
  const id = /Created installation (inst_[0-9A-Z]+) \(helpdesk\)/.exec(r.stdout)?.[1];
  expect(id).toBeDefined();
  expect(r.stderr).toContain(`svc bot credential --installation ${id} --workspace default`);
  const got = await api(cp, "GET", org(cp, `/installations/${id}`));
  expect(got.json).toMatchObject({ name: "helpdesk", platform: "chatui", agent_id: agentId });
});

test("init with an unknown agent shows the control plane's refusal and code", async () => {
  const r = await svc(cp, ["bot", "init", "--platform", "chatui", "--name", "x", "--agent", "agt_00000000000000000000000000", "--workspace", "default"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc bot init: .+ \((agent_not_found|not_found)\)$/);
  expect(r.stderr.trim().split("\n").length).toBe(1);
});

test("init in an unknown workspace names the code", async () => {
  const r = await svc(cp, ["bot", "init", "--platform", "chatui", "--name", "x", "--agent", agentId, "--workspace", "nope"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc bot init: .+ \(workspace_not_found\)$/);
});

test("list: aligned table and --json", async () => {
  const id = await init("lister");
  const table = await svc(cp, ["bot", "list"]);
  expect(table.code).toBe(0);
  const lines = table.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^ID\s+NAME\s+PLATFORM\s+AGENT\s+WORKSPACE\s+CREATED$/);
  const row = lines.find((l) => l.startsWith(id))!;
  expect(row).toContain("lister");
  expect(row).toContain(agentId);
  // Columns line up: NAME starts at the same offset in the header and the row.
  expect(row.indexOf("lister")).toBe(lines[0]!.indexOf("NAME"));
  const json = await svc(cp, ["bot", "list", "--workspace", "default", "--json"]);
  expect(JSON.parse(json.stdout).installations.map((i: { id: string }) => i.id)).toContain(id);
});

test("status shows the installation and its replicas; agents list shows the bound agent", async () => {
  const id = await init("status-bot");
  const noReplica = await svc(cp, ["bot", "status", "--installation", id]);
  expect(noReplica.code).toBe(0);
  expect(noReplica.stdout).toMatch(/installation:\s+inst_/);
  expect(noReplica.stdout).toMatch(/replicas:\s+0/);

  const cred = await api(cp, "POST", org(cp, `/installations/${id}/credential`), { rotate: false });
  const { generateX25519Identity, identityToRecipient } = await import("age-encryption");
  const rep = replicaId();
  const boot = await api(
    cp,
    "POST",
    "/runtime/bootstrap",
    { replica_id: rep, credential_sync_recipient: await identityToRecipient(await generateX25519Identity()), version: "9.9.9" },
    cred.json.token,
  );
  expect(boot.status).toBe(200);
  const st = await svc(cp, ["bot", "status", "--installation", id]);
  expect(st.stdout).toMatch(/REPLICA\s+STATE\s+REVISION/);
  expect(st.stdout).toContain(rep);
  expect(st.stdout).toContain("9.9.9");
  const json = JSON.parse((await svc(cp, ["bot", "status", "--installation", id, "--json"])).stdout);
  expect(json.replicas.map((r: { id: string }) => r.id)).toEqual([rep]);

  const agents = await svc(cp, ["bot", "agents", "list", "--installation", id]);
  expect(agents.code).toBe(0);
  expect(agents.stdout).toContain(agentId);
  expect(agents.stdout).toContain("helpdesk-agent");
  expect(JSON.parse((await svc(cp, ["bot", "agents", "list", "--installation", id, "--json"])).stdout).agents[0].id).toBe(agentId);
});

test("status of an unknown installation: exit 1 with the code", async () => {
  const r = await svc(cp, ["bot", "status", "--installation", "inst_00000000000000000000000000"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc bot status: .+ \(not_found\)$/);
});

test("credential refuses a terminal: exit 1, no token issued", async () => {
  const id = await init("tty-bot");
  const r = await svcOnTerminal(cp, ["bot", "credential", "--installation", id, "--workspace", "default"]);
  expect(r.code).toBe(1);
  const all = r.stdout + r.stderr;
  expect(all).toContain("refusing to write the runtime token to a terminal");
  expect(all).toContain("pipe it to a secret manager");
  expect(all).not.toMatch(/svc_rt_/);
  const got = await api(cp, "GET", org(cp, `/installations/${id}`));
  expect(got.json.has_credential).toBe(false);
});

test("credential refuses /dev/null before issuing: the token would be lost", async () => {
  const id = await init("null-bot");
  const proc = Bun.spawnSync(["sh", "-c", '"$@" > /dev/null', "sh", ...svcCommand(), "bot", "credential", "--installation", id, "--workspace", "default"], { env: cliEnv(cp, tempHome()) });
  expect(proc.exitCode).toBe(1);
  const err = proc.stderr.toString();
  expect(err).toStartWith("svc bot credential: refusing to write the runtime token to a device such as /dev/null");
  expect(err).toContain("pipe it to a secret manager");
  expect((await api(cp, "GET", org(cp, `/installations/${id}`))).json.has_credential).toBe(false);
});

test("a pipe whose reader is gone: the token is issued but lost, and the message says to rotate", async () => {
  const id = await init("epipe-bot");
  // The pipe's read end is closed before svc starts, so the one write fails with EPIPE.
  const harness = "import os, subprocess, sys\nr, w = os.pipe()\nos.close(r)\nsys.exit(subprocess.call(sys.argv[1:], stdout=w))";
  const proc = Bun.spawnSync(["python3", "-c", harness, ...svcCommand(), "bot", "credential", "--installation", id, "--workspace", "default"], { env: cliEnv(cp, tempHome()) });
  expect(proc.exitCode).toBe(1);
  const err = proc.stderr.toString();
  expect(err).toBe(
    `svc bot credential: the runtime token of ${id} was issued but could not be written to stdout (EPIPE) and is not shown again; run \`svc bot credential --installation ${id} --workspace default --rotate\` into a working pipe or file\n`,
  );
  expect(err).not.toContain("svc_rt_");
  const rotated = await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "default", "--rotate"]);
  expect(rotated.code).toBe(0);
  expect(rotated.stdout).toMatch(/^svc_rt_\S+\n$/);
});

test("credential writes the token once to a pipe; it works on the runtime API; a second issue is refused", async () => {
  const id = await init("pipe-bot");
  const r = await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "default"]);
  expect(r.code).toBe(0);
  const token = r.stdout.trim();
  expect(r.stdout).toBe(`${token}\n`);
  expect(token).toMatch(/^svc_rt_\S+$/);
  expect(r.stderr).not.toContain("svc_rt_");
  const boot = await api(
    cp,
    "POST",
    "/runtime/bootstrap",
    { replica_id: replicaId(), credential_sync_recipient: "age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq", version: "t" },
    token,
  );
  expect(boot.status).not.toBe(401);

  const again = await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "default"]);
  expect(again.code).toBe(1);
  expect(again.stdout).toBe("");
  expect(again.stderr.trim()).toMatch(/--rotate.*\(credential_already_issued\)$/);
});

test("credential --rotate to a file: the new token works, the old one stops", async () => {
  const id = await init("rotate-bot");
  const first = (await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "default"])).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), "svc-cred-"));
  const file = join(dir, "token");
  const proc = Bun.spawnSync(["sh", "-c", `"$@" > ${file}`, "sh", ...svcCommand(), "bot", "credential", "--installation", id, "--workspace", "default", "--rotate"], {
    env: { ...process.env, HOME: dir, SVC_CONTROL_PLANE_URL: cp.url, SVC_TOKEN: cp.token },
  });
  expect(proc.exitCode).toBe(0);
  expect(proc.stderr.toString()).toContain("Rotated");
  const second = readFileSync(file, "utf8").trim();
  expect(second).toMatch(/^svc_rt_/);
  expect(second).not.toBe(first);
  const recipients = async (t: string) => api(cp, "GET", "/runtime/audit-encryption-recipients", undefined, t);
  expect((await recipients(first)).status).toBe(401);
  expect((await recipients(second)).status).toBe(200);
  cleanup(dir);
});

test("credential checks the installation is in the given workspace", async () => {
  const id = await init("ws-bot");
  await api(cp, "POST", org(cp, "/workspaces"), { name: "other" });
  const r = await svc(cp, ["bot", "credential", "--installation", id, "--workspace", "other"]);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr).toContain("not other");
  expect((await api(cp, "GET", org(cp, `/installations/${id}`))).json.has_credential).toBe(false);
});
