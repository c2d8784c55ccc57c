// The pure parts of the export and the search: CSV cells and the tool filter's LIKE pattern.
import { expect, test } from "bun:test";
import { csvCell } from "./export.ts";
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

test("toolPattern: a prefix without wildcards, a glob with them; LIKE's own characters are literal", () => {
  expect(toolPattern("crm.")).toBe("crm.%");
  expect(toolPattern("crm.*.read")).toBe("crm.%.read");
  expect(toolPattern("crm?x")).toBe("crm_x");
  expect(toolPattern("a_b%")).toBe("a\\_b\\%%");
  expect(toolPattern("back\\slash")).toBe("back\\\\slash%");
});
