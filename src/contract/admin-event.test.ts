// The admin trail's catalogue (ADMIN_ACTIONS) is the one list of admin events: docs/audit.md's
// table names exactly its actions, each with its severity; the action filter's check (the API's
// 422 and the CLI's exit 2) is pure.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_ACTIONS, actionFilterProblem, fieldChanges } from "./admin-event.ts";

const DOC = readFileSync(join(import.meta.dir, "../../docs/audit.md"), "utf8");

/** The rows of docs/audit.md's "Every admin event" table: the actions named in the first cell, the severity cell. */
function documented(): Array<{ actions: string[]; severity: string }> {
  const start = DOC.indexOf("### Every admin event");
  const table = DOC.slice(start, DOC.indexOf("\n\n", DOC.indexOf("| action |", start)));
  return table
    .split("\n")
    .filter((l) => l.startsWith("| `"))
    .map((l) => {
      const cells = l.split(" | ");
      return { actions: [...cells[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!), severity: cells[cells.length - 1]!.replace(/\s*\|$/, "") };
    });
}

describe("the catalogue of admin events", () => {
  test("docs/audit.md lists exactly the catalogue's actions, each with its severity", () => {
    const rows = documented();
    expect(rows.flatMap((r) => r.actions).sort()).toEqual(Object.keys(ADMIN_ACTIONS).sort());
    for (const r of rows) for (const a of r.actions) expect([a, r.severity.split(" ")[0]]).toEqual([a, ADMIN_ACTIONS[a as keyof typeof ADMIN_ACTIONS].severity]);
  });

  test("names are <resource>.<verb> in snake_case (the escrow recovery keeps its audit:recovery.* names)", () => {
    for (const a of Object.keys(ADMIN_ACTIONS)) expect(a).toMatch(/^(audit:recovery\.(request|approve|decrypt|policy)|[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*)$/);
  });

  test("an action filter is a name or a known prefix ending in *", () => {
    expect(actionFilterProblem("policy.update")).toBeNull();
    expect(actionFilterProblem("policy.*")).toBeNull();
    expect(actionFilterProblem("audit:recovery.*")).toBeNull();
    expect(actionFilterProblem("*")).toBeNull();
    expect(actionFilterProblem("policy.explode")).toContain("is not an admin action");
    expect(actionFilterProblem("nothing.*")).toContain('no admin action starts with "nothing."');
    expect(actionFilterProblem("po*cy.*")).toContain("only one *");
  });

  test("before and after, field by field, the changed ones marked (a creation, a change, a deletion, a bare value)", () => {
    expect(fieldChanges(undefined, { a: 1 })).toEqual([{ field: "a", before: undefined, after: 1, changed: true }]);
    expect(fieldChanges({ a: 1, b: [1, 2] }, { a: 2, b: [1, 2] })).toEqual([
      { field: "a", before: 1, after: 2, changed: true },
      { field: "b", before: [1, 2], after: [1, 2], changed: false },
    ]);
    expect(fieldChanges({ a: 1 }, undefined)).toEqual([{ field: "a", before: 1, after: undefined, changed: true }]);
    expect(fieldChanges("x", "y")).toEqual([{ field: "value", before: "x", after: "y", changed: true }]);
    expect(fieldChanges(undefined, undefined)).toEqual([]);
  });
});
