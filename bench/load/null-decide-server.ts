// A stand-in for the proxy that answers every POST /v1/tools/decide with a permit at once (no
// policy, no audit, no fsync), on a unix socket given as argv[2]. Run against it, the Python
// load client shows its own floor on this machine: what no proxy can go below or above.
import { rmSync } from "node:fs";

const socket = process.argv[2]!;
rmSync(socket, { force: true });
Bun.serve({
  unix: socket,
  async fetch(req: Request) {
    await req.json();
    return Response.json({ decision: "permit", record_id: "rec_00000000000000000000000000" });
  },
} as unknown as Parameters<typeof Bun.serve>[0]);
console.log("ready");
process.on("SIGTERM", () => process.exit(0));
