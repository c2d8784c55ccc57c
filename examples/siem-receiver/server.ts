// A SIEM receiver to try a sink on your own machine (docs/siem.md "Try it in the demo"): it
// takes the webhook sink's Splunk-HEC lines on http://127.0.0.1:<port>/hec, checks each
// batch's X-Svc-Signature (HMAC-SHA256 of the exact body under the sink's secret, compared in
// constant time) before reading it, and prints one line per audit record. Not for production:
// a real SIEM stores what it receives.
//   SIEM_SECRET=<the sink's secret, 16+ characters> bun examples/siem-receiver/server.ts [port]
import { createHmac, timingSafeEqual } from "node:crypto";

const secret = process.env.SIEM_SECRET ?? "";
if (secret.length < 16) {
  console.error("siem-receiver: set SIEM_SECRET to the sink's secret (16+ characters), the one you give `svc audit sinks create --secret-stdin`");
  process.exit(2);
}
const port = Number(process.argv[2] ?? process.env.SIEM_PORT ?? 8088);

/** True when `header` is `sha256=<hex>` of the body under the secret. */
function signed(body: Uint8Array, header: string | null, key: string): boolean {
  const want = Buffer.from(`sha256=${createHmac("sha256", key).update(body).digest("hex")}`);
  const got = Buffer.from(header ?? "");
  return got.length === want.length && timingSafeEqual(got, want);
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(req) {
    if (req.method !== "POST" || new URL(req.url).pathname !== "/hec") return new Response("POST /hec\n", { status: 404 });
    const body = new Uint8Array(await req.arrayBuffer());
    if (!signed(body, req.headers.get("x-svc-signature"), secret)) {
      console.log("refused a batch: its signature does not match SIEM_SECRET");
      return new Response("bad signature\n", { status: 401 });
    }
    for (const line of new TextDecoder().decode(body).split("\n")) {
      if (!line.trim()) continue;
      const e = (JSON.parse(line) as { event: Record<string, any> }).event;
      const who = e.subject?.email ?? e.subject?.user_id ?? "via installation";
      console.log(`${e.ts}  ${e.id}  ${String(e.kind).padEnd(7)} ${String(e.tool_name ?? e.model ?? e.action).padEnd(24)} ${String(e.decision).padEnd(6)} ${e.reason}  ${who}`);
    }
    return new Response(null, { status: 204 });
  },
});
console.log(`siem-receiver: listening on http://127.0.0.1:${server.port}/hec (Ctrl-C stops it)`);
