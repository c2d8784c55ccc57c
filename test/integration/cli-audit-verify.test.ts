// Tamper evidence end to end (issue 15): records chained as the proxy chains them, stored
// through the runtime API, a checkpoint signed by the control plane; then rows are changed,
// removed and inserted directly in the store (SQLite here, PostgreSQL with
// SVC_TEST_POSTGRES_URL: scripts/test.sh runs this file on both), and `svc audit verify`
// must name each, from the live API and from an export file checked offline.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../src/contract/audit.ts";
import { newId } from "../../src/contract/ids.ts";
import { AuditChain } from "../../src/proxy/audit/chain.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
const home = tempHome();
const chain = new AuditChain();
let records: AuditRecord[] = [];
const isPg = () => /^postgres/.test(cp.database);

function record(i: number): AuditRecord {
  const odd = i % 2 === 1;
  return runtimeRecord(runtime, {
    ts: new Date(Date.now() - 600_000 + i * 1000).toISOString(),
    replica_id: runtime.replica,
    decision: i % 3 === 0 ? "deny" : "permit",
    reason: i % 3 === 0 ? "svc.denied" : "policy",
    policy_id: null,
    args_digest: odd ? null : `hmac-sha256:${"0".repeat(64)}`,
    digest_key_id: odd ? null : runtime.bootstrap.digest_key.id,
    recipient_key_ids: odd ? ["key_A"] : [],
    ciphertext: odd ? Buffer.from(`age-encryption.org/v1 fake ${i}`).toString("base64") : null,
  }) as AuditRecord;
}

async function store(rs: AuditRecord[]) {
  const r = await api(cp, "POST", "/runtime/audit-records", { records: rs }, runtime.token);
  if (r.status !== 200 || r.json.rejected.length > 0) throw new Error(`storing failed: ${r.status} ${JSON.stringify(r.json)}`);
}

/** Runs SQL straight on the control plane's store, as someone with database access would. */
async function sql(statement: string): Promise<void> {
  if (isPg()) {
    const db = new Bun.SQL(cp.database);
    try {
      await db.unsafe(statement);
    } finally {
      await db.close();
    }
    return;
  }
  const db = new Database(cp.database);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec(statement);
  } finally {
    db.close();
  }
}

let admins = 0;
const verify = async (...args: string[]) => svc(cp, ["audit", "verify", ...args], { home });

beforeAll(async () => {
  cp = await startControlPlane();
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  records = Array.from({ length: 20 }, (_, i) => chain.stamp(record(i)));
  await store(records.slice(0, 12));
  await store(records.slice(12));
  const c = await api(cp, "POST", org(cp, "/audit-checkpoints"));
  expect(c.status).toBe(201);
  // The setup's admin events (bootstrap, the agent, the installation, its token) are the
  // control plane's own chain, verified with the runtime's.
  admins = (await api(cp, "GET", org(cp, "/audit-records?kind=admin&limit=500"))).json.records.length;
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

test("untouched records verify against the signed checkpoint (exit 0)", async () => {
  const r = await verify();
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^Verified ${20 + admins} records in 2 chains against checkpoint #1 \\(.*\\), signed by ed25519:[A-Za-z0-9+/]{43}=\\.\\n$`));
  const j = JSON.parse((await verify("--json")).stdout);
  expect(j).toMatchObject({ ok: true, records: 20 + admins, chains: 2, covered: 20 + admins, uncovered: 0, unchained: 0, problems: [] });
});

test("a changed field, a changed ciphertext: exit 1 naming the record; restored, it verifies again", async () => {
  const target = records[6]!;
  await sql(`UPDATE audit_records SET decision = 'permit' WHERE id = '${target.id}'`);
  let r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`svc audit verify: record ${target.id} (#7 of chain ${chain.id}) was changed: its hash is not the one record ${records[7]!.id} names; it is the only problem (tampered)\n`);
  expect(r.stdout).toMatch(/^PROBLEM\s+RECORD/);
  await sql(`UPDATE audit_records SET decision = 'deny' WHERE id = '${target.id}'`);
  expect((await verify()).code).toBe(0);

  // The last record signed: its hash is the checkpoint's head itself.
  const last = records[19]!;
  await sql(`CREATE TABLE kept_ct AS SELECT ciphertext FROM audit_records WHERE id = '${last.id}'`);
  await sql(`UPDATE audit_records SET ciphertext = ${isPg() ? "'\\x00112233'::bytea" : "X'00112233'"} WHERE id = '${last.id}'`);
  r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`record ${last.id} (#20 of chain ${chain.id}) was changed: its hash is not the one the checkpoint signed`);
  await sql(`UPDATE audit_records SET ciphertext = (SELECT ciphertext FROM kept_ct) WHERE id = '${last.id}'`);
  await sql("DROP TABLE kept_ct");
  expect((await verify()).code).toBe(0);
});

test("a removed row is named by its number and neighbour; a copy with a new id is an inserted record", async () => {
  const gone = records[10]!;
  await sql(`CREATE TABLE kept_row AS SELECT * FROM audit_records WHERE id = '${gone.id}'`);
  await sql(`DELETE FROM audit_records WHERE id = '${gone.id}'`);
  let r = await verify("--json");
  expect(r.code).toBe(1);
  expect(JSON.parse(r.stdout).problems).toEqual([{ kind: "removed", record_id: null, chain_id: chain.id, seq: 11, ts: records[11]!.ts, detail: `record #11 of chain ${chain.id} (the record before ${records[11]!.id}) is missing` }]);
  await sql("INSERT INTO audit_records SELECT * FROM kept_row");
  expect((await verify()).code).toBe(0);

  const forged = newId("auditRecord");
  await sql(`UPDATE kept_row SET id = '${forged}', reason = 'forged'`);
  await sql("INSERT INTO audit_records SELECT * FROM kept_row");
  r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`record ${forged} claims #11 of chain ${chain.id}, which ${gone.id} holds`);
  // Inserted without chain fields, dated inside the chained period: named too.
  await sql(`UPDATE audit_records SET chain_id = NULL, chain_seq = NULL, chain_prev = NULL WHERE id = '${forged}'`);
  r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`record ${forged} carries no chain fields, yet installation ${runtime.bootstrap.installation.id} chained its records`);
  await sql(`DELETE FROM audit_records WHERE id = '${forged}'`);
  await sql("DROP TABLE kept_row");
  expect((await verify()).code).toBe(0);
});

test("offline: an export file and saved checkpoints verify with no control plane; an edited line is named", async () => {
  const file = join(home, "all.jsonl");
  expect((await svc(cp, ["audit", "export", "--out", file], { home })).code).toBe(0);
  const saved = await svc(cp, ["audit", "checkpoints", "--json"], { home });
  const cps = join(home, "checkpoints.json");
  writeFileSync(cps, saved.stdout);
  const key = JSON.parse(saved.stdout).public_key as string;
  const offline = async (...args: string[]) => svc(null, ["audit", "verify", "--file", file, "--checkpoints", cps, "--public-key", key, ...args], { home });
  let r = await offline();
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);

  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  const at = lines.findIndex((l) => JSON.parse(l).id === records[3]!.id);
  const edited = JSON.parse(lines[at]!);
  edited.tool_name = "crm.read";
  writeFileSync(file, [...lines.slice(0, at), JSON.stringify(edited), ...lines.slice(at + 1)].join("\n") + "\n");
  r = await offline();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`record ${edited.id} (#4 of chain ${chain.id}) was changed`);

  // Another key pinned: every checkpoint fails its signature check.
  writeFileSync(file, `${lines.join("\n")}\n`);
  r = await svc(null, ["audit", "verify", "--file", file, "--checkpoints", cps, "--public-key", `ed25519:${Buffer.alloc(32, 7).toString("base64")}`], { home });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`the control plane names the signing key ${key}, not the pinned ed25519:`);
  expect(r.stdout).toContain("checkpoint #1 does not carry a valid signature by ed25519:BwcH");
});

test("a checkpoint edited in the store fails its signature; records after the checkpoint are reported as not yet covered", async () => {
  await sql(`UPDATE audit_checkpoints SET body = replace(body, '"seq":20', '"seq":19')`);
  let r = await verify();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("checkpoint #1 does not carry a valid signature");
  await sql(`UPDATE audit_checkpoints SET body = replace(body, '"seq":19', '"seq":20')`);
  expect((await verify()).code).toBe(0);

  const more = [chain.stamp(record(20)), chain.stamp(record(21))];
  await store(more);
  r = await verify();
  expect(r.code).toBe(0);
  expect(r.stderr).toBe("2 records written after that checkpoint link up but are not covered until the next one.\n");
  expect((await api(cp, "POST", org(cp, "/audit-checkpoints"))).status).toBe(201);
  expect((await verify()).stdout).toMatch(new RegExp(`^Verified ${22 + admins} records in 2 chains against checkpoint #2 `));
});

test("ingest flags a gap and a fork in a chain without refusing the records", async () => {
  const other = new AuditChain();
  const [a, b, c] = [0, 1, 2].map((i) => other.stamp(record(i)));
  await store([a!, c!]);
  const forked = { ...record(3), chain_id: other.id, chain_seq: 4, chain_prev: "f".repeat(64) };
  await store([b!, forked]);
  const flags = (await api(cp, "GET", org(cp, "/audit-chain-flags"))).json.flags as { kind: string; record_id: string; chain_id: string; detail: string }[];
  const mine = flags.filter((f) => f.chain_id === other.id).reverse();
  expect(mine.map((f) => [f.kind, f.record_id])).toEqual([
    ["gap", c!.id],
    ["late", b!.id],
    ["fork", forked.id],
  ]);
  expect(mine[0]!.detail).toBe("record #2 is missing before #3");
});
