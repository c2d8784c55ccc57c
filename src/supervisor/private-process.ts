// Keeps this process's secrets from the other processes of its UID. The front end (Open WebUI)
// runs as the same UID 10001 as the supervisor and the proxy, and a front-end admin can run
// Python inside it (Functions, Tools). Without this, such code reads SVC_RUNTIME_TOKEN and
// CHATUI_SECRET_KEY from /proc/<pid>/environ of `svc run` (PID 1) or `svc proxy serve`, or their
// memory through /proc/<pid>/mem. prctl(PR_SET_DUMPABLE, 0) makes the kernel own those files
// (root:root, and ptrace is refused), so only a process with CAP_SYS_PTRACE can read them; it
// also turns off core dumps. A child's exec resets the flag: Open WebUI itself stays dumpable.
// docs/frontend-boundary.md; measured in test/integration/frontend-boundary.test.ts.
import { FFIType, dlopen } from "bun:ffi";

const PR_GET_DUMPABLE = 3;
const PR_SET_DUMPABLE = 4;

/** null when the process is now private; otherwise why not (the caller logs it as a warning). */
export function keepProcessPrivate(): string | null {
  if (process.platform !== "linux") return `not Linux (${process.platform})`;
  let libc;
  try {
    libc = dlopen("libc.so.6", { prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
  } catch (e) {
    return `libc.so.6 could not be loaded (${(e as Error).message})`;
  }
  try {
    if (libc.symbols.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) !== 0) return "prctl(PR_SET_DUMPABLE, 0) failed";
    const now = libc.symbols.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    return now === 0 ? null : `prctl(PR_GET_DUMPABLE) still says ${now}`;
  } finally {
    libc.close();
  }
}

/** The warning logged when a process could not be made private. */
export function notPrivateWarning(who: string, why: string): string {
  return `${who}: its environment and memory stay readable to the front end (same UID): ${why}`;
}
