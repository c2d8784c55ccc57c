// The zombie reaper outside PID 1 (as svc run is under docker run --init, or run by hand):
// it makes this test process a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so an orphaned
// grandchild is re-parented to it, as orphans are to PID 1 in the container, and reaped.
import { expect, test } from "bun:test";
import { FFIType, dlopen, ptr } from "bun:ffi";
import { existsSync, readFileSync } from "node:fs";
import { silentLogger } from "../log/index.ts";
import { startReaper } from "./reaper.ts";
import { waitUntil } from "./testing.ts";

const PR_GET_CHILD_SUBREAPER = 37;
const libc = dlopen("libc.so.6", { prctl: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
function isSubreaper(): boolean {
  const out = new Int32Array(1);
  expect(libc.symbols.prctl(PR_GET_CHILD_SUBREAPER, ptr(out), 0, 0, 0)).toBe(0);
  return out[0] !== 0;
}

const state = (pid: number) => (existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ") : null);

/**
 * A grandchild orphaned by its shell, then killed and left a zombie of this process. It is
 * listed in `ours` before it dies, so the reaper's own timer leaves it for the test to see.
 */
async function zombie(ours: number[]): Promise<number> {
  const sh = Bun.spawn(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], { stdout: "pipe" });
  const pid = Number((await new Response(sh.stdout).text()).trim());
  await sh.exited;
  await waitUntil(() => Number(state(pid)?.[1]) === process.pid, "the orphan to be re-parented to us");
  ours.push(pid);
  process.kill(pid, "SIGKILL");
  await waitUntil(() => state(pid)?.[0] === "Z", "the orphan to exit");
  return pid;
}

test("outside PID 1 the reaper makes svc a child subreaper: orphans re-parented to it are reaped, its own children left to Bun", async () => {
  expect(process.pid).not.toBe(1);
  expect(isSubreaper()).toBe(false);
  const ours: number[] = [];
  const reaper = startReaper(() => ours, silentLogger);
  try {
    expect(reaper.mode).toBe("subreaper");
    expect(isSubreaper()).toBe(true);
    const pid = await zombie(ours);
    reaper.reapNow();
    expect(state(pid)?.[0]).toBe("Z"); // listed as ours: not touched
    ours.length = 0;
    reaper.reapNow();
    expect(state(pid)).toBeNull(); // reaped: gone from the process table
  } finally {
    reaper.stop();
  }
  expect(isSubreaper()).toBe(false); // stop() gives orphans back to the next reaper up
});
