// The shared fixed-window limiter: counts in the store, exact under concurrent hits from
// several replicas (separate deps on one database), kept across a restart, keys hashed,
// ended windows swept a bounded batch at a time.
import { afterEach, describe, expect, test } from "bun:test";
import { silentLogger } from "../../log/index.ts";
import { type Store, tables } from "../db/index.ts";
import { openTestStore } from "../db/test-store.ts";
import { FixedWindowLimiter, type LimiterOptions, hashedKey } from "./rate-limit.ts";

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function setup() {
  store = await openTestStore();
  let clock = 1_750_000_000_000;
  const deps = { db: store.db, now: () => clock, log: silentLogger };
  /** A limiter of its own replica: another deps object on the same database. */
  const replica = (o: Partial<LimiterOptions> = {}) => new FixedWindowLimiter({ ...deps }, { scope: "test", limit: 50, windowMs: 60_000, ...o });
  const w = tables(store.db).rateLimitWindows;
  const rows = () => store!.db.select().from(w);
  return { replica, rows, advance: (ms: number) => (clock += ms), now: () => clock };
}

describe("FixedWindowLimiter", () => {
  test("concurrent hits from four replicas are all counted, and exactly the ones past the limit are refused", async () => {
    const { replica, rows } = await setup();
    const replicas = [replica(), replica(), replica(), replica()];
    const waits = await Promise.all(replicas.flatMap((l) => Array.from({ length: 25 }, async () => l.hit("203.0.113.7"))));
    expect((await rows()).map((r) => r.count)).toEqual([100]);
    expect(waits.filter((s) => s > 0)).toHaveLength(50);
    expect(waits.filter((s) => s > 0).every((s) => s === 60)).toBe(true);
  });

  test("a restarted replica sees the window: blocked until it ends", async () => {
    const { replica, advance } = await setup();
    const before = replica({ limit: 3 });
    for (let i = 0; i < 3; i++) await before.hit("owner@example.com");
    const after = replica({ limit: 3 });
    expect(await after.hit("owner@example.com")).toBe(60);
    expect(await after.hit("other@example.com")).toBe(0);
    advance(45_500);
    expect(await after.hit("owner@example.com")).toBe(15);
    advance(14_500);
    expect(await after.hit("owner@example.com")).toBe(0); // a new window, counted from 1
  });

  test("an ended window starts again at 1, also when replicas hit it at once", async () => {
    const { replica, rows, advance, now } = await setup();
    for (let i = 0; i < 7; i++) await replica().hit("k");
    advance(60_000);
    await Promise.all([replica(), replica(), replica()].flatMap((l) => Array.from({ length: 5 }, async () => l.hit("k"))));
    expect((await rows()).map((r) => ({ count: r.count, windowStart: r.windowStart }))).toEqual([{ count: 15, windowStart: now() }]);
  });

  test("the same key under another scope is another window", async () => {
    const { replica } = await setup();
    const email = replica({ scope: "email", limit: 1 });
    await email.hit("k");
    expect(await email.hit("k")).toBe(60);
    expect(await replica({ scope: "ip", limit: 1 }).hit("k")).toBe(0);
  });

  test("keys are stored as hashes, never the email or address", async () => {
    const { replica, rows } = await setup();
    await replica().hit("Owner@Example.com");
    await replica({ scope: "ip" }).hit("2001:db8::7");
    const stored = await rows();
    expect(stored.map((r) => r.key).sort()).toEqual([hashedKey("2001:db8::7"), hashedKey("Owner@Example.com")].sort());
    for (const r of stored) expect(r.key).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain("xample");
    expect(JSON.stringify(stored)).not.toContain("db8");
  });

  test("reset deletes the key's window in its scope only", async () => {
    const { replica, rows } = await setup();
    const a = replica({ scope: "a" });
    await a.hit("k");
    await a.hit("j");
    await replica({ scope: "b" }).hit("k");
    await a.reset("k");
    expect((await rows()).map((r) => `${r.scope}:${r.key === hashedKey("k") ? "k" : "j"}`).sort()).toEqual(["a:j", "b:k"]);
  });

  test("every sweepEvery hits, at most sweepBatch ended windows of the scope are deleted", async () => {
    const { replica, rows, advance } = await setup();
    const l = replica({ scope: "a", sweepEvery: 5, sweepBatch: 2 });
    const other = replica({ scope: "b" });
    for (const k of ["k1", "k2", "k3", "k4"]) await l.hit(k);
    await other.hit("k1");
    advance(60_000);
    const count = async (scope: string) => (await rows()).filter((r) => r.scope === scope).length;
    expect(await count("a")).toBe(4);
    await l.hit("k5");
    expect(await count("a")).toBe(3);
    expect(await count("b")).toBe(1);
    // The tenth hit's sweep takes the last two ended windows; the five live ones stay.
    for (const k of ["k6", "k7", "k8", "k9", "k10"]) await l.hit(k);
    expect(await count("a")).toBe(6);
    advance(60_000);
    for (let i = 0; i < 15; i++) await l.hit("k11");
    // Three sweeps of two: only the live window is left.
    expect((await rows()).filter((r) => r.scope === "a").map((r) => r.key)).toEqual([hashedKey("k11")]);
  });
});
