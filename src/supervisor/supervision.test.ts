import { afterAll, describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import { STOP_BUDGET_MS, Stopped, Supervision } from "./supervision.ts";
import { idleChild, lines, waitUntil } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "svc-supervision-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function capture(): Logger & { lines: string[] } {
  const out: string[] = [];
  const push = (e: string) => void out.push(e);
  return { lines: out, info: push, warn: push, error: push };
}

type Behaviour = { ignore?: boolean; linger?: boolean };

/** A supervision with a proxy (draining), a front end and a seed, each recording its signals. */
async function world(opts: { proxy?: Behaviour; front?: Behaviour; seed?: Behaviour; stopGraceMs?: number; drainGraceMs?: number; lastChanceMs?: number } = {}) {
  const log = join(root, `signals-${n++}.log`);
  const signals = new EventEmitter();
  const logger = capture();
  const sup = new Supervision({
    log: logger,
    signals,
    stopGraceMs: opts.stopGraceMs ?? 10_000,
    drainGraceMs: opts.drainGraceMs ?? 10_000,
    lastChanceMs: opts.lastChanceMs,
  });
  const start = (name: string, behaviour: Behaviour = {}, drains = false) => idleChild(name, log, root, { ...behaviour, start: (nm, argv, o) => sup.start(nm, argv, { ...o, drains }) });
  const proxy = start("proxy", opts.proxy, true);
  const front = start("front end", opts.front);
  const seed = start("seed", opts.seed);
  await waitUntil(() => ["proxy", "front end", "seed"].every((c) => lines(log).includes(`${c} ready`)), "the children");
  return { sup, signals, log, logger, proxy, front, seed, received: () => lines(log).filter((l) => !l.endsWith(" ready")) };
}

/** The seed and the front end get the signal together (in either order), the proxy after them. */
function expectStopOrder(received: string[], sig: string, first = ["front end", "seed"]) {
  expect(received.slice(0, first.length).sort()).toEqual(first.map((c) => `${c} ${sig}`).sort());
  expect(received.slice(first.length)).toEqual([`proxy ${sig}`]);
}

describe("supervision", () => {
  test("SIGTERM is forwarded to every child: the seed and the front end together, the draining proxy last", async () => {
    const w = await world();
    w.signals.emit("SIGTERM");
    await w.sup.stopped;
    expect(w.sup.stopReason).toEqual({ code: 0, why: "SIGTERM", signal: "SIGTERM" });
    await w.sup.shutdown();
    expectStopOrder(w.received(), "SIGTERM");
    for (const c of [w.proxy, w.front, w.seed]) expect(c.hasExited()).toBe(true);
    expect(w.signals.listenerCount("SIGTERM") + w.signals.listenerCount("SIGINT")).toBe(0);
  });

  test("SIGINT is forwarded as SIGINT", async () => {
    const w = await world();
    w.signals.emit("SIGINT");
    await w.sup.shutdown();
    expectStopOrder(w.received(), "SIGINT");
    expect(w.sup.stopReason?.code).toBe(0);
  });

  test("a watched child that dies stops the others and the exit code is 1", async () => {
    const w = await world();
    w.sup.watch(w.proxy);
    w.sup.watch(w.front);
    process.kill(w.front.pid, "SIGKILL");
    await w.sup.stopped;
    expect(w.sup.stopReason).toEqual({ code: 1, why: "front end exited" });
    expect(w.logger.lines).toContain("front end exited (code 137); stopping");
    await w.sup.shutdown();
    expectStopOrder(w.received(), "SIGTERM", ["seed"]);
  });

  test("an unwatched child (the seed) may exit without stopping anything", async () => {
    const w = await world();
    w.sup.watch(w.proxy);
    await w.seed.stop(10_000);
    expect(w.sup.stopReason).toBeNull();
    w.signals.emit("SIGTERM");
    await w.sup.shutdown();
    expectStopOrder(w.received(), "SIGTERM");
  });

  test("guard() rejects once a stop is requested, and nothing starts afterwards", async () => {
    const w = await world();
    const pending = w.sup.guard(new Promise(() => {}));
    w.sup.requestStop(1, "start failure");
    await expect(pending).rejects.toBeInstanceOf(Stopped);
    expect(() => w.sup.start("late", ["true"], { env: {} })).toThrow(Stopped);
    w.signals.emit("SIGTERM"); // one signal while stopping changes nothing
    expect(w.sup.stopReason).toEqual({ code: 1, why: "start failure" });
    await w.sup.shutdown();
    expectStopOrder(w.received(), "SIGTERM");
    expect(w.sup.pids()).toEqual([]);
  });

  test("the seed and the front end share one stop grace: both are signalled before either has stopped", async () => {
    // Graces of 10 minutes: nothing here ends by a timeout. Stopped one after the other, the
    // front end would get its signal only when the lingering seed's grace ran out.
    const w = await world({ seed: { linger: true }, stopGraceMs: 600_000, drainGraceMs: 600_000, lastChanceMs: 600_000 });
    w.signals.emit("SIGTERM");
    const done = w.sup.shutdown();
    // Both are signalled together; their reports arrive in either order.
    await waitUntil(() => w.received().includes("front end SIGTERM") && w.received().includes("seed SIGTERM"), "the front end's and the seed's signals while the seed still runs");
    expect(w.seed.hasExited()).toBe(false);
    expect(w.received()).not.toContain("proxy SIGTERM"); // the proxy only after both
    w.signals.emit("SIGTERM"); // the second signal ends the wait (below)
    await done;
    expect(await w.seed.exited).toBe(137);
    expect(w.sup.budgetMs).toBe(1_200_000);
  });

  test("a second signal: SIGKILL to the seed and the front end at once; the proxy is signalled once and may still exit by itself", async () => {
    const w = await world({ seed: { linger: true }, front: { linger: true }, stopGraceMs: 600_000, drainGraceMs: 600_000, lastChanceMs: 600_000 });
    w.signals.emit("SIGINT");
    const done = w.sup.shutdown();
    await waitUntil(() => w.received().length === 2, "the seed's and the front end's signals");
    expect(w.sup.pids()).toHaveLength(3); // both linger; the proxy waits its turn
    w.signals.emit("SIGTERM");
    w.signals.emit("SIGTERM"); // a third signal changes nothing
    await done;
    expect(await w.seed.exited).toBe(137);
    expect(await w.front.exited).toBe(137);
    // Signalled once, with the stop's signal, and given its last chance: it exited by itself.
    expectStopOrder(w.received(), "SIGINT");
    expect(await w.proxy.exited).toBe(0);
    expect(w.logger.lines).toContain("received SIGTERM again: stopping at once; SIGKILL to front end, seed; the proxy gets 600 s to close its audit spool, then SIGKILL");
    expect(w.sup.stopReason).toEqual({ code: 0, why: "SIGINT", signal: "SIGINT" });
    expect(w.logger.lines).toContain("received SIGTERM again; already stopping at once");
  });

  test("a second signal while the proxy drains: it is not signalled again, and SIGKILLed when its last chance ends", async () => {
    const w = await world({ proxy: { linger: true }, stopGraceMs: 600_000, drainGraceMs: 600_000, lastChanceMs: 50 });
    w.signals.emit("SIGTERM");
    const done = w.sup.shutdown();
    await waitUntil(() => w.received().includes("proxy SIGTERM"), "the proxy's signal");
    w.signals.emit("SIGTERM");
    await done;
    expect(await w.proxy.exited).toBe(137);
    expectStopOrder(w.received(), "SIGTERM"); // exactly one SIGTERM each
    expect(w.logger.lines).toContain("proxy still running after its last 0.05 s; SIGKILL");
    expect(w.sup.pids()).toEqual([]);
  });

  test("without a second signal, whoever outlives its grace is SIGKILLed: the stop fits the budget", async () => {
    const w = await world({ front: { ignore: true }, proxy: { ignore: true }, stopGraceMs: 50, drainGraceMs: 50 });
    w.signals.emit("SIGTERM");
    await w.sup.shutdown();
    expect(await w.front.exited).toBe(137);
    expect(await w.proxy.exited).toBe(137);
    expect(await w.seed.exited).toBe(0);
    expect(w.logger.lines).toContain("front end still running after 0.05 s; SIGKILL");
    expect(w.logger.lines).toContain("proxy still running after 0.05 s; SIGKILL");
  });

  test("the platform's stop timeout in docs/deploy.md covers the stop budget, with a margin", () => {
    expect(STOP_BUDGET_MS).toBe(20_000);
    const doc = readFileSync(join(import.meta.dir, "../../docs/deploy.md"), "utf8");
    const settings = [/terminationGracePeriodSeconds: (\d+)/g, /--stop-timeout (\d+)/g, /stop_grace_period: (\d+)s/g].map((re) => [...doc.matchAll(re)].map((m) => Number(m[1])));
    for (const found of settings) {
      expect(found.length).toBeGreaterThan(0);
      for (const seconds of found) expect(seconds * 1000).toBeGreaterThanOrEqual(STOP_BUDGET_MS + 5_000);
    }
  });
});
