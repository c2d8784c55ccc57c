// Zombie reaping: processes orphaned by the front end (uvicorn workers, subprocesses of tools)
// are re-parented to PID 1 and must be waited for, or they stay zombies. As the container's
// PID 1, svc run gets them anyway. When it is not PID 1 (docker run --init, a shared PID
// namespace, a local run), it makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER,
// Linux ≥ 3.4), so orphans below it are re-parented to it rather than to an init that may
// never wait for them. Bun reaps its own children; this reaps only the others: it peeks at
// the next exited child with waitid(WNOWAIT) and waits for it only when it is not one of ours.
// libc is reached through bun:ffi (two symbols); without it, a warning and no reaping.
import type { Logger } from "../log/index.ts";

const P_ALL = 0;
const P_PID = 1;
const WEXITED = 4;
const WNOHANG = 1;
const WNOWAIT = 0x01000000;
const SI_PID_OFFSET = 16; // siginfo_t.si_pid on x86-64 and aarch64 Linux
const PR_SET_CHILD_SUBREAPER = 36;
const INTERVAL_MS = 1000;
export const NO_REAPING = "orphaned processes are not reaped";
const INIT_HINT = "run the container with an init (docker run --init, or tini as the ENTRYPOINT before svc run)";

export type Reaper = {
  stop(): void;
  reapNow(): number;
  /** How orphans reach this process: as PID 1, as a child subreaper, or not at all. */
  mode: "pid1" | "subreaper" | "off";
};

type Libc = {
  waitid(idtype: number, id: number, info: Uint8Array, options: number): number;
  prctl(option: number, arg: number): number;
};

function openLibc(): Libc {
  const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
  const lib = dlopen("libc.so.6", {
    waitid: { args: [FFIType.i32, FFIType.u32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
  });
  return {
    waitid: (a, b, c, d) => lib.symbols.waitid(a, b, c, d) as number,
    prctl: (option, arg) => lib.symbols.prctl(option, arg, 0, 0, 0) as number,
  };
}

const OFF: Reaper = { stop() {}, reapNow: () => 0, mode: "off" };

export function startReaper(ours: () => number[], log: Logger): Reaper {
  if (process.platform !== "linux") return OFF;
  let libc: Libc;
  try {
    libc = openLibc();
  } catch (e) {
    log.warn(`${NO_REAPING}: libc is not reachable (${(e as Error).message}); ${INIT_HINT}`);
    return OFF;
  }
  const mode = process.pid === 1 ? "pid1" : "subreaper";
  if (mode === "subreaper" && libc.prctl(PR_SET_CHILD_SUBREAPER, 1) !== 0) {
    log.warn(`${NO_REAPING}: svc run is not PID 1 and could not become a child subreaper; ${INIT_HINT}`);
    return OFF;
  }
  const info = new Uint8Array(128);
  const view = new DataView(info.buffer);
  const reapNow = () => {
    let reaped = 0;
    for (let i = 0; i < 1000; i++) {
      info.fill(0);
      if (libc.waitid(P_ALL, 0, info, WEXITED | WNOHANG | WNOWAIT) !== 0) break;
      const pid = view.getInt32(SI_PID_OFFSET, true);
      if (pid === 0 || ours().includes(pid)) break; // nothing exited, or Bun will reap it
      info.fill(0);
      if (libc.waitid(P_PID, pid, info, WEXITED | WNOHANG) !== 0) break;
      reaped++;
    }
    return reaped;
  };
  const timer = setInterval(reapNow, INTERVAL_MS);
  return {
    mode,
    reapNow,
    // Orphans already re-parented stay this process's children; new ones go elsewhere again.
    stop() {
      clearInterval(timer);
      if (mode === "subreaper") libc.prctl(PR_SET_CHILD_SUBREAPER, 0);
    },
  };
}
