// POST /v1/spool/replay on the unix socket (the runtime token alone: not the front end's): what
// `svc proxy spool replay` calls. The records set aside in rejected.jsonl go back into the
// spool (spool-replay.ts) and the shipper is woken to send them. One replay at a time.
import type { Route } from "../api/routes.ts";
import type { Logger } from "../../log/index.ts";
import type { AuditSpool } from "./spool.ts";
import { type ReplayResult, replayRejected } from "./spool-replay.ts";

export const SPOOL_REPLAY_PATH = "/v1/spool/replay";

export function replayRoute(d: { spool: Pick<AuditSpool, "dir" | "appendLine">; wake: () => void; log: Logger }): Route {
  let running: Promise<ReplayResult> | null = null;
  return {
    method: "POST",
    path: SPOOL_REPLAY_PATH,
    // An operator's act (`svc proxy spool replay`), never the front end's.
    runtimeTokenOnly: true,
    handler: async () => {
      running ??= replayRejected(d.spool.dir, async (id, line) => d.spool.appendLine(id, line)).finally(() => (running = null));
      const r = await running;
      d.log.info("set-aside audit records replayed into the spool", { replayed: r.replayed, kept: r.kept });
      d.wake();
      return Response.json(r);
    },
  };
}
