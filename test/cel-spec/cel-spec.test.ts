// cel-spec's conformance suite (testdata/, vendored at a fixed commit: README.md) against svc's
// own CEL, the one conditions run on. Prints the table per file and asserts what svc claims:
// at least 98 % of the cases of the language's own files that need no protobuf types, every
// case there that requires an error errors (so a condition fails closed), and the failures
// are exactly the known ones (docs/conditions.md lists them).
import { describe, expect, test } from "bun:test";
import { loadCases } from "./cases.ts";
import { judge } from "./judge.ts";
import { EXTENSION_FILES, KNOWN_FAILURES } from "./scope.ts";
import { svcCel } from "./svc.ts";

const cases = loadCases();
const results = cases.map((c) => ({ c, v: judge(c, svcCel.run(c)), key: `${c.file}/${c.section}/${c.name}` }));
const core = results.filter((r) => !r.c.needsProto && !EXTENSION_FILES.has(r.c.file));

describe("cel-spec conformance (svc's CEL)", () => {
  test("the table per file; at least 98 % of the language's cases without protobuf types pass", () => {
    const files = [...new Set(cases.map((c) => c.file))];
    const rows = files.map((f) => {
      const of = results.filter((r) => r.c.file === f);
      const np = of.filter((r) => !r.c.needsProto);
      return `${f.padEnd(16)} ${String(of.length).padStart(4)} cases ${String(np.length).padStart(4)} without protobuf: ${String(np.filter((r) => r.v.pass).length).padStart(4)} pass${EXTENSION_FILES.has(f) ? "  (extension, not enabled)" : ""}`;
    });
    const passed = core.filter((r) => r.v.pass).length;
    const rate = passed / core.length;
    console.log(`${rows.join("\n")}\ncel-spec language cases without protobuf types: ${passed} of ${core.length} pass (${(100 * rate).toFixed(1)} %)`);
    expect(core.length).toBeGreaterThan(1000);
    expect(rate).toBeGreaterThanOrEqual(0.98);
  });

  test("every case that requires an error errors", () => {
    const required = results.filter((r) => !r.c.needsProto && r.c.expected.kind === "error");
    expect(required.length).toBeGreaterThan(150);
    expect(required.filter((r) => !r.v.pass).map((r) => `${r.key}: ${r.v.why}`)).toEqual([]);
  });

  test("the failures are exactly the known ones", () => {
    const failing = Object.fromEntries(core.filter((r) => !r.v.pass).map((r) => [r.key, r.v.why]));
    expect(Object.keys(failing).sort()).toEqual(Object.keys(KNOWN_FAILURES).sort());
  });
});
