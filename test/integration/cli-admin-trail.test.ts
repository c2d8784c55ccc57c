// The admin trail (issue 27) through the CLI: the built binary against a real control plane
// (SQLite, or PostgreSQL with SVC_TEST_POSTGRES_URL). `svc controlplane bootstrap-admin` is one
// event by system:bootstrap; each admin command is exactly one event naming the owner, their
// API token (by id), the address and the CLI's user agent; a refused call is one event too;
// `svc audit list --kind admin --actor … --action …` finds them, `svc audit show` prints the
// actor, the target and the change, and no raw secret used here is in what the CLI reads back.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../../src/version.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, createAgent, org, svc, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
const home = tempHome();
const seen = new Set<string>();
const secrets = new Map<string, string>();

beforeAll(async () => {
  cp = await startControlPlane();
  secrets.set("the owner's API token", cp.token).set("the owner's first password", readFileSync(join(cp.dataDir, "initial-owner-password"), "utf8").trim());
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

type Event = { id: string; action: string; actor_id: string; admin: { actor: Record<string, any>; before?: any; after?: any; result: string; status: number; code?: string } };

async function fresh(): Promise<Event[]> {
  const r = await api(cp, "GET", org(cp, "/audit-records?kind=admin&limit=500"));
  const events = (r.json.records as Event[]).filter((e) => !seen.has(e.id));
  for (const e of events) seen.add(e.id);
  return events;
}

/** Runs one CLI command and returns the one admin event it wrote. */
async function one(action: string, args: string[], opts: Parameters<typeof svc>[2] & { refused?: boolean } = {}) {
  await fresh();
  const run = await svc(cp, args, { home, ...opts });
  const got = await fresh();
  const ok = opts.refused ? run.code === 1 : run.code === 0;
  expect({ args, ok, stderr: ok ? "" : run.stderr, got: got.map((e) => e.action) }).toEqual({ args, ok: true, stderr: "", got: [action] });
  return { run, event: got[0]! };
}

// The CLI's user agent: its release, and the commit a built binary embeds.
const CLI_RE = new RegExp(`^svc-cli/${VERSION.replace(/\./g, "\\.")}\\+[0-9a-z]+$`);
const CLI = expect.stringMatching(CLI_RE);

test("bootstrap-admin and each admin command are one event each, naming the owner, the token, the address and the CLI", async () => {
  const [boot, ...more] = await fresh();
  expect(more.map((e) => e.action)).toEqual([]); // startControlPlane made nothing else
  expect(boot).toMatchObject({ action: "organization.bootstrap", actor_id: "system:bootstrap", admin: { after: { owner: { email: "owner@example.com", password: "(set)" } } } });
  const tokenId = boot!.admin.after.api_token.id as string;
  const owner = { id: expect.stringMatching(/^acc_/), email: "owner@example.com", role: "owner", credential: { kind: "api_token", id: tokenId }, ip: "127.0.0.1", user_agent: CLI };

  const agent = await createAgent(cp);
  await fresh();
  const init = await one("installation.create", ["bot", "init", "--platform", "chatui", "--name", "helpdesk", "--agent", agent, "--workspace", "default", "--json"]);
  expect(init.event.admin.actor).toMatchObject(owner);
  const inst = JSON.parse(init.run.stdout).id as string;
  const cred = await one("runtime_credential.issue", ["bot", "credential", "--installation", inst, "--workspace", "default"]);
  secrets.set("the runtime token", cred.run.stdout.trim());
  expect(cred.run.stdout.trim()).toStartWith("svc_rt_");

  const created = await one("policy.create", [
    "policies",
    "create",
    "--name",
    "staff chat",
    "--src-pattern",
    "*",
    "--dst-pattern",
    "model:invoke",
    "--effect",
    "permit",
    "--workspace",
    "default",
    "--json",
  ]);
  const pol = JSON.parse(created.run.stdout).id as string;
  const updated = await one("policy.update", ["policies", "update", pol, "--effect", "deny"]);
  expect(updated.event.admin).toMatchObject({ actor: owner, before: { effect: "permit" }, after: { effect: "deny" } });
  await one("policy.delete", ["policies", "delete", pol]);
  await one("invite.create", ["users", "invite", "bob@example.com", "--json"]);
  await one("budget.create", ["budgets", "create", "--name", "daily", "--agent", agent, "--period", "day", "--tokens", "1000"]);
  await one("budget.delete", ["budgets", "delete", "daily"]);
  secrets.set("the sink's secret", "cli-sink-hmac-secret-0001");
  const sink = await one("siem_sink.create", ["audit", "sinks", "create", "--name", "siem", "--kind", "webhook", "--endpoint", "http://127.0.0.1:9/hec", "--secret-stdin"], {
    stdin: "cli-sink-hmac-secret-0001",
  });
  expect(sink.event.admin.after.secret).toMatch(/^sha256:[0-9a-f]{16}$/);
  await one("siem_sink.delete", ["audit", "sinks", "delete", "siem"]);

  // A refused call is one event too, naming who tried: an admin asking for an owner's break-glass.
  secrets.set("the admin's password", "admin-chosen-password-9");
  const admin = await api(cp, "POST", org(cp, "/members"), { email: "ada@example.com", role: "admin", password: "admin-chosen-password-9" });
  const signIn = await fetch(`${cp.url}/api/v1/auth/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ada@example.com", password: "admin-chosen-password-9" }),
  });
  const session = { cookie: signIn.headers.get("set-cookie")!.split(";")[0]!, "x-csrf-token": ((await signIn.json()) as { csrf_token: string }).csrf_token };
  const adaToken = (await (
    await fetch(`${cp.url}/api/v1${org(cp, "/api-tokens")}`, { method: "POST", headers: { "content-type": "application/json", ...session }, body: JSON.stringify({ name: "ada-cli" }) })
  ).json()) as { token: string };
  secrets.set("the admin's API token", adaToken.token);
  const refused = await one("access.refused", ["audit", "recover", "request", "rec_01AAAAAAAAAAAAAAAAAAAAAAAA", "--reason", "curious"], { env: { SVC_TOKEN: adaToken.token }, refused: true });
  expect(refused.run.stderr).toContain("only an owner");
  expect(refused.event).toMatchObject({
    actor_id: admin.json.account_id,
    admin: { result: "refused", status: 403, code: "forbidden", actor: { email: "ada@example.com", role: "admin", ip: "127.0.0.1", user_agent: CLI } },
  });

  // Searching: the table of admin events, newest first; the JSON; a bad action is a usage error.
  const table = await svc(cp, ["audit", "list", "--kind", "admin", "--actor", "owner@example.com", "--action", "policy.*"], { home });
  expect(table.code).toBe(0);
  const lines = table.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^ID\s+TIME\s+ACTION\s+ACTOR\s+TARGET\s+RESULT\s+ADDRESS$/);
  expect(lines.slice(1).map((l) => l.split(/\s+/)[3])).toEqual(["policy.delete", "policy.update", "policy.create"]);
  expect(lines[1]).toContain("owner@example.com (owner)");
  expect(lines[1]).toContain("127.0.0.1");
  const json = JSON.parse((await svc(cp, ["audit", "list", "--result", "refused", "--json"], { home })).stdout);
  expect(json.records.map((r: Event) => r.action)).toEqual(["access.refused"]);
  const bad = await svc(cp, ["audit", "list", "--action", "policy.explode"], { home });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('"policy.explode" is not an admin action');

  // show: who, from where, on what, and the change field by field
  const shown = await svc(cp, ["audit", "show", updated.event.id], { home });
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/^action: +policy\.update$/m);
  expect(shown.stdout).toMatch(/^actor: +owner@example\.com \(owner\)$/m);
  expect(shown.stdout).toMatch(new RegExp(`^credential: +api_token ${tokenId}$`, "m"));
  expect(shown.stdout).toMatch(/^address: +127\.0\.0\.1$/m);
  expect(shown.stdout).toMatch(new RegExp(`^user agent: +${CLI_RE.source.slice(1, -1)}$`, "m"));
  expect(shown.stdout).toMatch(new RegExp(`^target: +policy staff chat \\(${pol}\\)$`, "m"));
  expect(shown.stdout).toContain("change:\n  effect: permit → deny");

  // No raw secret in what the CLI reads back: the list, the export.
  const exported = await svc(cp, ["audit", "export", "--kind", "admin"], { home });
  expect(exported.code).toBe(0);
  expect(exported.stdout.trim().split("\n").length).toBeGreaterThanOrEqual(12);
  const all = (await svc(cp, ["audit", "list", "--kind", "admin", "--json", "--limit", "500"], { home })).stdout + exported.stdout;
  expect([...secrets].filter(([, v]) => all.includes(v)).map(([k]) => k)).toEqual([]);
}, 180_000);
