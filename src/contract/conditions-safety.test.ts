// Conditions nobody can abuse (issue 28): the cost estimate when written, the pattern rule,
// the meter and the argument bounds when run; and CEL by the spec where the old library gave
// values instead of errors. Each would hang, or permit, on the cel-js conditions of 156695b.
import { describe, expect, test } from "bun:test";
import { activation, CONDITION_ARGS_MAX_VALUES, CONDITION_COST_LIMIT, checkCondition, compileCondition, describeProblem } from "./conditions.ts";
import { parseExactJson } from "./exact-json.ts";

const user = { id: "usr_1", email: "a@example.com", groups: ["sales"], attributes: {} };
const run = (expr: string, args: unknown) => compileCondition(expr)(activation({ args, user, now: new Date("2026-11-23T09:00:00Z") }));
const list = (n: number) => Array.from({ length: n }, (_, i) => i);
const NESTED_ALL = "args.l.all(x, args.l.all(y, args.l.all(z, x + y + z >= 0)))";

describe("the cost estimate when a condition is written", () => {
  test("a loop in a loop over the arguments is refused with the estimate and the part that costs most", () => {
    const p = checkCondition(NESTED_ALL)!;
    expect(p.cost).toEqual({ estimate: expect.any(Number), limit: CONDITION_COST_LIMIT, part: NESTED_ALL });
    expect(p.cost!.estimate).toBeGreaterThan(500 ** 3);
    expect(describeProblem(p)).toStartWith(`line 1, column 1: the condition may cost ${p.cost!.estimate} steps, over the limit of ${CONDITION_COST_LIMIT}`);
    // The costliest part is named where it is, not the whole condition.
    const q = checkCondition("args.kind == 'x' || args.l.exists(x, args.l.exists(y, x == y))")!;
    expect(q.cost!.part).toBe("args.l.exists(x, args.l.exists(y, x == y))");
    expect(q.position?.column).toBe(21);
  });

  test("one loop over the arguments, and loops over small literal lists, are accepted", () => {
    for (const ok of ["args.items.all(i, i.qty < 10)", "args.l.exists(x, x == 3)", "[1, 2, 3].all(x, [4, 5].all(y, x < y))", "'sales' in user.groups"])
      expect([ok, checkCondition(ok)]).toEqual([ok, null]);
  });
});

describe("regular expressions: RE2, and no nested repetition", () => {
  test.each([
    ["args.q.matches('^(a+)+$')", "the pattern repeats a repetition ((a+)+)"],
    ["args.q.matches('(x*)*y')", "the pattern repeats a repetition ((x*)*)"],
    ["args.q.matches('^(?:ab+){2,}$')", "the pattern repeats a repetition ((?:ab+){2,})"],
    ["args.q.matches('(a)\\\\1')", "is not RE2 syntax"],
    ["args.q.matches('a(?=b)')", "is not RE2 syntax"],
    ["args.q.matches(args.pattern)", "matches() takes a string literal as its pattern"],
    ["matches(args.q, args.pattern)", "matches() takes a string literal as its pattern"],
  ])("%p is refused: %p", (expr, why) => {
    expect(checkCondition(expr)?.message).toContain(why);
  });

  test("a pattern that backtracks exponentially elsewhere runs in linear time here", () => {
    expect(checkCondition("args.q.matches('^(a|aa)+$')")).toBeNull();
    // 2^60 paths for a backtracking engine; RE2 answers at once.
    expect(run("args.q.matches('^(a|aa)+$')", { q: `${"a".repeat(60)}b` })).toEqual({ ok: true, value: false });
    expect(run("args.q.matches('^(a|aa)+$')", { q: "a".repeat(60) })).toEqual({ ok: true, value: true });
  });
});

describe("the limits when a condition runs", () => {
  test("a forced condition over the estimate fails closed without running, however small the call", () => {
    expect(run(NESTED_ALL, { l: list(400) })).toMatchObject({ ok: false, limit: true, error: expect.stringContaining("is refused (line 1, column 1: the condition may cost") });
    expect(run("args.q.matches('^(a+)+$')", { q: `${"a".repeat(26)}b` })).toMatchObject({ ok: false, limit: true, error: expect.stringContaining("repeats a repetition") });
  });

  test("the meter stops a loop over a list longer than the estimate assumed", () => {
    expect(run("args.l.all(x, x >= 0)", { l: list(900) })).toEqual({ ok: true, value: true });
    expect(run("args.l.all(x, x >= 0)", { l: list(3000) })).toEqual({ ok: false, limit: true, error: `the evaluation passed its limit of ${CONDITION_COST_LIMIT} steps (loop iterations)` });
    // A loop pays for its range before it starts: one that would end at its first item pays for all.
    expect(run("args.l.exists(x, x == 0)", { l: list(3000) })).toMatchObject({ ok: false, limit: true });
  });

  test("a function pays by the size of what it is given, before it works", () => {
    const long = "a".repeat(CONDITION_COST_LIMIT * 64 + 64);
    expect(run("args.s.matches('a.*b')", { s: long })).toEqual({ ok: false, limit: true, error: `the evaluation passed its limit of ${CONDITION_COST_LIMIT} steps (matches)` });
    expect(run("args.s.matches('a.*b')", { s: "a".repeat(1000) })).toEqual({ ok: true, value: false });
    // Values that grow: each concatenation pays for its text.
    expect(run("(args.s + args.s + args.s + args.s).size() > 0", { s: "x".repeat(1 << 20) })).toMatchObject({ ok: false, limit: true });
  });

  test("arguments past the bounds a condition reads refuse, naming the bound; a condition that does not read them runs", () => {
    const many = { l: list(CONDITION_ARGS_MAX_VALUES) };
    expect(run("size(args.l) > 0", many)).toEqual({ ok: false, limit: true, error: `the call's arguments hold more than ${CONDITION_ARGS_MAX_VALUES} values, the most a condition reads` });
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(run("args.d != null", { d: deep })).toMatchObject({ ok: false, limit: true, error: expect.stringContaining("nest deeper than 32 levels") });
    expect(run("'sales' in user.groups", many)).toEqual({ ok: true, value: true });
  });
});

describe("CEL by the spec: errors where cel-js gave values", () => {
  test.each([
    ["int(1e99) > 0", "overflow"],
    ["args.n + 9223372036854775807 > 0", "overflow"],
    ["-args.min < 0", "overflow"],
    ["timestamp('9999-12-31T23:59:59Z') + duration('1s') > now", "range"],
    ["duration('320000000000s') > duration('0s')", ""],
    ["timestamp(253402300800) > now", "out of the timestamp range"],
  ])("%p errors, so its policy refuses", (expr, why) => {
    const r = run(expr, { n: 1, min: -(2n ** 63n) });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.toLowerCase()).toContain(why);
  });

  test("heterogeneous numbers and mixed literals", () => {
    expect(run("dyn(3u) in [1, 2, 3]", {})).toEqual({ ok: true, value: true });
    expect(run("[1, 'a', 2.5].size() == 3 && {'a': 1, 'b': 'x'}.size() == 2", {})).toEqual({ ok: true, value: true });
    expect(run("timestamp(1000000000) == timestamp('2001-09-09T01:46:40Z')", {})).toEqual({ ok: true, value: true });
  });
});

describe("numbers exactly as the caller wrote them", () => {
  const exact = (json: string) => parseExactJson(json) as Record<string, unknown>;

  test("an integer beyond 2^53 is that integer in a condition", () => {
    expect(run("args.n == 9007199254740993", exact('{"n": 9007199254740993}'))).toEqual({ ok: true, value: true });
    expect(run("args.n == 9007199254740992", exact('{"n": 9007199254740993}'))).toEqual({ ok: true, value: false });
    expect(run("args.n - 1 == 9223372036854775806", exact('{"n": 9223372036854775807}'))).toEqual({ ok: true, value: true });
    // Whole numbers are ints however written; beyond 64 bits, the nearest double.
    expect(run("type(args.a) == int && type(args.b) == int && type(args.c) == double", exact('{"a": 2, "b": 2.0e0, "c": 18446744073709551616}'))).toEqual({ ok: true, value: true });
  });

  test("a decimal with more digits than a double holds is read as the nearest double", () => {
    expect(run("args.amount <= 500", exact('{"amount": 100.00000000000000000001}'))).toEqual({ ok: true, value: true });
    expect(run("args.amount == 100.0", exact('{"amount": 100.00000000000000000001}'))).toEqual({ ok: true, value: true });
  });
});
