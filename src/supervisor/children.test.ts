import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TIMEOUT, causeFromTail, signalExitCode, startChild, withTimeout } from "./children.ts";
import { idleChild, lines, waitUntil } from "./testing.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-children-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("children", () => {
  test("stop() sends the signal asked for and resolves with 128 + its number", async () => {
    const log = join(dir, "int.log");
    const child = idleChild("front end", log, dir);
    await waitUntil(() => lines(log).includes("front end ready"));
    expect(await child.stop(10_000, "SIGINT")).toBe(0); // the child's trap exits 0
    expect(lines(log)).toEqual(["front end ready", "front end SIGINT"]);
    const plain = startChild("sleeper", ["sleep", "30"], { env: process.env });
    expect(await plain.stop(10_000)).toBe(signalExitCode("SIGTERM"));
    expect(signalExitCode("SIGTERM")).toBe(143);
  });

  test("a child runs in a session of its own: a terminal's Ctrl-C (SIGINT to our process group) does not reach it", async () => {
    const child = startChild("session", ["sleep", "30"], { env: process.env });
    try {
      const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      const [pgrp, session] = [Number(stat(child.pid)[2]), Number(stat(child.pid)[3])];
      expect(session).toBe(child.pid);
      expect(pgrp).toBe(child.pid);
      expect(pgrp).not.toBe(Number(stat(process.pid)[2]));
    } finally {
      await child.stop(1000);
    }
  });

  test("a child ignoring the signal is killed after the grace", async () => {
    const log = join(dir, "stubborn.log");
    const child = idleChild("stubborn", log, dir, { ignore: true });
    await waitUntil(() => lines(log).includes("stubborn ready"));
    expect(await child.stop(100)).toBe(137);
    expect(child.hasExited()).toBe(true);
  });

  test("stderr is passed through unless asked not to, and its tail kept; stdout can be captured", async () => {
    const child = startChild("seed", ["sh", "-c", 'for i in 1 2 3 4 5; do echo "line $i" >&2; done; echo \'{"ok":true}\''], {
      env: process.env,
      stdout: "capture",
      echoStderr: false,
      tailLines: 3,
    });
    expect(await child.exited).toBe(0);
    await child.outputClosed;
    expect(child.tail()).toEqual(["line 3", "line 4", "line 5"]);
    expect(child.output()).toBe('{"ok":true}\n');
  });

  test("exited comes when the child is gone, though a grandchild still holds its stderr open", async () => {
    const child = startChild("parent", ["sh", "-c", "sleep 30 & echo started >&2; exit 3"], { env: process.env, echoStderr: false });
    try {
      expect(await withTimeout(child.exited, 5000)).toBe(3);
      expect(child.hasExited()).toBe(true);
      expect(await withTimeout(child.outputClosed, 200)).toBe(TIMEOUT); // sleep holds the pipe
      expect(child.tail()).toEqual(["started"]);
    } finally {
      process.kill(-child.pid, "SIGKILL"); // the grandchild, in the child's process group
    }
    await child.outputClosed;
  });

  test("a command that cannot be started throws at once, with nothing left to supervise", () => {
    expect(() => startChild("missing", ["/nonexistent/svc-no-such-command"], { env: process.env })).toThrow("could not be started");
  });

  test("withTimeout", async () => {
    expect(await withTimeout(Promise.resolve(1), 1000)).toBe(1);
    expect(await withTimeout(new Promise(() => {}), 1)).toBe(TIMEOUT);
  });

  test("causeFromTail: the last error line of JSON logs, or the last plain line", () => {
    expect(causeFromTail(['{"level":"info","event":"starting"}', '{"level":"error","event":"bootstrap failed","error":"HTTP 401"}', '{"level":"info","event":"bye"}'])).toBe(
      "bootstrap failed: HTTP 401",
    );
    expect(causeFromTail(["Traceback …", "ValueError: boom"])).toBe("ValueError: boom");
    expect(causeFromTail(['{"level":"info","event":"fine"}'])).toBeUndefined();
  });
});
