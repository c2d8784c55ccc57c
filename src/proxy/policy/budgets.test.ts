import { describe, expect, test } from "bun:test";
import type { BudgetState } from "../../contract/runtime-api.ts";
import { BudgetBook } from "./budgets.ts";
import type { Subject } from "./policy-index.ts";

const NOW = Date.parse("2026-05-10T12:00:00Z");
const budget = (over: Partial<BudgetState>): BudgetState => ({
  id: "bud_1",
  name: "alice daily",
  scope: "user",
  scope_id: "usr_alice",
  group_name: null,
  period: "day",
  unit: "tokens",
  limit: 100,
  spent: 0,
  period_start: "2026-05-10T00:00:00.000Z",
  resets_at: "2026-05-11T00:00:00.000Z",
  ...over,
});
const alice: Subject = { kind: "user", userId: "usr_alice", remoteUserId: "fe-a", groups: ["sales"] };
const bob: Subject = { kind: "user", userId: "usr_bob", remoteUserId: "fe-b", groups: [] };
const installation: Subject = { kind: "installation", installationId: "inst_1" };
const use = (n: number) => ({ prompt_tokens: n, completion_tokens: 0 });

describe("budget book", () => {
  test("nothing is enforced before the control plane answered", () => {
    expect(new BudgetBook().check(alice, NOW)).toEqual({ refusal: null, warning: null });
  });

  test("refused at the limit, with the spec's refusal form; other users unaffected", () => {
    const book = new BudgetBook();
    book.update([budget({ spent: 100 })], book.mark());
    expect(book.check(alice, NOW).refusal).toBe('Refused (svc.budget_exceeded): the budget "alice daily" is used up (100 tokens of 100 tokens this day); it resets at 2026-05-11T00:00:00.000Z');
    expect(book.check(bob, NOW).refusal).toBeNull();
    expect(book.check(installation, NOW).refusal).toBeNull();
    // a new period: the old count no longer holds
    expect(book.check(alice, Date.parse("2026-05-11T00:00:01Z")).refusal).toBeNull();
  });

  test("this replica's own spend counts at once; spend the control plane already counted is not counted twice", () => {
    const book = new BudgetBook();
    book.update([budget({ spent: 50 })], book.mark());
    book.add(alice, use(30), undefined);
    expect(book.check(alice, NOW).refusal).toBeNull();
    book.add(alice, use(20), undefined);
    expect(book.check(alice, NOW).refusal).toContain("100 tokens of 100");
    // a poll sent now answers with the 50 local tokens counted: the book does not add them again
    const mark = book.mark();
    book.update([budget({ spent: 100 })], mark);
    expect(book.spent(budget({ spent: 100 }), NOW)).toBe(100);
    // a poll sent before a call and answered after it: that call still counts locally
    const early = book.mark();
    book.add(alice, use(5), undefined);
    book.update([budget({ spent: 100 })], early);
    expect(book.spent(budget({ spent: 100 }), NOW)).toBe(105);
  });

  test("group, agent and money budgets; the 80 % warning once per budget and period", () => {
    const book = new BudgetBook();
    book.update(
      [
        budget({ id: "bud_g", name: "sales", scope: "group", scope_id: "grp_1", group_name: "sales", unit: "money", limit: 10, spent: 7.9 }),
        budget({ id: "bud_a", name: "agent", scope: "agent", scope_id: "agt_1", limit: 1000, spent: 0 }),
      ],
      book.mark(),
    );
    expect(book.check(alice, NOW).warning).toBeNull();
    book.add(alice, use(10), 0.2);
    const v = book.check(alice, NOW);
    expect(v.warning).toBe('81 % of the budget "sales" is used (8.1 of 10 this day); it resets at 2026-05-11T00:00:00.000Z');
    expect(book.check(alice, NOW).warning).toBeNull(); // once
    expect(book.check(bob, NOW).warning).toBeNull(); // not in the group
    book.add(installation, use(990), undefined); // the agent's budget counts every caller
    expect(book.check(bob, NOW).refusal).toContain('"agent" is used up (1000 tokens of 1000 tokens');
  });
});
