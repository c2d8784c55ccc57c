import { describe, expect, test } from "bun:test";
import { auditRecordProblem } from "./audit-check.ts";
import { fakeRecord } from "../proxy/testing/records.ts";

const record = fakeRecord;

describe("auditRecordProblem with the record's JSON text", () => {
  test("a NUL anywhere is found, with or without the text", () => {
    for (const r of [record({ tool_name: "crm.read\u0000x", action: "tool:crm.read\u0000x" }), record({ subject: { user_id: "usr_1", remote_user_id: "fe\u0000", via_installation: false } })]) {
      expect(auditRecordProblem(r)).toBe("a text field contains a NUL character");
      expect(auditRecordProblem(r, JSON.stringify(r))).toBe("a text field contains a NUL character");
    }
  });

  test("a backslash followed by u0000 is text, not a NUL", () => {
    const r = record({ subject: { user_id: "usr_1", remote_user_id: "fe\\u0000", via_installation: false } });
    expect(JSON.stringify(r)).toContain("\\u0000");
    expect(auditRecordProblem(r, JSON.stringify(r))).toBeNull();
    expect(auditRecordProblem(record(), JSON.stringify(record()))).toBeNull();
  });
});
