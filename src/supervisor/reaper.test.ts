// The zombie reaper, without being PID 1: this test process becomes a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER), so an orphaned grandchild is re-parented to it, as orphans
// are to PID 1 in the container.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { FFIType, dlopen } from "bun:ffi";
import { existsSync, readFileSync } from "node:fs";
import { silentLogger } from "../log/index.ts";
import { startReaper } from "./reaper.ts";
import { waitUntil } from "./testing.ts";

const PR_SET_CHILD_SUBREAPER = 36;
const libc = dlopen("libc.so.6", { prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
beforeAll(() => expect(libc.symbols.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)).toBe(0));
afterAll(() => libc.symbols.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0));

const state = (pid: number) => (existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ") : null);

/** A grandchild orphaned by its shell, exited and left a zombie of this process. */
async function zombie(): Promise<number> {
  const sh = Bun.spawn(["sh", "-c", "sleep 0.1 & echo $!"], { stdout: "pipe" });
  const pid = Number((await new Response(sh.stdout).text()).trim());
  await sh.exited;
  await waitUntil(() => state(pid)?.[0] === "Z", "the orphan to exit");
  expect(Number(state(pid)![1])).toBe(process.pid); // re-parented to us
  return pid;
}

test("orphans re-parented to the supervisor are reaped; its own children are left to Bun", async () => {
  const pid = await zombie();
  const ours: number[] = [pid];
  const reaper = startReaper(() => ours, silentLogger, true);
  try {
    reaper.reapNow();
    expect(state(pid)?.[0]).toBe("Z"); // listed as ours: not touched
    ours.length = 0;
    reaper.reapNow();
    expect(state(pid)).toBeNull(); // reaped: gone from the process table
  } finally {
    reaper.stop();
  }
});

test("outside PID 1 the reaper is off unless forced", () => {
  const reaper = startReaper(() => [], silentLogger);
  expect(reaper.reapNow()).toBe(0);
  reaper.stop();
});
