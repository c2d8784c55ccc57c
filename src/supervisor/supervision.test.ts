import { afterAll, describe, expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import { Stopped, Supervision } from "./supervision.ts";
import { idleChild, lines, waitUntil } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "svc-supervision-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

function capture(): Logger & { lines: string[] } {
  const out: string[] = [];
  const push = (e: string) => void out.push(e);
  return { lines: out, info: push, warn: push, error: push };
}

/** A supervision with a proxy (draining), a front end and a seed, each recording its signals. */
async function world() {
  const log = join(root, `signals-${n++}.log`);
  const signals = new EventEmitter();
  const logger = capture();
  const sup = new Supervision({ log: logger, signals, stopGraceMs: 10_000, drainGraceMs: 10_000 });
  const start = (name: string, drains = false) => idleChild(name, log, root, { start: (nm, argv, o) => sup.start(nm, argv, { ...o, drains }) });
  const proxy = start("proxy", true);
  const front = start("front end");
  const seed = start("seed");
  await waitUntil(() => ["proxy", "front end", "seed"].every((c) => lines(log).includes(`${c} ready`)), "the children");
  return { sup, signals, log, logger, proxy, front, seed, received: () => lines(log).filter((l) => !l.endsWith(" ready")) };
}

describe("supervision", () => {
  test("SIGTERM is forwarded to every child: the newest first, the draining proxy last", async () => {
    const w = await world();
    w.signals.emit("SIGTERM");
    await w.sup.stopped;
    expect(w.sup.stopReason).toEqual({ code: 0, why: "SIGTERM", signal: "SIGTERM" });
    await w.sup.shutdown();
    expect(w.received()).toEqual(["seed SIGTERM", "front end SIGTERM", "proxy SIGTERM"]);
    for (const c of [w.proxy, w.front, w.seed]) expect(c.hasExited()).toBe(true);
    expect(w.signals.listenerCount("SIGTERM") + w.signals.listenerCount("SIGINT")).toBe(0);
  });

  test("SIGINT is forwarded as SIGINT", async () => {
    const w = await world();
    w.signals.emit("SIGINT");
    await w.sup.shutdown();
    expect(w.received()).toEqual(["seed SIGINT", "front end SIGINT", "proxy SIGINT"]);
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
    expect(w.received()).toEqual(["seed SIGTERM", "proxy SIGTERM"]);
  });

  test("an unwatched child (the seed) may exit without stopping anything", async () => {
    const w = await world();
    w.sup.watch(w.proxy);
    await w.seed.stop(10_000);
    expect(w.sup.stopReason).toBeNull();
    w.signals.emit("SIGTERM");
    await w.sup.shutdown();
    expect(w.received()).toEqual(["seed SIGTERM", "front end SIGTERM", "proxy SIGTERM"]);
  });

  test("guard() rejects once a stop is requested, and nothing starts afterwards", async () => {
    const w = await world();
    const pending = w.sup.guard(new Promise(() => {}));
    w.sup.requestStop(1, "start failure");
    await expect(pending).rejects.toBeInstanceOf(Stopped);
    expect(() => w.sup.start("late", ["true"], { env: {} })).toThrow(Stopped);
    w.signals.emit("SIGTERM"); // a signal while stopping changes nothing
    expect(w.sup.stopReason).toEqual({ code: 1, why: "start failure" });
    await w.sup.shutdown();
    expect(w.received()).toEqual(["seed SIGTERM", "front end SIGTERM", "proxy SIGTERM"]);
    expect(w.sup.pids()).toEqual([]);
  });
});
