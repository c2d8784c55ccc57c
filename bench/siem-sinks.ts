// SIEM sink delivery rate (issue 15): `bun bench/siem-sinks.ts [--records N]`. A SQLite control-
// plane store in a temp dir (WAL, synchronous=FULL, as served) holding N ingested audit records;
// one sink per kind created with backfill, each drained by the delivery loop's own pass
// (sinks/deliver.ts deliverDue: 500-record batches, cursor committed after each) to a local
// receiver on loopback: an HTTPS webhook (HEC lines, HMAC-signed), an HTTPS OTLP/HTTP logs
// endpoint, and a real rsyslog over TLS (when rsyslogd is installed). Prints records/s per kind
// and writes bench/results/siem-sinks-<timestamp>.json. The machine is shared and noisy.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { count, eq } from "drizzle-orm";
import type { AuditRecord } from "../src/contract/audit.ts";
import { newId } from "../src/contract/ids.ts";
import { actingAsSystem } from "../src/controlplane/audit/admin-events.ts";
import { recordRow } from "../src/controlplane/audit/ingest.ts";
import { bootstrapOwner } from "../src/controlplane/auth/bootstrap.ts";
import { openStore, tables } from "../src/controlplane/db/index.ts";
import { type ControlPlaneDeps, defaultConfig } from "../src/controlplane/deps.ts";
import { EmbeddedKms } from "../src/controlplane/kms/index.ts";
import { deliverDue } from "../src/controlplane/sinks/deliver.ts";
import { createSink } from "../src/controlplane/sinks/service.ts";
import { silentLogger } from "../src/log/index.ts";
import { makeRsyslog } from "../test/support/rsyslog.ts";
import { testTls } from "../test/support/tls.ts";

const { values } = parseArgs({ options: { records: { type: "string", default: "20000" } } });
const N = Number(values.records);
const dir = mkdtempSync(join(tmpdir(), "svc-bench-siem-"));
const store = openStore(join(dir, "controlplane.db"));
await store.migrate();
const deps: ControlPlaneDeps = {
  db: store.db,
  kms: EmbeddedKms.fromBase64(EmbeddedKms.generateKey()),
  config: { ...defaultConfig("http://127.0.0.1:8420"), allowPrivateOutbound: true },
  now: Date.now,
  log: silentLogger,
};
const owner = await bootstrapOwner(deps, { email: "bench@example.com", orgName: "Bench", password: "a long bench password here", withToken: false });

// N records as ingest stores them: 20 tools, 1 in 10 a deny.
const now = Date.now();
for (let done = 0; done < N; ) {
  const n = Math.min(5000, N - done);
  await store.db.transaction(async (tx) => {
    const a = tables(tx).auditRecords;
    for (let i = 0; i < n; i += 500) {
      const rows = [];
      for (let j = i; j < Math.min(i + 500, n); j++) {
        const k = done + j;
        const r = {
          id: newId("auditRecord"),
          ts: new Date(now - 60_000 + k).toISOString(),
          kind: "tool",
          harness: "chatui",
          organization_id: owner.orgId,
          workspace_id: owner.workspaceId,
          installation_id: "inst_BENCH",
          agent_id: "agt_BENCH",
          replica_id: "rep_BENCH",
          action: `tool:crm.t${k % 20}`,
          tool_name: `crm.t${k % 20}`,
          decision: k % 10 === 0 ? "deny" : "permit",
          reason: "policy",
          policy_id: null,
          policy_revision: 1,
          subject: { user_id: null, remote_user_id: "fe-1", via_installation: false },
          args_digest: `hmac-sha256:${"ab".repeat(32)}`,
          digest_key_id: "dk_BENCH",
          recipient_key_ids: [],
          ciphertext: null,
        } as unknown as AuditRecord;
        rows.push(recordRow(r, now - 30_000));
      }
      await tx.insert(a).values(rows);
    }
  });
  done += n;
}

const tls = testTls();
const http = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: tls.cert, key: tls.key },
  async fetch(req) {
    await req.text(); // read to the end, as a collector does
    return Response.json({});
  },
});
const rsyslog = (await Bun.file("/usr/sbin/rsyslogd").exists()) ? makeRsyslog() : null;
await rsyslog?.start();

const kinds: { kind: "webhook" | "otlp" | "syslog"; endpoint: string; secret?: string }[] = [
  { kind: "webhook", endpoint: `https://127.0.0.1:${http.port}/services/collector/event`, secret: "bench-hmac-key-0123456789" },
  { kind: "otlp", endpoint: `https://127.0.0.1:${http.port}/v1/logs` },
  ...(rsyslog ? [{ kind: "syslog" as const, endpoint: `127.0.0.1:${rsyslog.port}` }] : []),
];
const results: { kind: string; records: number; seconds: number; per_second: number }[] = [];
for (const k of kinds) {
  const sink = await createSink(deps, owner.orgId, { name: k.kind, kind: k.kind, endpoint: k.endpoint, secret: k.secret, ca_pem: tls.ca, backfill: true }, actingAsSystem(deps, "controlplane"));
  // The N records, and the admin events (bootstrap, each sink's creation) a backfill delivers too.
  const a = tables(deps.db).auditRecords;
  const stored = Number((await deps.db.select({ n: count() }).from(a).where(eq(a.orgId, owner.orgId)))[0]!.n);
  const t0 = performance.now();
  const delivered = await deliverDue(deps, { owner: `bench-${k.kind}`, settleMs: 0 });
  const seconds = (performance.now() - t0) / 1000;
  if (delivered !== stored) throw new Error(`${k.kind}: delivered ${delivered} of ${stored}`);
  results.push({ kind: k.kind, records: delivered, seconds, per_second: delivered / seconds });
  await deps.db
    .update(tables(deps.db).siemSinks)
    .set({ enabled: false })
    .where(eq(tables(deps.db).siemSinks.id, sink.id));
}

console.log(`SIEM sink delivery, ${N} stored records per sink, 500-record batches, receivers on loopback (SQLite store)`);
console.log("| sink | records | seconds | records/s |\n|---|---|---|---|");
for (const r of results) console.log(`| ${r.kind} | ${r.records} | ${r.seconds.toFixed(2)} | ${Math.round(r.per_second)} |`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `siem-sinks-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify({ records: N, results }, null, 2));
console.log(`written ${out}`);
await http.stop(true);
await rsyslog?.stop();
rsyslog?.cleanup();
await store.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
