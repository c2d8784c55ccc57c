// The MCP server of a tool call (issue 13) on audit records: stored at ingest, shown by the
// search, the record view and the export; bound to the chained tool_name, so a record whose
// tool_server names another server is rejected at ingest and reported by `svc audit verify`'s
// check, while the chained records themselves still verify after export.
import { describe, expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { verifyLines } from "../../contract/verify/index.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";

describe("tool_server on audit records", () => {
  test("stored, shown and exported; the chain still verifies; changing it in an export is caught", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const chain = new AuditChain();
    const decision = chain.stamp(auditRecord(inst, { action: "tool:kb.lookup", tool_name: "kb.lookup", tool_server: "kb" }));
    const outcome = chain.stamp(auditRecord(inst, { kind: "outcome", action: "tool:kb.lookup", tool_name: "kb.lookup", tool_server: "kb", ref: decision.id, outcome: "ok", exit_code: null }));
    const pack = chain.stamp(auditRecord(inst));
    const res = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [decision, outcome, pack] } });
    expect(res.json).toMatchObject({ inserted: 3, rejected: [] });

    const shown = await cp.call("GET", cp.org(`/audit-records/${decision.id}`));
    expect(shown.json).toMatchObject({ tool_name: "kb.lookup", tool_server: "kb" });
    expect((await cp.call("GET", cp.org(`/audit-records/${pack.id}`))).json.tool_server).toBeUndefined();
    const listed = (await cp.call("GET", cp.org("/audit-records?tool=kb."))).json.records as { id: string; tool_server?: string }[];
    expect(listed.map((r) => [r.id, r.tool_server])).toEqual([
      [outcome.id, "kb"],
      [decision.id, "kb"],
    ]);
    const csv = (await cp.call("GET", cp.org("/audit-records/export?format=csv"))).text.split("\r\n");
    const col = csv[0]!.split(",").indexOf("tool_server");
    expect(col).toBeGreaterThan(0);
    expect(csv.find((l) => l.startsWith(decision.id))!.split(",")[col]).toBe("kb");

    const lines = (await cp.call("GET", cp.org("/audit-records/export?format=jsonl"))).text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ExportLine);
    expect(lines.find((l) => l.id === decision.id)!.tool_server).toBe("kb");
    expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
    const checkpoints = (await cp.call("GET", cp.org("/audit-checkpoints"))).json;
    const verify = (records: ExportLine[]) => verifyLines(records, checkpoints);
    const clean = verify(lines);
    expect(clean.problems).toEqual([]);
    expect(clean.covered).toBe(3 + 1); // + the bootstrap event
    // tool_server is outside the proxy's chain form but bound to the chained tool_name, and inside the store chain's form
    const forged = verify(lines.map((l) => (l.id === decision.id ? { ...l, tool_server: "github" } : l)));
    expect(forged.ok).toBe(false);
    expect(forged.problems).toEqual([
      expect.objectContaining({ kind: "changed", record_id: decision.id, detail: expect.stringContaining('tool_server "github" is not the server of its tool_name "kb.lookup"') }),
      expect.objectContaining({ kind: "changed", record_id: decision.id, chain_id: "store", detail: expect.stringContaining(`its hash is not the one record ${outcome.id} names`) }),
    ]);
  });

  test("a record whose tool_server is not the server of its tool_name is rejected alone, naming the field", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const good = auditRecord(inst, { action: "tool:kb.lookup", tool_name: "kb.lookup", tool_server: "kb" });
    const bad: AuditRecord = auditRecord(inst, { action: "tool:kb.lookup", tool_name: "kb.lookup", tool_server: "github" });
    const none: AuditRecord = auditRecord(inst, { kind: "model", action: "model:invoke", tool_name: null, tool_server: "kb" });
    const res = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [good, bad, none] } });
    expect(res.json.acknowledged).toEqual([good.id]);
    expect(res.json.rejected).toEqual([
      { id: bad.id, code: "malformed", reason: expect.stringContaining('/tool_server: "github" is not the server of tool_name "kb.lookup"') },
      { id: none.id, code: "malformed", reason: expect.stringContaining("/tool_server") },
    ]);
  });
});
