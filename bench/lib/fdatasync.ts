// The machine's own fdatasync, measured the way the proxy's spool pays it (issue 34): a
// segment zero-filled and synced ahead of time (spool-spare.ts), then a ~1 KB record written in
// place and fdatasync'ed, `n` times, on the file system of `dir` (the bench's state root, where
// the proxy's spool lives). The median is the floor a durable decision adds to a policy check.
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { summarize } from "./stats.ts";

export function measureFdatasync(dir: string, n = 200): ReturnType<typeof summarize> {
  const file = join(dir, `fdatasync-probe-${process.pid}`);
  const record = Buffer.alloc(1024, 0x61);
  const fd = openSync(file, "w");
  try {
    writeSync(fd, Buffer.alloc(n * record.length), 0, n * record.length, 0);
    fdatasyncSync(fd);
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      writeSync(fd, record, 0, record.length, i * record.length);
      const t = performance.now();
      fdatasyncSync(fd);
      ms.push(performance.now() - t);
    }
    return summarize(ms);
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
}
