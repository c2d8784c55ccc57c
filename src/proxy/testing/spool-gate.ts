// Holds a spool's start-up indexing (spool.ts load) at a point a test chooses, with nothing but
// files: an empty segment after the backlog's last one, whose acknowledgement file is a named
// pipe. The load indexes every earlier segment, then waits on the pipe (in the thread pool:
// the proxy goes on deciding and answering) until release() writes nothing and closes it.
// Works on a spool of this process or of a proxy process (the integration tests).
import { closeSync, constants, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SEGMENT_FILE, segName } from "../audit/spool-files.ts";

export type SpoolGate = { release(): Promise<void> };

export function gateSpoolIndexing(dir: string): SpoolGate {
  const seqs = readdirSync(dir).flatMap((n) => {
    const m = SEGMENT_FILE.exec(n);
    return m ? [Number(m[1])] : [];
  });
  const seq = Math.max(0, ...seqs) + 1;
  writeFileSync(join(dir, segName(seq, "jsonl")), "");
  const fifo = join(dir, segName(seq, "acked"));
  const made = Bun.spawnSync(["mkfifo", "-m", "600", fifo]);
  if (made.exitCode !== 0) throw new Error(`mkfifo ${fifo}: ${made.stderr.toString()}`);
  return {
    async release() {
      // The writer's end opens only once the load has opened the reader's (ENXIO before).
      for (let i = 0; ; i++) {
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENXIO" || i > 2000) throw e;
          await Bun.sleep(5);
        }
      }
      rmSync(fifo, { force: true }); // the empty segment is dropped with it; nothing reads the pipe again
    },
  };
}
