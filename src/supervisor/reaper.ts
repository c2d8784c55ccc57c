// Zombie reaping when svc is PID 1: processes orphaned by the front end (uvicorn workers,
// subprocesses of tools) are re-parented to PID 1 and must be waited for, or they stay
// zombies. Bun reaps its own children; this reaps only the others: it peeks at the next
// exited child with waitid(WNOWAIT) and waits for it only when it is not one of ours.
import type { Logger } from "../log/index.ts";

const P_ALL = 0;
const P_PID = 1;
const WEXITED = 4;
const WNOHANG = 1;
const WNOWAIT = 0x01000000;
const SI_PID_OFFSET = 16; // siginfo_t.si_pid on x86-64 and aarch64 Linux
const INTERVAL_MS = 1000;

export type Reaper = { stop(): void; reapNow(): number };

export function startReaper(ours: () => number[], log: Logger, force = false): Reaper {
  if ((process.pid !== 1 && !force) || process.platform !== "linux") return { stop() {}, reapNow: () => 0 };
  let waitid: (idtype: number, id: number, info: Uint8Array, options: number) => number;
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const lib = dlopen("libc.so.6", { waitid: { args: [FFIType.i32, FFIType.u32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 } });
    waitid = (a, b, c, d) => lib.symbols.waitid(a, b, c, d) as number;
  } catch (e) {
    log.warn("zombie reaping unavailable", { error: (e as Error).message });
    return { stop() {}, reapNow: () => 0 };
  }
  const info = new Uint8Array(128);
  const view = new DataView(info.buffer);
  const reapNow = () => {
    let reaped = 0;
    for (let i = 0; i < 1000; i++) {
      info.fill(0);
      if (waitid(P_ALL, 0, info, WEXITED | WNOHANG | WNOWAIT) !== 0) break;
      const pid = view.getInt32(SI_PID_OFFSET, true);
      if (pid === 0 || ours().includes(pid)) break; // nothing exited, or Bun will reap it
      info.fill(0);
      if (waitid(P_PID, pid, info, WEXITED | WNOHANG) !== 0) break;
      reaped++;
    }
    return reaped;
  };
  const timer = setInterval(reapNow, INTERVAL_MS);
  return {
    stop: () => clearInterval(timer),
    reapNow,
  };
}
