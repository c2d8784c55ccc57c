// The store chain's form covers every stored column (issue 27: task, harness, received_at,
// tool_server and the admin columns were not covered by any chain), and the export shows a row
// so that the form computed from the export line is the row's own: even for a row someone
// changed into something the record view cannot show (the export then adds `columns`).
import { describe, expect, test } from "bun:test";
import { getTableColumns } from "drizzle-orm";
import { STORED_FIELDS, type StoredRecord, storeDigest } from "../../contract/store-chain.ts";
import { type ExportLine, storedFromLine } from "../../contract/stored-line.ts";
import { auditRecords } from "./tables.ts";
import { type RowColumns, exportLine, sameJson, shownTime, storedFromRow } from "./stored.ts";

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A stored row with every column set to something, as ingest writes a model outcome. */
function row(over: Partial<RowColumns> = {}) {
  return {
    id: "rec_01JTEST000000000000000000A",
    orgId: "org_1",
    workspaceId: "ws_1",
    installationId: "inst_1",
    agentId: "agt_1",
    replicaId: "rep_1",
    ts: 1_764_000_000_123,
    receivedAt: 1_764_000_001_456,
    kind: "outcome" as const,
    harness: "chatui",
    action: "model:invoke",
    toolName: null,
    toolServer: null,
    upstreamIdentity: JSON.stringify({ kind: "oauth", subject: "alice@idp" }),
    model: "gpt",
    task: "title_generation",
    decision: "permit" as const,
    reason: "policy",
    policyId: "pol_1",
    policyRevision: 7,
    shadowDecision: "deny" as const,
    shadowPolicyId: "pol_2",
    shadowReason: "would deny",
    userId: "usr_1",
    remoteUserId: "fe-1",
    viaInstallation: false,
    ref: "rec_01JTEST000000000000000000B",
    outcome: "ok",
    exitCode: 0,
    argsDigest: `hmac-sha256:${"a".repeat(64)}`,
    digestKeyId: "dk_1",
    recipientKeyIds: ["key_1", "key_2"],
    ciphertext: Buffer.from("age-encryption.org/v1 sealed"),
    promptTokens: 10,
    completionTokens: 5,
    cost: 0.000123,
    durationMs: 900,
    chainId: "chn_1",
    chainSeq: 4,
    chainPrev: "b".repeat(64),
    actorId: "acc_1",
    target: "policy:pol_1",
    detail: JSON.stringify({ v: 1, result: "ok" }),
    storeChain: "store",
    storeSeq: 9,
    storePrev: "c".repeat(64),
    ...over,
  };
}

/** The form as `svc audit verify` computes it from the exported line (through JSON, as a file carries it). */
const fromExport = (r: ReturnType<typeof row>): StoredRecord => storedFromLine(JSON.parse(JSON.stringify(exportLine(r, "ada@example.com"))) as ExportLine);

describe("the store chain's form", () => {
  test("covers every column of audit_records (the ciphertext as its digest; the link is what covers the rest)", () => {
    const columns = Object.values(getTableColumns(auditRecords)).map((c) => c.name);
    const covered: string[] = STORED_FIELDS.map((f) => (f === "organization_id" ? "org_id" : f === "ciphertext_sha256" ? "ciphertext" : f));
    // (and whether the roll-ups count the row yet: bookkeeping the fold changes, not the record; rollup-fold.ts)
    expect(columns.filter((c) => !covered.includes(c)).sort()).toEqual(["rollup_pending", "store_chain", "store_prev", "store_seq"]);
    expect(covered.filter((c) => !columns.includes(c))).toEqual([]);
    // and every field of the row reaches the form
    expect(Object.keys(storedFromRow(row())).sort()).toEqual([...STORED_FIELDS].sort());
    expect(
      Object.keys(row())
        .map(snake)
        .filter((c) => !columns.includes(c) && c !== "org_id"),
    ).toEqual([]);
  });

  test("a change of any field changes the digest; a decision's outcome and exit code are left out", () => {
    const base = storedFromRow(row());
    for (const f of STORED_FIELDS) {
      const changed = { ...base, [f]: typeof base[f] === "number" ? (base[f] as number) + 1 : typeof base[f] === "boolean" ? !base[f] : Array.isArray(base[f]) ? ["key_x"] : `${String(base[f])}x` };
      expect({ f, same: storeDigest(changed) === storeDigest(base) }).toEqual({ f, same: false });
    }
    const decision = storedFromRow(row({ kind: "tool", outcome: null, exitCode: null }));
    expect(storeDigest({ ...decision, outcome: "error", exit_code: 2 })).toBe(storeDigest(decision));
  });

  test("the export line gives back the row's own form, for ordinary rows and rows the view cannot show", () => {
    const cases: Partial<RowColumns>[] = [
      {},
      {
        kind: "tool",
        toolName: "kb.lookup",
        toolServer: "kb",
        task: null,
        model: null,
        promptTokens: null,
        completionTokens: null,
        cost: null,
        durationMs: null,
        ciphertext: null,
        recipientKeyIds: [],
        shadowDecision: null,
        shadowPolicyId: null,
        shadowReason: null,
        actorId: null,
        target: null,
        detail: null,
        chainId: null,
        chainSeq: null,
        chainPrev: null,
        replicaId: null,
      },
      // rows changed in the store into what the record view cannot show
      { shadowDecision: null },
      { shadowReason: null },
      { promptTokens: null },
      { chainId: null },
      { detail: '{ "v": 1,  "result": "ok" }' },
      { detail: "not json" },
      { ciphertext: Buffer.alloc(0) },
      // a fraction of a millisecond written into the store: the view's time cuts it
      { ts: 1_700_000_000_000.5 },
      { receivedAt: -0.25 },
    ];
    for (const over of cases) {
      const r = row(over as Partial<RowColumns>);
      expect({ over, form: fromExport(r) }).toEqual({ over, form: { ...storedFromRow(r), ciphertext_sha256: storedFromRow(r).ciphertext_sha256 } });
    }
    // an ordinary row's line carries no extra columns
    expect(exportLine(row(), null).columns).toBeUndefined();
    expect(exportLine(row({ shadowDecision: null }), null).columns).toEqual({ shadow_policy_id: "pol_2", shadow_reason: "would deny" });
  });
});

test("sameJson says what comparing the JSON texts says, without writing them for equal values or two strings", () => {
  const values: unknown[] = [
    null,
    undefined,
    "",
    "a",
    "A",
    "\uD800",
    "\uDC00",
    0,
    -0,
    1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    false,
    [],
    ["a"],
    ["a", "b"],
    ["b", "a"],
    [null],
    [undefined],
    [Number.NaN],
    ["1"],
    [1],
    [["a"]],
    { a: 1 },
  ];
  for (const x of values) for (const y of values) expect({ x, y, same: sameJson(x, y) }).toEqual({ x, y, same: JSON.stringify(x ?? null) === JSON.stringify(y ?? null) });
});

test("shownTime: a whole number of ms is what its ISO text parses back to, across Date's range; a fraction is parsed", () => {
  const whole = [0, 1, -1, 999, 1_795_859_814_003, -62_198_755_200_000, 253_402_300_799_999, 253_402_300_800_000, 8.64e15, -8.64e15, -8.64e15 + 1];
  for (let i = 0; i < 2000; i++) whole.push(Math.round((Math.random() * 2 - 1) * 8.64e15));
  for (const ms of [...whole, 0.5, -0.5, 1_700_000_000_000.25]) {
    const iso = new Date(ms).toISOString();
    expect({ ms, shown: shownTime(ms, iso) }).toEqual({ ms, shown: Date.parse(iso) });
  }
});
