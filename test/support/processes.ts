// Whether a process is still there, for tests that check a child was stopped and reaped.

/** Whether the process exists (a stopped or running one does; a killed and reaped one does not). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
