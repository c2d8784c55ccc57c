// Tamper evidence end to end with the built binary (issue 15, issue 27): records chained as the
// proxy chains them, stored through the runtime API, then changed, inserted and re-signed
// directly in the store (SQLite here, PostgreSQL with SVC_TEST_POSTGRES_URL: scripts/test.sh
// runs this file on both), by someone with write access to the database, and with the master
// key too. `svc audit verify` trusts only the key bootstrap printed and the CLI pinned, and must
// name each change. Its states: verified and not yet signed (exit 0), tampered (1), cannot
// verify (3), key changed (4).
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, sign } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../src/contract/audit.ts";
import { type CheckpointBody, type ChainInput, bodyHash, publicKeyText, recordHash } from "../../src/contract/audit-chain.ts";
import { newId } from "../../src/contract/ids.ts";
import { storeDigest, storeLinkHash } from "../../src/contract/store-chain.ts";
import { type ExportLine, storedFromLine } from "../../src/contract/stored-line.ts";
import { EmbeddedKms } from "../../src/controlplane/kms/index.ts";
import { AuditChain } from "../../src/proxy/audit/chain.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHome } from "./cli-support.ts";

let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
/** The verifier's home: its pinned key, its saved checkpoint, what it saw. */
const home = tempHome();
const chain = new AuditChain();
let records: AuditRecord[] = [];
let bootKey = "";
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

const q = (v: string | null) => (v === null ? "NULL" : `'${v.replace(/'/g, "''")}'`);
const verify = async (...args: string[]) => svc(cp, ["audit", "verify", ...args], { home });
const lines = async (): Promise<ExportLine[]> =>
  (await svc(cp, ["audit", "export", "--order", "chain"], { home })).stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as ExportLine);
const checkpointNow = async () => expect((await svc(cp, ["audit", "checkpoints", "create"], { home })).code).toBe(0);

beforeAll(async () => {
  cp = await startControlPlane();
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  records = Array.from({ length: 20 }, (_, i) => chain.stamp(record(i)));
  await store(records.slice(0, 12));
  await store(records.slice(12));
  bootKey = /^ {2}(ed25519:\S+)$/m.exec(cp.bootstrapOutput)![1]!;
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

describe("svc audit verify", () => {
  test("bootstrap printed the key; with none pinned and no terminal to ask, verify cannot verify (exit 3) and says what to do", async () => {
    expect(cp.bootstrapOutput).toMatch(/fingerprint SHA256:[A-Za-z0-9+/]{43}\n/);
    const r = await svc(cp, ["audit", "verify"], { home: tempHome() });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("svc audit verify: cannot verify: no signing key is pinned for");
    expect(r.stderr).toContain(`svc audit signing-key pin ${bootKey}`);
    expect(r.stderr).toEndWith("(cannot_verify)\n");
  });

  test("a fresh install: exit 0 saying the records are chained and not yet signed; then signed and verified", async () => {
    expect((await svc(cp, ["audit", "signing-key", "pin", bootKey], { home })).code).toBe(0);
    // the 20 runtime records and the admin events of the set-up (bootstrap, the agent, the installation, …)
    const admin = ((await api(cp, "GET", org(cp, "/audit-records?kind=admin&limit=100"))).json.records as unknown[]).length;
    expect(admin).toBeGreaterThan(0);
    const n = 20 + admin;
    let r = await verify();
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^${n} records are chained and not yet signed \\(no checkpoint yet\\); the next checkpoint is due at .*; \`svc audit checkpoints create\` signs them now\\.\n$`),
    );
    await checkpointNow();
    r = await verify();
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Verified ${n} records against checkpoint #1 \\(.*\\), signed by ed25519:\\S+ \\(SHA256:\\S+\\)\\.\n$`));
    expect(JSON.parse((await verify("--json")).stdout)).toMatchObject({ state: "verified", records: n, covered: n, uncovered: 0, problems: [] });
  });

  test("edits of task, harness and received_at (columns outside the proxy's chain) are each named", async () => {
    const target = records[4]!;
    for (const [column, value, restore] of [
      ["task", "'title_generation'", "NULL"],
      ["harness", "'other'", "'chatui'"],
      ["received_at", "1", null],
    ] as const) {
      const before = (await lines()).find((l) => l.id === target.id)!;
      await sql(`UPDATE audit_records SET ${column} = ${value} WHERE id = '${target.id}'`);
      const r = await verify();
      expect({ column, code: r.code }).toEqual({ column, code: 1 });
      expect(r.stderr).toContain(`record ${target.id} (#5 of chain store) was changed`);
      await sql(`UPDATE audit_records SET ${column} = ${restore ?? String(Date.parse(before.received_at))} WHERE id = '${target.id}'`);
      expect((await verify()).code).toBe(0);
    }
  });

  test("a back-dated insert with no chain fields is named as inserted", async () => {
    const forged = newId("auditRecord", Date.parse("2020-01-01T00:00:00Z"));
    await sql(`CREATE TABLE kept_row AS SELECT * FROM audit_records WHERE id = '${records[0]!.id}'`);
    await sql(
      `UPDATE kept_row SET id = '${forged}', ts = 1577836800000, received_at = 1577836800000, reason = 'forged', chain_id = NULL, chain_seq = NULL, chain_prev = NULL, store_chain = NULL, store_seq = NULL, store_prev = NULL`,
    );
    await sql("INSERT INTO audit_records SELECT * FROM kept_row");
    await sql("DROP TABLE kept_row");
    const r = await verify();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`record ${forged} is in no store chain, yet every record stored is chained: it was written into the database directly`);
    await sql(`DELETE FROM audit_records WHERE id = '${forged}'`);
    expect((await verify()).code).toBe(0);
  });

  test("a deny turned into a permit, both chains re-linked, the signing key swapped in the store and every checkpoint re-signed: caught, naming the record", async () => {
    const all = await lines();
    const victim = records[6]!;
    expect(all.find((l) => l.id === victim.id)!.decision).toBe("deny");
    const tampered = all.map((l) => (l.id === victim.id ? { ...l, decision: "permit", reason: "policy" } : { ...l }));
    // re-link the proxy chain from the victim up, then the store chain (its form holds chain_prev)
    const proxy = tampered.filter((l) => l.chain_id === chain.id).sort((x, y) => x.chain_seq! - y.chain_seq!);
    for (let i = proxy.findIndex((l) => l.id === victim.id); i < proxy.length - 1; i++) {
      const l = proxy[i]!;
      proxy[i + 1]!.chain_prev = recordHash({ ...l, recipient_key_ids: l.encryption.mode === "recipients" ? l.encryption.key_ids : [] } as ChainInput, l.ciphertext_sha256);
    }
    const storeRows = tampered.filter((l) => l.store?.chain === "store").sort((x, y) => x.store!.seq! - y.store!.seq!);
    let head = "";
    for (const [i, l] of storeRows.entries()) {
      if (i > 0) l.store = { ...l.store!, prev: head };
      head = storeLinkHash({ chain: "store", seq: l.store!.seq!, prev: l.store!.prev }, storeDigest(storedFromLine(l)));
    }
    const top = proxy.at(-1)!;
    const proxyHead = recordHash({ ...top, recipient_key_ids: top.encryption.mode === "recipients" ? top.encryption.key_ids : [] } as ChainInput, top.ciphertext_sha256);
    await sql(`UPDATE audit_records SET decision = 'permit', reason = 'policy' WHERE id = '${victim.id}'`);
    for (const l of tampered) await sql(`UPDATE audit_records SET chain_prev = ${q(l.chain_prev ?? null)}, store_prev = ${q(l.store?.prev ?? null)} WHERE id = '${l.id}'`);
    await sql(`UPDATE audit_chain_heads SET hash = '${head}' WHERE id = '${cp.orgId}:store'`);
    await sql(`UPDATE audit_chain_heads SET hash = '${proxyHead}' WHERE id = '${cp.orgId}:${chain.id}'`);
    // the attacker's key in the column, and every checkpoint re-signed with it over the new heads
    const attacker = generateKeyPairSync("ed25519");
    const attackerKey = publicKeyText(attacker.publicKey);
    await sql(`UPDATE audit_signing_keys SET public_key = '${attackerKey}'`);
    const cps = (await api(cp, "GET", org(cp, "/audit-checkpoints"))).json.checkpoints as { number: number; body: string }[];
    let prev: string | null = null;
    for (const c of cps) {
      const body = JSON.parse(c.body) as CheckpointBody;
      const text = JSON.stringify({
        ...body,
        prev,
        public_key: attackerKey,
        heads: body.heads.map((h) => (h.chain_id === "store" ? { ...h, hash: head } : h.chain_id === chain.id ? { ...h, hash: proxyHead } : h)),
      });
      await sql(
        `UPDATE audit_checkpoints SET body = ${q(text)}, signature = '${sign(null, Buffer.from(text), attacker.privateKey).toString("base64")}' WHERE org_id = '${cp.orgId}' AND number = ${c.number}`,
      );
      prev = bodyHash(text);
    }
    // The verifier that pinned the key and ran before: exit 1, the record named.
    const r = await verify("--json");
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { problems: { kind: string; record_id: string | null; detail: string }[] };
    expect(report.problems.map((p) => p.detail)).toContain(`no checkpoint is signed by the pinned key ${bootKey}, which the control plane holds: the checkpoints in its store were replaced`);
    expect(report.problems.find((p) => p.kind === "changed")).toMatchObject({ record_id: victim.id, detail: expect.stringContaining("it is not what this verifier saw there") });
    // A verifier that never ran, given the key bootstrap printed: exit 1 all the same.
    const fresh = await svc(cp, ["audit", "verify", "--public-key", bootKey], { home: tempHome() });
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toContain("(tampered)");
  });
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

describe("svc audit verify on a second control plane: rotation, admin events, offline files, a replaced key", () => {
  let cp2: ControlPlaneProcess;
  const home2 = tempHome();
  beforeAll(async () => {
    cp2 = await startControlPlane();
  });
  afterAll(async () => {
    await cp2?.stop();
    if (cp2) cleanup(cp2.dataDir);
    cleanup(home2);
  });
  const v2 = async (...args: string[]) => svc(cp2, ["audit", "verify", ...args], { home: home2 });

  test("rotation: a verifier with the old pin follows the hand-over and pins the new key", async () => {
    const key = /^ {2}(ed25519:\S+)$/m.exec(cp2.bootstrapOutput)![1]!;
    expect((await svc(cp2, ["audit", "signing-key", "pin", key], { home: home2 })).code).toBe(0);
    expect((await svc(cp2, ["audit", "checkpoints", "create"], { home: home2 })).code).toBe(0);
    expect((await v2()).code).toBe(0);
    const rotated = await svc(cp2, ["audit", "signing-key", "rotate"], { home: home2 });
    expect(rotated.code).toBe(0);
    const newKey = /^New signing key: (ed25519:\S+)$/m.exec(rotated.stdout)![1]!;
    expect(newKey).not.toBe(key);
    expect((await svc(cp2, ["audit", "checkpoints", "create"], { home: home2 })).code).toBe(0);
    const r = await v2();
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^The signing key was rotated at checkpoint #2: SHA256:\S+ handed over to SHA256:\S+ \(pinned from now on\)\.\n/);
    expect(readFileSync(join(home2, ".config", "svc", "audit-known-keys"), "utf8")).toContain(` ${cp2.orgId} ${newKey}\n`);
    expect((await svc(cp2, ["audit", "verify"], { home: home2 })).code).toBe(0);
  });

  test("an edited admin event (its detail, its actor) is named", async () => {
    const event = (await api(cp2, "GET", org(cp2, "/audit-records?kind=admin"))).json.records[0] as { id: string; store: { seq: number } };
    for (const [column, value] of [
      ["detail", `replace(detail, '"result":"ok"', '"result":"refused"')`],
      ["actor_id", "'acc_SOMEONE_ELSE'"],
    ] as const) {
      await sql2(`CREATE TABLE kept AS SELECT ${column} AS v FROM audit_records WHERE id = '${event.id}'`);
      await sql2(`UPDATE audit_records SET ${column} = ${value} WHERE id = '${event.id}'`);
      const r = await v2();
      expect({ column, code: r.code }).toEqual({ column, code: 1 });
      expect(r.stderr).toContain(`record ${event.id} (#${event.store.seq} of chain admin) was changed`);
      await sql2(`UPDATE audit_records SET ${column} = (SELECT v FROM kept) WHERE id = '${event.id}'`);
      await sql2("DROP TABLE kept");
      expect((await v2()).code).toBe(0);
    }
  });

  test("offline: an export file and saved checkpoints; an edited line is named; an unreadable file and an unreachable control plane cannot be verified (exit 3)", async () => {
    const file = join(home2, "all.jsonl");
    const key = (await api(cp2, "GET", org(cp2, "/audit-signing-key"))).json.public_key as string;
    expect((await svc(cp2, ["audit", "export", "--order", "chain", "--out", file], { home: home2 })).code).toBe(0);
    const cps = join(home2, "checkpoints.json");
    writeFileSync(cps, (await svc(cp2, ["audit", "checkpoints", "--json"], { home: home2 })).stdout);
    const offline = async (f: string) => svc(null, ["audit", "verify", "--file", f, "--checkpoints", cps, "--public-key", key], { home: tempHome() });
    let r = await offline(file);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const text = readFileSync(file, "utf8").trimEnd().split("\n");
    const edited = JSON.parse(text[0]!);
    edited.reason = "edited";
    writeFileSync(join(home2, "edited.jsonl"), [JSON.stringify(edited), ...text.slice(1)].join("\n") + "\n");
    r = await offline(join(home2, "edited.jsonl"));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`record ${edited.id}`);
    r = await offline(join(home2, "missing.jsonl"));
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("cannot verify");
    const down = await svc(null, ["audit", "verify"], { home: home2, env: { SVC_CONTROL_PLANE_URL: "http://127.0.0.1:9", SVC_TOKEN: "svc_at_x" } });
    expect(down.code).toBe(3);
    expect(down.stderr).toContain("cannot reach the control plane");
  });

  test("a key replaced in the store with the master key's help, with no hand-over: exit 4, saying what to do", async () => {
    const kms = EmbeddedKms.fromBase64(readFileSync(join(cp2.dataDir, "config", "svc-controlplane", "master.key"), "utf8"));
    const pair = generateKeyPairSync("ed25519");
    const wrapped = kms.wrap(new Uint8Array(pair.privateKey.export({ format: "der", type: "pkcs8" })), `audit-checkpoint-key:${cp2.orgId}`);
    await sql2(`UPDATE audit_signing_keys SET public_key = '${publicKeyText(pair.publicKey)}', wrapped_private_key = '${wrapped}'`);
    const r = await v2();
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`the control plane names the signing key ${publicKeyText(pair.publicKey)}`);
    expect(r.stderr).toContain("no checkpoint signed by it hands over to the new one");
    expect(r.stderr).toEndWith("(key_changed)\n");
  });

  async function sql2(statement: string): Promise<void> {
    const was = cp;
    cp = cp2;
    try {
      await sql(statement);
    } finally {
      cp = was;
    }
  }
});
