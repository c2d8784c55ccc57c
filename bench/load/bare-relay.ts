// The floor of a model-call relay in Bun (issue 34): a Bun.serve on a unix socket that reads
// the request body, fetches the model double with it and returns the upstream's streamed body
// as it is (Bun pipes it natively). No decision, no record, no metering: what any Bun proxy in
// svc's place pays for the hop. `bun bench/load/bare-relay.ts <socket> <upstream url> <ca file>`;
// prints "ready" once listening, serves until SIGTERM.
import { readFileSync, rmSync } from "node:fs";

const [socket, upstream, caFile] = process.argv.slice(2) as [string, string, string];
const ca = [readFileSync(caFile, "utf8")];
rmSync(socket, { force: true });
const server = Bun.serve({
  unix: socket,
  async fetch(req) {
    const body = await req.arrayBuffer();
    const res = await fetch(upstream, { method: "POST", body, headers: { "content-type": "application/json", accept: "text/event-stream" }, tls: { ca } } as RequestInit);
    return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
  },
});
console.log("ready");
process.on("SIGTERM", () => {
  void server.stop(true);
  rmSync(socket, { force: true });
  process.exit(0);
});
