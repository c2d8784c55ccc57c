// The export and the search: CSV cells, the tool filter's LIKE pattern, bad filters refused before streaming.
import { expect, test } from "bun:test";
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

test("CSV columns keep their positions: the first ones as first released, later ones (tool_server, task, the admin trail's) appended", () => {
  const names = CSV_COLUMNS.map(([n]) => n);
  expect(names.slice(0, 9)).toEqual(["id", "ts", "received_at", "kind", "action", "tool_name", "model", "decision", "reason"]);
  expect(names.slice(-6)).toEqual(["ciphertext_sha256", "tool_server", "task", "actor_id", "target", "admin"]);
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
