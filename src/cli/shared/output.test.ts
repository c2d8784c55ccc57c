import { describe, expect, test } from "bun:test";
import { readLimit, renderFields, renderTable, shortTime } from "./output.ts";

test("tables align columns to the widest cell and show - for empty cells", () => {
  const rows = [
    { id: "inst_1", name: "helpdesk", agent: null },
    { id: "inst_22", name: "x", agent: "agt_1" },
  ];
  const text = renderTable(rows, [
    { header: "ID", value: (r) => r.id },
    { header: "NAME", value: (r) => r.name },
    { header: "AGENT", value: (r) => r.agent },
  ]);
  expect(text.split("\n")).toEqual(["ID       NAME      AGENT", "inst_1   helpdesk  -", "inst_22  x         agt_1"]);
});

test("cells with newlines stay on one line", () => {
  expect(renderTable([{ a: "x\ny" }], [{ header: "A", value: (r) => r.a }])).toBe("A\nx y");
});

test("fields align their keys", () => {
  expect(
    renderFields([
      ["id", "x"],
      ["long name", 3],
    ]),
  ).toBe("id:        x\nlong name: 3");
});

test("times are shortened to the second", () => {
  expect(shortTime("2026-01-02T03:04:05.678Z")).toBe("2026-01-02 03:04:05Z");
  expect(shortTime(null)).toBeNull();
});

test("out() delivers large output completely to a slow pipe reader before exit", () => {
  const script = `import { out } from ${JSON.stringify(`${import.meta.dir}/output.ts`)}; out("x".repeat(3_000_000)); process.exit(0);`;
  const r = Bun.spawnSync(["sh", "-c", `bun -e '${script.replace(/'/g, `'\\''`)}' | (sleep 0.5; wc -c)`]);
  expect(r.stdout.toString().trim()).toBe("3000001");
});

describe("readLimit (--limit, --all)", () => {
  test("default, a number, 0 and --all mean all; nonsense and contradictions are usage errors", () => {
    expect(readLimit({}, 50)).toBe(50);
    expect(readLimit({ limit: "1000" }, 50)).toBe(1000);
    expect(readLimit({ limit: "0" }, 50)).toBe(0);
    expect(readLimit({ all: true }, 50)).toBe(0);
    expect(readLimit({ all: true, limit: "0" }, 50)).toBe(0);
    expect(() => readLimit({ limit: "-3" }, 50)).toThrow('--limit must be a whole number (0 for all), not "-3"');
    expect(() => readLimit({ limit: "1e3" }, 50)).toThrow("--limit must be a whole number");
    expect(() => readLimit({ all: true, limit: "10" }, 50)).toThrow("--all and --limit 10 contradict each other");
  });
});
