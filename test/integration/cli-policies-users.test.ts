// svc policies create|list and svc users resolve|remote-identities list against a real
// control plane.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { newId } from "../../src/contract/ids.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let agent: string;
beforeAll(async () => {
  cp = await startControlPlane();
  agent = await createAgent(cp);
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

const create = async (name: string, src: string, dst: string, extra: string[] = []) =>
  svc(cp, ["policies", "create", "--name", name, "--src-pattern", src, "--dst-pattern", dst, "--effect", "permit", "--workspace", "default", ...extra]);

test("policies create with --agent-id binds the policy; list shows it", async () => {
  const r = await create("chat", "*", "model:invoke", ["--agent-id", agent, "--json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const p = JSON.parse(r.stdout);
  expect(p).toMatchObject({ name: "chat", src: "*", dst: "model:invoke", effect: "permit", agent_id: agent });
  const stored = await api(cp, "GET", org(cp, `/policies?workspace=default&agent_id=${agent}`));
  expect(stored.json.policies.map((x: { id: string }) => x.id)).toContain(p.id);

  const human = await create("crm-writers", "group:sales", "tool:crm.update", ["--agent-id", agent]);
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(/Created policy pol_\w+ \(crm-writers\): permit group:sales → tool:crm\.update for agent agt_/);

  const list = await svc(cp, ["policies", "list", "--workspace", "default"]);
  expect(list.code).toBe(0);
  const lines = list.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^ID\s+NAME\s+SRC\s+DST\s+EFFECT\s+MODE\s+CONDITION\s+AGENT\s+CREATED$/);
  expect(lines.some((l) => l.includes("crm-writers") && l.includes("tool:crm.update"))).toBe(true);
  const json = JSON.parse((await svc(cp, ["policies", "list", "--workspace", "default", "--agent-id", agent, "--json"])).stdout);
  expect(json.policies.map((x: { name: string }) => x.name).sort()).toEqual(["chat", "crm-writers"]);
});

test("a bad pattern is named (exit 2) and nothing is created", async () => {
  const before = (await api(cp, "GET", org(cp, "/policies?workspace=default"))).json?.policies?.length ?? 0;
  const r = await create("bad", "role:admin", "model:invoke");
  expect(r.code).toBe(2);
  expect(r.stderr.split("\n")[0]).toBe('svc policies create: src-pattern "role:admin": unknown kind "role" (use "user:", "group:" or "*"); fix --src-pattern and run it again (invalid_pattern)');
  const d = await create("bad", "*", "tool:");
  expect(d.code).toBe(2);
  expect(d.stderr).toContain('the tool name after "tool:" is empty');
  const email = await create("bad", "user:alice@example.com", "model:invoke");
  expect(email.code).toBe(2);
  expect(email.stderr).toContain("svc users resolve --email alice@example.com");
  const after = (await api(cp, "GET", org(cp, "/policies?workspace=default"))).json?.policies?.length ?? 0;
  expect(after).toBe(before);
});

test("a condition is checked by the control plane: a type error is named with its line and column, a good one is kept", async () => {
  const bad = await create("credits", "group:sales", "tool:crm.credit", ["--condition", "args.amount <= 'five' + 1"]);
  expect(bad.code).toBe(1);
  expect(bad.stderr.split("\n")[0]).toBe(
    "svc policies create: condition: line 1, column 16: no such overload: string + int; fix --condition at the line and column named and run it again (invalid_condition)",
  );
  const good = await create("credits", "group:sales", "tool:crm.credit", ["--condition", "args.amount <= 500", "--mode", "shadow", "--agent-id", agent]);
  expect(good.code).toBe(0);
  expect(good.stdout).toMatch(/Created policy pol_\w+ \(credits\): permit group:sales → tool:crm\.credit when args\.amount <= 500 for agent agt_\w+ \(shadow: recorded, not enforced\)\./);
  const mode = await create("credits", "group:sales", "tool:crm.credit", ["--mode", "audit"]);
  expect([mode.code, mode.stderr.split("\n")[0]]).toEqual([2, 'svc policies create: --mode must be "enforce" or "shadow", not "audit"']);
});

test("policies list of an unknown workspace names the code", async () => {
  const r = await svc(cp, ["policies", "list", "--workspace", "nope"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc policies list: .+ \(workspace_not_found\)$/);
});

test("policies create with user:<service user id> from svc users resolve", async () => {
  const u = await api(cp, "POST", org(cp, "/users"), { email: "carol@example.com", display_name: "Carol" });
  expect(u.status).toBeLessThan(300);
  const id = JSON.parse((await svc(cp, ["users", "resolve", "--email", "carol@example.com", "--json"])).stdout).id;
  expect(id).toBe(u.json.id);
  const r = await create("carol-chat", `user:${id}`, "model:invoke", ["--agent-id", agent, "--json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ src: `user:${id}`, dst: "model:invoke" });
});

test("users resolve and remote-identities list", async () => {
  const u = await api(cp, "POST", org(cp, "/users"), { email: "alice@example.com", display_name: "Alice" });
  expect(u.status).toBeLessThan(300);
  const link = await api(cp, "POST", org(cp, `/users/${u.json.id}/remote-identities`), { platform: "chatui", remote_user_id: "owui-user-1" });
  expect(link.status).toBeLessThan(300);

  const r = await svc(cp, ["users", "resolve", "--email", "Alice@Example.com"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`user:\\s+${u.json.id}`));
  expect(r.stdout).toMatch(/email:\s+alice@example.com/);
  expect(JSON.parse((await svc(cp, ["users", "resolve", "--email", "alice@example.com", "--json"])).stdout).id).toBe(u.json.id);

  const ids = await svc(cp, ["users", "remote-identities", "list", u.json.id]);
  expect(ids.code).toBe(0);
  expect(ids.stdout).toMatch(/^ID\s+PLATFORM\s+REMOTE USER\s+INSTALLATION\s+LINKED/);
  expect(ids.stdout).toContain("owui-user-1");
  const byEmail = JSON.parse((await svc(cp, ["users", "remote-identities", "list", "alice@example.com", "--json"])).stdout);
  expect(byEmail.remote_identities[0]).toMatchObject({ platform: "chatui", remote_user_id: "owui-user-1" });
});

test("users resolve of an unknown email: exit 1 with the code", async () => {
  const r = await svc(cp, ["users", "resolve", "--email", "nobody@example.com"]);
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc users resolve: no service user has the email nobody@example.com.*\(not_found\)$/);
});

test("users invite: a one-time link to set a chat password for a chat user without a console account (no console access)", async () => {
  const r = await svc(cp, ["users", "invite", "Invitee@Example.com"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^user:\s+usr_\w+ \(created\)$/m);
  expect(r.stdout).toMatch(/^email:\s+invitee@example\.com$/m);
  const link = /^link:\s+(\S+)$/m.exec(r.stdout)?.[1];
  expect(link).toStartWith(`${cp.url}/invite/svc_iv_`);
  expect(r.stdout).toContain("gives no console access");
  // the service user exists now; the invitation page answers, and the link is one-time
  const user = await svc(cp, ["users", "resolve", "--email", "invitee@example.com", "--json"]);
  expect(JSON.parse(user.stdout)).toMatchObject({ email: "invitee@example.com", source: "manual" });
  const page = await fetch(link!);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("Set your chat password");
  // --json: the same fields; a second invitation reuses the user
  const again = JSON.parse((await svc(cp, ["users", "invite", "invitee@example.com", "--json"])).stdout);
  expect(again).toMatchObject({ email: "invitee@example.com", user_created: false });
  expect(again.url).not.toBe(link);
  // not an email: exit 2, nothing created
  const bad = await svc(cp, ["users", "invite", "invitee"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('"invitee" is not an email address');
  expect((await svc(cp, ["users", "resolve", "--email", "invitee@nowhere"])).code).toBe(1);
});

test("policies test: the decision and the deciding policy on the installation's current bundle, conditions on --args included", async () => {
  const testAgent = await createAgent(cp);
  const inst = await createInstallation(cp, testAgent);
  const rt = await bootstrapRuntime(cp, inst.id);
  expect((await api(cp, "PUT", "/runtime/tools", { tools: [{ name: "crm.credit", access: "write" }] }, rt.token)).status).toBeLessThan(300);
  const user = (await api(cp, "POST", org(cp, "/users"), { email: "whatif@example.com" })).json;
  const p = JSON.parse((await create("small credits", `user:${user.id}`, "tool:crm.credit", ["--agent-id", testAgent, "--condition", "args.amount <= 500", "--json"])).stdout);
  const run = async (args: string) => svc(cp, ["policies", "test", "--user", "whatif@example.com", "--tool", "crm.credit", "--args", args, "--installation", inst.id, "--json"]);
  const small = await run('{"amount": 200}');
  expect(small.stderr).toBe("");
  expect(JSON.parse(small.stdout)).toMatchObject({ decision: "permit", policy: { id: p.id, name: "small credits" }, installation_id: inst.id, not_linked: true });
  const big = JSON.parse((await run('{"amount": 900}')).stdout);
  expect(big).toMatchObject({ decision: "deny", code: "svc.denied", policy: null });
  const human = await svc(cp, ["policies", "test", "--user", user.id, "--tool", "crm.credit", "--args", '{"total": 1}', "--installation", inst.id]);
  expect(human.code).toBe(0);
  expect(human.stdout).toContain("could not evaluate its condition (field not found: amount)");
  expect(human.stdout).toContain("no front-end identity in this installation");
  const bad = await svc(cp, ["policies", "test", "--user", user.id, "--tool", "crm.credit", "--args", "[1]", "--installation", inst.id]);
  expect([bad.code, bad.stderr.split("\n")[0]]).toEqual([2, "svc policies test: --args must be a JSON object such as '{\"amount\": 200}'"]);
}, 60_000);

test("policies as code: export, apply (dry run, apply, again), update and delete", async () => {
  await api(cp, "POST", org(cp, "/workspaces"), { name: "code" });
  const dir = mkdtempSync(join(tmpdir(), "svc-policies-code-"));
  const file = join(dir, "policies.yaml");
  writeFileSync(
    file,
    [
      "workspace: code",
      "policies:",
      "  - name: small credits",
      "    src: group:sales",
      "    dst: tool:crm.credit",
      "    effect: permit",
      "    condition: args.amount <= 500",
      "  - name: chat",
      "    src: '*'",
      "    dst: model:invoke",
      "    effect: permit",
      "    mode: shadow",
      "",
    ].join("\n"),
  );
  const dry = await svc(cp, ["policies", "apply", "-f", file, "--dry-run"]);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toBe("+ create small credits\n+ create chat\nDry run: nothing was changed.\n");
  expect(dry.stderr).toContain('warning: tool "crm.credit" is not registered');
  expect((await api(cp, "GET", org(cp, "/policies?workspace=code"))).json.policies).toEqual([]);
  const strict = await svc(cp, ["policies", "apply", "-f", file, "--strict"]);
  expect(strict.code).toBe(1);
  expect(strict.stderr).toContain("(unregistered_tool)");
  const applied = await svc(cp, ["policies", "apply", "-f", file]);
  expect(applied.stdout).toContain("Applied to workspace code.");
  const again = await svc(cp, ["policies", "apply", "-f", file]);
  expect(again.stdout.trim()).toBe("No changes: the workspace's policies already match the file.");
  // export writes what apply reads: applying the export changes nothing
  const exported = await svc(cp, ["policies", "export", "--workspace", "code"]);
  expect(exported.stdout).toContain("condition: args.amount <= 500");
  writeFileSync(join(dir, "exported.yaml"), exported.stdout);
  expect((await svc(cp, ["policies", "apply", "-f", join(dir, "exported.yaml")])).stdout.trim()).toBe("No changes: the workspace's policies already match the file.");

  const chat = (await api(cp, "GET", org(cp, "/policies?workspace=code"))).json.policies.find((p: { name: string }) => p.name === "chat");
  const up = await svc(cp, ["policies", "update", chat.id, "--mode", "enforce", "--condition", "'staff' in user.groups"]);
  expect(up.stdout.trim()).toBe(`Updated policy ${chat.id} (chat): permit * → model:invoke when 'staff' in user.groups.`);
  const drift = await svc(cp, ["policies", "apply", "-f", file, "--dry-run"]);
  expect(drift.stdout).toContain(`~ update chat (${chat.id}): condition, mode`);
  expect((await svc(cp, ["policies", "delete", chat.id])).stdout.trim()).toBe(`Deleted policy ${chat.id}.`);
  const gone = await svc(cp, ["policies", "delete", chat.id]);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain("(not_found)");
  expect((await svc(cp, ["policies", "update", chat.id])).stderr).toContain("nothing to change");
}, 60_000);

test("policies simulate replays recorded decisions against a proposed file; encrypted arguments with --identity, the rest named as not judged", async () => {
  const simAgent = await createAgent(cp);
  const inst = await createInstallation(cp, simAgent);
  const rt = await bootstrapRuntime(cp, inst.id);
  await api(cp, "PUT", "/runtime/tools", { tools: [{ name: "crm.refund", access: "write" }] }, rt.token);
  const user = (await api(cp, "POST", org(cp, "/users"), { email: "sim@example.com" })).json;
  expect((await api(cp, "POST", org(cp, `/users/${user.id}/remote-identities`), { platform: "chatui", remote_user_id: "fe-sim" })).status).toBe(201);
  await create("sim refunds", `user:${user.id}`, "tool:crm.refund", ["--agent-id", simAgent]);
  const identity = await generateX25519Identity();
  const seal = async (args: unknown) => {
    const e = new Encrypter();
    e.addRecipient(await identityToRecipient(identity));
    return Buffer.from(await e.encrypt(JSON.stringify({ arguments: args, payload: null }))).toString("base64");
  };
  const b = rt.bootstrap;
  const record = (ciphertext: string | null) => {
    const ts = new Date(Date.now() - 3_600_000).toISOString();
    return {
      id: newId("auditRecord", Date.parse(ts)),
      ts,
      kind: "tool",
      harness: "chatui",
      organization_id: b.organization_id,
      workspace_id: b.workspace_id,
      installation_id: inst.id,
      agent_id: b.agent_id,
      action: "tool:crm.refund",
      tool_name: "crm.refund",
      decision: "permit",
      reason: "policy",
      policy_revision: 1,
      subject: { user_id: user.id, remote_user_id: "fe-sim", via_installation: false },
      args_digest: ciphertext ? null : `hmac-sha256:${"0".repeat(64)}`,
      digest_key_id: ciphertext ? null : b.digest_key.id,
      recipient_key_ids: ciphertext ? ["key_sim"] : [],
      ciphertext,
    };
  };
  const big = record(await seal({ amount: 900 }));
  const small = record(await seal({ amount: 100 }));
  const hidden = record(null);
  expect((await api(cp, "POST", "/runtime/audit-records", { records: [big, small, hidden] }, rt.token)).json.inserted).toBe(3);

  const dir = mkdtempSync(join(tmpdir(), "svc-simulate-"));
  const idFile = join(dir, "id.txt");
  writeFileSync(idFile, `${identity}\n`, { mode: 0o600 });
  const proposed = join(dir, "proposed.yaml");
  writeFileSync(
    proposed,
    ["workspace: default", "policies:", "  - name: sim refunds", `    src: user:${user.id}`, "    dst: tool:crm.refund", "    effect: permit", "    condition: args.amount <= 500", ""].join("\n"),
  );
  const current = JSON.parse((await svc(cp, ["policies", "simulate", "--since", "1d", "--json"])).stdout);
  expect(current.changed.filter((c: { id: string }) => [big.id, small.id, hidden.id].includes(c.id))).toEqual([]);
  const r = await svc(cp, ["policies", "simulate", "--since", "1d", "-f", proposed, "--identity", idFile, "--json"]);
  expect(r.stderr).toBe("");
  const sim = JSON.parse(r.stdout);
  const mine = (xs: Record<string, unknown>[]) => xs.filter((x) => [big.id, small.id, hidden.id].includes(x.id as string));
  expect(mine(sim.changed)).toEqual([
    { id: big.id, ts: big.ts, tool: "crm.refund", user: "sim@example.com", was: "permit", would: "deny", policy: "Refused (svc.denied): no policy permits tool:crm.refund for this user" },
  ]);
  expect(mine(sim.not_judged)).toEqual([{ id: hidden.id, ts: hidden.ts, tool: "crm.refund", why: "digest-only: no arguments were stored" }]);
  // without the identity the encrypted ones cannot be judged either, and the text says so
  const blind = await svc(cp, ["policies", "simulate", "--since", "1d", "-f", proposed]);
  expect(blind.stdout).toContain(`${big.id}`);
  expect(blind.stdout).toContain("encrypted: pass --identity to replay it with its arguments");
  expect(blind.stdout).toMatch(/Replayed \d+ of \d+ tool decisions since 1d against .*proposed\.yaml: \d+ would change, \d+ could not be judged\./);
}, 60_000);

test("--workspace means the same across the group: delete, update, test and simulate take it and keep to that workspace", async () => {
  await api(cp, "POST", org(cp, "/workspaces"), { name: "elsewhere" });
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt = await bootstrapRuntime(cp, inst.id);
  await api(cp, "PUT", "/runtime/tools", { tools: [{ name: "crm.scoped", access: "read" }] }, rt.token);
  const user = (await api(cp, "POST", org(cp, "/users"), { email: "scoped@example.com" })).json;
  const p = JSON.parse((await create("scoped", `user:${user.id}`, "tool:crm.scoped", ["--agent-id", agent, "--json"])).stdout);

  // a policy of "default" named with another workspace: refused, nothing changed
  for (const args of [
    ["policies", "delete", p.id, "--workspace", "elsewhere"],
    ["policies", "update", p.id, "--effect", "deny", "--workspace", "elsewhere"],
  ]) {
    const r = await svc(cp, args);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`policy ${p.id} is not in workspace elsewhere; nothing was changed`);
    expect(r.stderr.trim()).toEndWith("(not_found)");
  }
  expect((await api(cp, "GET", org(cp, "/policies?workspace=default"))).json.policies.find((x: { id: string }) => x.id === p.id)).toMatchObject({ effect: "permit" });

  // test: --workspace decides in that workspace's installation; another workspace has none
  const tested = await svc(cp, ["policies", "test", "--user", user.id, "--tool", "crm.scoped", "--workspace", "default", "--installation", inst.id, "--json"]);
  expect(tested.stderr).toBe("");
  expect(JSON.parse(tested.stdout)).toMatchObject({ decision: "permit", installation_id: inst.id });
  const none = await svc(cp, ["policies", "test", "--user", user.id, "--tool", "crm.scoped", "--workspace", "elsewhere"]);
  expect(none.code).toBe(2);
  expect(none.stderr).toContain("workspace elsewhere has no installation yet");
  const wrong = await svc(cp, ["policies", "test", "--user", user.id, "--tool", "crm.scoped", "--workspace", "elsewhere", "--installation", inst.id]);
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toContain(`installation ${inst.id} is not in workspace elsewhere`);

  // simulate: --workspace replays only that workspace's decisions
  const rec = runtimeRecord(rt, { action: "tool:crm.scoped", tool_name: "crm.scoped", subject: { user_id: user.id, remote_user_id: "fe-scoped", via_installation: false } });
  expect((await api(cp, "POST", "/runtime/audit-records", { records: [rec] }, rt.token)).json.inserted).toBe(1);
  const here = JSON.parse((await svc(cp, ["policies", "simulate", "--since", "1d", "--workspace", "default", "--json"])).stdout);
  const there = JSON.parse((await svc(cp, ["policies", "simulate", "--since", "1d", "--workspace", "elsewhere", "--json"])).stdout);
  expect(here.records).toBeGreaterThanOrEqual(1);
  expect(there).toMatchObject({ records: 0, replayed: 0 });

  // and delete with the right workspace works, with --json like the rest of the group
  const del = await svc(cp, ["policies", "delete", p.id, "--workspace", "default", "--json"]);
  expect(del.code).toBe(0);
  expect(JSON.parse(del.stdout)).toEqual({ deleted: p.id });
}, 60_000);
