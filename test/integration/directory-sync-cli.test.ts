// `svc directory-sync set|enable|report|run` through the svc binary ($SVC_BIN after
// `bun run build`, else `bun src/main.ts`) against a real control-plane process that trusts
// the Graph double's CA through SVC_CP_EXTRA_CA_FILE. The CLI is signed in with
// SVC_CONTROL_PLANE_URL and SVC_TOKEN (the organization comes from GET /me).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlaneProcess, cleanup, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { GraphDouble } from "../support/graph-double.ts";

let cp: ControlPlaneProcess;
let graph: GraphDouble;
let home: string;

beforeAll(async () => {
  graph = new GraphDouble();
  cp = await startControlPlane({ env: { SVC_CP_EXTRA_CA_FILE: graph.tls.caFile } });
  home = mkdtempSync(join(tmpdir(), "svc-home-"));
  const users = graph.addRole("chat-users");
  const admins = graph.addRole("chat-admins");
  graph.assign(users.id, graph.addUser("Alice"));
  graph.assign(admins.id, graph.addUser("Bob", { mail: null, userPrincipalName: "bob@contoso.onmicrosoft.com" }));
  graph.assign(users.id, graph.addGroup("Sales", [graph.addUser("Carol").id]));
});

afterAll(async () => {
  await cp?.stop();
  graph?.stop();
  if (cp) cleanup(cp.dataDir);
  if (home) cleanup(home);
});

async function svc(args: string[], stdin?: string) {
  const proc = Bun.spawn([...svcCommand(), ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: home, SVC_CONTROL_PLANE_URL: cp.url, SVC_TOKEN: cp.token },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

function setArgs(over: { dryRun?: string; secretless?: boolean } = {}) {
  return [
    "directory-sync",
    "set",
    "--tenant-id",
    graph.tenantId,
    "--client-id",
    graph.clientId,
    "--app-id",
    graph.appId,
    `--dry-run=${over.dryRun ?? "true"}`,
    "--create-users=true",
    "--authority-url",
    graph.url,
    "--graph-url",
    graph.url,
  ];
}

test("set refuses a bad boolean, empty stdin, and report before set is 409", async () => {
  const bad = await svc([...setArgs({ dryRun: "maybe" })], graph.clientSecret);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--dry-run must be true or false");
  const empty = await svc(setArgs(), "");
  expect(empty.code).toBe(2);
  expect(empty.stderr).toContain("without --keep-secret it reads the sync app's client secret from stdin, but stdin is empty; pipe it in");
  const report = await svc(["directory-sync", "report"]);
  expect(report.code).toBe(1);
  expect(report.stderr).toContain("directory_sync_not_configured");
});

test("set (dry run) → enable → report shows the changes and applies none; then a real run applies them", async () => {
  const set = await svc(setArgs(), `${graph.clientSecret}\n`);
  expect(set.stderr).toBe("Directory sync is configured but not enabled; run `svc directory-sync enable` to sync now and then periodically.\n");
  expect(set.code).toBe(0);
  expect(set.stdout).toContain(graph.appId);
  expect(set.stdout + set.stderr).not.toContain(graph.clientSecret);

  const enable = await svc(["directory-sync", "enable"]);
  expect(enable.code).toBe(0);
  expect(enable.stdout).toContain("succeeded (dry run: nothing was applied)");
  expect(enable.stdout).toContain("2 groups created, 3 users created, 3 memberships added");

  const report = await svc(["directory-sync", "report"]);
  expect(report.code).toBe(0);
  expect(report.stdout).toMatch(/create group\s+chat-admins\s+-/);
  expect(report.stdout).toMatch(/add member\s+chat-users\s+carol@example\.com/);
  expect(report.stdout).toMatch(/create user\s+-\s+bob@contoso\.onmicrosoft\.com\s+Bob/);

  const json = await svc(["directory-sync", "report", "--json"]);
  const parsed = JSON.parse(json.stdout);
  expect(parsed).toMatchObject({ dry_run: true, status: "succeeded", errors: [] });
  expect(parsed.changes).toHaveLength(2 + 3 + 3);

  // Nothing was applied: the users API (if served) knows nobody yet.
  const users = await fetch(`${cp.url}/api/v1/organizations/${cp.orgId}/users`, { headers: { authorization: `Bearer ${cp.token}` } });
  if (users.status === 200) expect(((await users.json()) as { users: unknown[] }).users).toEqual([]);

  // Switch dry run off keeping the stored secret, run now: the changes are applied.
  const real = await svc([...setArgs({ dryRun: "false" }), "--keep-secret"]);
  expect(real.code).toBe(0);
  const run = await svc(["directory-sync", "run", "--json"]);
  expect(run.code).toBe(0);
  expect(JSON.parse(run.stdout)).toMatchObject({ dry_run: false, status: "succeeded", counts: { groups_created: 2, users_created: 3, memberships_added: 3 } });
  const again = await svc(["directory-sync", "run"]);
  expect(again.stdout).toContain("No changes: the service already matches the directory.");
});

test("a wrong secret: the run fails, exit 1, the report names the refusal", async () => {
  const set = await svc(setArgs({ dryRun: "false" }), "not-the-secret");
  expect(set.code).toBe(0);
  const run = await svc(["directory-sync", "run"]);
  expect(run.code).toBe(1);
  expect(run.stdout).toContain("the client secret was refused by the token endpoint: invalid_client: AADSTS7000215");
  expect(run.stderr).toContain("(directory_sync_failed)");
  const report = await svc(["directory-sync", "report"]);
  expect(report.stdout).toMatch(/last sync:\s+failed/);
  expect(report.stdout + cp.logs()).not.toContain("not-the-secret");
});

test.skipIf(!Bun.which("script"))("set refuses to read the secret from a terminal", async () => {
  // script(1) gives the command a pseudo-terminal as stdin.
  const line = [...svcCommand(), ...setArgs()].map((a) => `'${a}'`).join(" ");
  const proc = Bun.spawn(["script", "-qec", line, "/dev/null"], {
    env: { PATH: process.env.PATH ?? "", HOME: home, SVC_CONTROL_PLANE_URL: cp.url, SVC_TOKEN: cp.token },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(2);
  expect(stdout).toContain("reads the sync app's client secret from stdin, but stdin is a terminal; pipe it in");
});
