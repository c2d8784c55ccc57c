import { describe, expect, test } from "bun:test";
import { activation, checkCondition, compileCondition, describeProblem } from "./conditions.ts";

const user = { id: "usr_1", email: "a@example.com", groups: ["sales"], attributes: { source: "directory" } };
const run = (expr: string, args: unknown, now = new Date("2026-11-23T09:00:00Z")) => compileCondition(expr)(activation({ args, user, now }));

describe("checkCondition", () => {
  test.each([
    ["args.amount <= 500", null],
    ["'sales' in user.groups && now.getDayOfWeek('UTC') == 1", null],
    ["args.amount <=", "line 1, column 13: found < but expecting end of input"],
    ["user.gruops == []", "line 1, column 5: user has no field gruops (it has id, email, groups, attributes)"],
    ["args.a == 'x' &&\n  1 + 'y'", "line 2, column 3: no such overload: int + string"],
    ["request.amount < 5", "line 1, column 1: unknown variable request"],
    ["1 + 2", "line 1, column 1: the condition gives int, not bool"],
    ["   ", "the condition is empty; leave it out to apply the policy always"],
  ])("%p → %p", (expr, want) => {
    const p = checkCondition(expr);
    expect(p ? describeProblem(p) : null).toBe(want);
  });

  test("a problem carries its offset, line and column", () => {
    expect(checkCondition("args.a == 'x' &&\n  1 + 'y'")?.position).toEqual({ offset: 19, line: 2, column: 3 });
    expect(checkCondition("x".repeat(2001))?.message).toContain("longer than 2000");
  });
});

describe("compileCondition", () => {
  test("JSON whole numbers are ints, fractions doubles, bigints exact", () => {
    expect(run("args.n + 1 == 3", { n: 2 })).toEqual({ ok: true, value: true });
    expect(run("args.x > 1.5", { x: 2.5 })).toEqual({ ok: true, value: true });
    expect(run("args.id == 18446744073709551", { id: 18446744073709551n })).toEqual({ ok: true, value: true });
    expect(run("args.items.all(i, i.qty < 10)", { items: [{ qty: 1 }, { qty: 9 }] })).toEqual({ ok: true, value: true });
  });

  test("time-zone functions give what the plain Date gives, for several zones and the date line; an unknown zone is an error", () => {
    for (const iso of ["2026-11-23T21:05:09Z", "2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z", "2026-12-31T23:30:00Z"]) {
      const now = new Date(iso);
      for (const zone of ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati", "UTC"]) {
        const local = new Date(now.toLocaleString("en-US", { timeZone: zone }));
        const want = `${local.getHours()}:${local.getMinutes()}:${local.getDay()}:${local.getDate()}`;
        const expr = `string(now.getHours('${zone}')) + ':' + string(now.getMinutes('${zone}')) + ':' + string(now.getDayOfWeek('${zone}')) + ':' + string(now.getDayOfMonth('${zone}') + 1) == '${want}'`;
        expect({ iso, zone, r: run(expr, {}, now) }).toEqual({ iso, zone, r: { ok: true, value: true } });
      }
    }
    expect(run("now.getHours('Mars/Olympus') > 1", {})).toMatchObject({ ok: false });
  });

  test("arguments that are not a JSON object are no arguments", () => {
    expect(run("size(args) == 0", [1, 2])).toEqual({ ok: true, value: true });
    expect(run("size(args) == 0", null)).toEqual({ ok: true, value: true });
  });

  test("run-time errors are values, never throws; a non-bool dyn result is an error", () => {
    expect(run("args.amount < 5", {})).toEqual({ ok: false, error: "field not found: amount", limit: false });
    expect(run("args.flag", { flag: "yes" })).toEqual({ ok: false, error: "the condition gave string, not a bool" });
    expect(compileCondition("args.a <")(activation({ args: {}, user, now: new Date() }))).toMatchObject({ ok: false, error: expect.stringContaining("does not compile") });
  });
});
