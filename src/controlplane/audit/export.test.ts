// The export and the search: CSV cells, the tool filter's LIKE pattern, bad filters refused before streaming, the OCSF and ECS formats.
import { expect, test } from "bun:test";
import { ecsProblems, ocsfProblems } from "../../../test/support/siem-schemas/validate.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { CSV_COLUMNS, csvCell } from "./export.ts";
import { toolPattern } from "./query.ts";

test("csvCell quotes commas, quotes and line breaks; defuses formulas; leaves numbers alone", () => {
  expect(csvCell("plain")).toBe("plain");
  expect(csvCell('a "b", c')).toBe('"a ""b"", c"');
  expect(csvCell("two\nlines")).toBe('"two\nlines"');
  expect(csvCell("=SUM(A1)")).toBe("'=SUM(A1)");
  expect(csvCell("@x,y")).toBe(`"'@x,y"`);
  expect(csvCell(-3)).toBe("-3");
  expect(csvCell(false)).toBe("false");
  expect(csvCell(null)).toBe("");
});

test("CSV columns keep their positions: the first ones as first released, later ones (tool_server, task, the admin trail's, upstream_identity) appended", () => {
  const names = CSV_COLUMNS.map(([n]) => n);
  expect(names.slice(0, 9)).toEqual(["id", "ts", "received_at", "kind", "action", "tool_name", "model", "decision", "reason"]);
  expect(names.slice(-7)).toEqual(["ciphertext_sha256", "tool_server", "task", "actor_id", "target", "admin", "upstream_identity"]);
});

test("toolPattern: a prefix without wildcards, a glob with them; LIKE's own characters are literal", () => {
  expect(toolPattern("crm.")).toBe("crm.%");
  expect(toolPattern("crm.*.read")).toBe("crm.%.read");
  expect(toolPattern("crm?x")).toBe("crm_x");
  expect(toolPattern("a_b%")).toBe("a\\_b\\%%");
  expect(toolPattern("back\\slash")).toBe("back\\\\slash%");
});

test("a bad export filter is a 4xx problem before any byte is streamed (it cut the connection after a 200; schemathesis found it)", async () => {
  const cp = await testControlPlane();
  for (const query of ["from=%3A", "since=yesterday-ish", "format=csv&until=%3A"]) {
    const res = await cp.call("GET", cp.org(`/audit-records/export?${query}`));
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get("content-type")).toStartWith("application/problem+json");
  }
  const ok = await cp.call("GET", cp.org("/audit-records/export?format=csv"));
  expect(ok.status).toBe(200);
});

test("format=ocsf and format=ecs: one event of the schema per record (validated), the filters applied, never the ciphertext", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const records = [
    auditRecord(inst, { decision: "deny", ciphertext: Buffer.from("age-ciphertext-bytes").toString("base64"), recipient_key_ids: ["key_X"] }),
    auditRecord(inst, { kind: "model", action: "model:gpt-4o", tool_name: null, model: "gpt-4o" }),
  ];
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(2);
  const lines = async (query: string) => {
    const res = await cp.call("GET", cp.org(`/audit-records/export?${query}`));
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "application/x-ndjson"]);
    expect(res.text).not.toContain(Buffer.from("age-ciphertext-bytes").toString("base64"));
    return res.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
  };
  const ocsf = await lines("format=ocsf");
  for (const e of ocsf) expect(ocsfProblems(e)).toEqual([]);
  expect(ocsf.filter((e) => e.class_uid === 6003).map((e) => [e.metadata.uid, e.activity_name, ocsfProblems(e)])).toEqual([
    [records[0]!.id, "Tool Call", []],
    [records[1]!.id, "Model Call", []],
  ]);
  const admin = await lines("format=ocsf&kind=admin");
  expect(admin.length).toBeGreaterThan(0);
  for (const e of admin) expect(ocsfProblems(e)).toEqual([]);
  const ecs = await lines("format=ecs&decision=deny");
  expect(ecs.map((d) => [d.event.id, d.event.outcome, ecsProblems(d, ["svc"])])).toEqual([[records[0]!.id, "failure", []]]);
  const bad = await cp.call("GET", cp.org("/audit-records/export?format=cef"));
  expect([bad.status, bad.headers.get("content-type")]).toEqual([422, "application/problem+json"]);
  expect(bad.text).toContain("format");
});
