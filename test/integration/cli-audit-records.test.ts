// svc audit list|show|export against a real control plane (SQLite, or PostgreSQL with
// SVC_TEST_POSTGRES_URL): records stored through the runtime API as a proxy's shipper would,
// then read back with every filter, the cursor, and the streamed export in each format.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { ecsProblems, ocsfProblems } from "../support/siem-schemas/validate.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
let other: Awaited<ReturnType<typeof bootstrapRuntime>>;
let userId: string;
const home = tempHome();
const ids: string[] = [];
const id = (i: number): string => ids[i]!;
// An hour ago, on a whole minute: inside the accepted window.
const t0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
const at = (min: number) => new Date(t0 + min * 60_000).toISOString();

const record = (rt: typeof runtime, o: Record<string, unknown>) => runtimeRecord(rt, { ts: at(0), ...o });

async function store(rt: typeof runtime, records: unknown[]) {
  for (let k = 0; k < records.length; k += 5000) {
    const r = await api(cp, "POST", "/runtime/audit-records", { records: records.slice(k, k + 5000) }, rt.token);
    if (r.status !== 200 || r.json.rejected.length > 0) throw new Error(`storing records failed: ${r.status} ${JSON.stringify(r.json).slice(0, 500)}`);
  }
}

beforeAll(async () => {
  cp = await startControlPlane();
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  other = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  const u = await api(cp, "POST", org(cp, "/users"), { email: "ada@example.com" });
  if (u.status !== 201) throw new Error(`user: ${u.status} ${JSON.stringify(u.json)}`);
  userId = u.json.id;
  const ada = { user_id: userId, remote_user_id: "owui-ada", via_installation: false };
  const rows = [
    record(runtime, { ts: at(0), subject: ada }),
    record(runtime, { ts: at(1), decision: "deny", reason: "svc.denied" }),
    record(runtime, { ts: at(2), tool_name: "crm.contacts.read", action: "tool:crm.contacts.read", subject: ada }),
    record(runtime, { ts: at(3), tool_name: "mail.send", action: "tool:mail.send", decision: "ask", reason: "policy" }),
    record(runtime, { ts: at(4), kind: "model", action: "model:invoke", tool_name: null, model: "gpt-x", reason: "=cmd|' /C calc'!A0" }),
    record(other, { ts: at(5), tool_name: "crm_update", action: "tool:crm_update", decision: "deny", reason: 'quote " and, comma' }),
  ];
  await store(runtime, rows.slice(0, 5));
  await store(other, rows.slice(5));
  ids.push(...rows.map((r) => r.id));
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

const list = async (...args: string[]) => {
  const r = await svc(cp, ["audit", "list", "--json", ...args], { home });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { records: { id: string; [k: string]: any }[]; next_cursor: string | null };
};
const idsOf = async (...args: string[]) => (await list(...args)).records.map((r) => r.id);

test("list filters: tool prefix and glob (a _ is literal), decision, user by email or id, installation, kind, since/until", async () => {
  // (--kind runtime: the runtimes' records; the setup's admin events are the admin trail's)
  expect(await idsOf("--kind", "runtime")).toEqual([5, 4, 3, 2, 1, 0].map(id));
  expect((await list("--kind", "admin")).records.map((r) => r.action)).toContain("organization.bootstrap");
  expect(await idsOf("--tool", "crm.")).toEqual([id(2), id(1), id(0)]);
  expect(await idsOf("--tool", "crm.*.read")).toEqual([id(2)]);
  expect(await idsOf("--tool", "crm?update")).toEqual([id(5), id(1), id(0)]);
  expect(await idsOf("--tool", "crm_")).toEqual([id(5)]);
  expect(await idsOf("--decision", "deny")).toEqual([id(5), id(1)]);
  expect(await idsOf("--user", "ADA@example.com")).toEqual([id(2), id(0)]);
  expect(await idsOf("--user", userId)).toEqual([id(2), id(0)]);
  expect(await idsOf("--user", "nobody@example.com")).toEqual([]);
  expect(await idsOf("--installation", other.bootstrap.installation.id)).toEqual([id(5)]);
  expect(await idsOf("--kind", "model")).toEqual([id(4)]);
  expect(await idsOf("--since", at(1), "--until", at(3))).toEqual([id(2), id(1)]);
  expect(await idsOf("--since", "2h", "--until", at(1))).toEqual([id(0)]);
});

test("list pages with --limit and the cursor it prints; the table says how to go on", async () => {
  const first = await list("--kind", "runtime", "--limit", "4");
  expect(first.records.map((r) => r.id)).toEqual([5, 4, 3, 2].map(id));
  expect(first.next_cursor).toBeString();
  const second = await list("--kind", "runtime", "--limit", "4", "--cursor", first.next_cursor!);
  expect(second.records.map((r) => r.id)).toEqual([id(1), id(0)]);
  expect(second.next_cursor).toBeNull();
  const table = await svc(cp, ["audit", "list", "--kind", "runtime", "--limit", "2"], { home });
  expect(table.code).toBe(0);
  expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+TIME\s+KIND\s+TOOL\/MODEL\s+DECISION\s+REASON\s+USER\s+INSTALLATION$/);
  expect(table.stdout).toContain(id(5));
  expect(table.stderr).toMatch(/^More records: run it again with --cursor \S+, or with a larger --limit \(--all for every one\)\n$/);
});

test("a bad filter is a usage error (exit 2) or the control plane's refusal (exit 1), in one sentence", async () => {
  const bad = await svc(cp, ["audit", "list", "--decision", "maybe"], { home });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--decision must be one of permit, deny, ask, not "maybe"');
  const since = await svc(cp, ["audit", "list", "--since", "yesterday"], { home });
  expect(since.code).toBe(1);
  expect(since.stderr).toMatch(/^svc audit list: since="yesterday" is neither a duration \(7d, 24h, 30m\) nor an ISO 8601 time.*\(validation_failed\)\n$/);
});

test("show prints one record as fields or JSON; an unknown id is not_found", async () => {
  const r = await svc(cp, ["audit", "show", id(0)], { home });
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^id:\s+rec_/);
  expect(r.stdout).toMatch(/\nuser:\s+ada@example.com\n/);
  expect(r.stdout).toMatch(/\narguments:\s+digest only \(hmac-sha256:0+\)\n/);
  const j = await svc(cp, ["audit", "show", id(4), "--json"], { home });
  expect(JSON.parse(j.stdout)).toMatchObject({ id: id(4), kind: "model", model: "gpt-x" });
  const missing = await svc(cp, ["audit", "show", "rec_00000000000000000000000000"], { home });
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("(not_found)");
});

test("export: JSON lines oldest first with filters, to stdout or a new 0600 file (never overwritten)", async () => {
  const r = await svc(cp, ["audit", "export", "--tool", "crm"], { home });
  expect(r.code).toBe(0);
  const lines = r.stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  expect(lines.map((l) => l.id)).toEqual([id(0), id(1), id(2), id(5)]);
  expect(lines[0]).toMatchObject({ subject: { email: "ada@example.com" }, ciphertext_sha256: null });
  expect(lines[0]).not.toHaveProperty("ciphertext");

  const file = join(home, "all.jsonl");
  const w = await svc(cp, ["audit", "export", "--since", at(0), "--until", at(5), "--out", file], { home });
  expect(w.code).toBe(0);
  expect(w.stdout).toBe("");
  expect(w.stderr).toMatch(/^Exported 5 records \(\d+ bytes\) to .*all\.jsonl\.\n$/);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(readFileSync(file, "utf8").trimEnd().split("\n")).toHaveLength(5);
  const again = await svc(cp, ["audit", "export", "--out", file], { home });
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("it already exists");
  expect(readFileSync(file, "utf8").trimEnd().split("\n")).toHaveLength(5);
});

test("export --format csv: RFC 4180 quoting, formula cells defused, one header", async () => {
  const r = await svc(cp, ["audit", "export", "--format", "csv", "--kind", "runtime"], { home });
  expect(r.code).toBe(0);
  const rows = r.stdout.split("\r\n");
  expect(rows[0]!.startsWith("id,ts,received_at,kind,action,tool_name,model,decision,reason,")).toBe(true);
  expect(rows).toHaveLength(8);
  expect(rows[7]).toBe("");
  expect(rows[5]).toContain(`,'=cmd|' /C calc'!A0,`);
  expect(rows[6]).toContain(`,"quote "" and, comma",`);
  const bad = await svc(cp, ["audit", "export", "--format", "xml"], { home });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--format must be one of jsonl, csv, ocsf, ecs");
});

test("export --format ocsf|ecs: one valid event per record, the filters applied, counted like JSON lines", async () => {
  const ocsf = await svc(cp, ["audit", "export", "--format", "ocsf", "--tool", "crm"], { home });
  expect(ocsf.code).toBe(0);
  const events = ocsf.stdout
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  expect(events.map((e) => [e.metadata.uid, e.class_uid, ocsfProblems(e)])).toEqual([id(0), id(1), id(2), id(5)].map((i) => [i, 6003, []]));
  const file = join(home, "all.ecs.jsonl");
  const w = await svc(cp, ["audit", "export", "--format", "ecs", "--out", file], { home });
  expect(w.stderr).toMatch(/^Exported \d+ records \(\d+ bytes\) to .*all\.ecs\.jsonl\.\n$/);
  const docs = readFileSync(file, "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  expect(docs.length).toBeGreaterThan(4);
  for (const d of docs) expect(ecsProblems(d, ["svc"])).toEqual([]);
});

test("export streams 12,000 records in order, each once, through pages of the server and chunks of the client", async () => {
  const many = Array.from({ length: 12_000 }, (_, i) => record(runtime, { ts: at(10), tool_name: `bulk.t${i % 7}`, action: `tool:bulk.t${i % 7}` }));
  await store(runtime, many);
  const file = join(home, "bulk.jsonl");
  const r = await svc(cp, ["audit", "export", "--tool", "bulk.", "--out", file], { home });
  expect(r.code).toBe(0);
  const got = readFileSync(file, "utf8")
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l).id as string);
  expect(got).toEqual(many.map((m) => m.id));
}, 120_000);
