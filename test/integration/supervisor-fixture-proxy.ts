// A stand-in for `svc proxy serve` in supervisor tests: serves /readyz and /v1/models on the
// unix socket. FAKE_PROXY_MODE: ready (default) | fail (logs a bootstrap error, exits 3) |
// never (503 forever). Writes its pid to FAKE_PROXY_PIDFILE; on SIGTERM writes "drained" to
// FAKE_PROXY_DRAINFILE (standing in for the audit-spool drain) and exits.
import { appendFileSync, rmSync, writeFileSync } from "node:fs";

const socket = process.env.SVC_RUNTIME_SOCKET_PATH!;
const mode = process.env.FAKE_PROXY_MODE ?? "ready";
if (process.env.FAKE_PROXY_PIDFILE) writeFileSync(process.env.FAKE_PROXY_PIDFILE, String(process.pid));
if (mode === "fail") {
  process.stderr.write(`${JSON.stringify({ level: "error", component: "proxy", event: "bootstrap failed", error: "HTTP 401 from the control plane: runtime token rejected" })}\n`);
  process.exit(3);
}
rmSync(socket, { force: true });
const server = Bun.serve({
  unix: socket,
  async fetch(req) {
    const path = new URL(req.url).pathname;
    const log = (entry: unknown) => process.env.FAKE_PROXY_CHATLOG && appendFileSync(process.env.FAKE_PROXY_CHATLOG, `${JSON.stringify(entry)}\n`);
    if (path === "/v1/tools/decide" && req.method === "POST") {
      const body = (await req.json()) as { tool: string };
      log({ decide: body });
      return Response.json({ decision: "permit", record_id: "rec_fake" });
    }
    if (path === "/v1/tools/outcome" && req.method === "POST") {
      log({ outcome: await req.json() });
      return new Response(null, { status: 204 });
    }
    if (path === "/readyz") return mode === "never" ? Response.json({ reason: "waiting for the first bundle" }, { status: 503 }) : Response.json({ state: "ready" });
    if (path === "/v1/mcp/tools") return Response.json({ tools: [], servers: [] });
    if (path === "/v1/mcp/booted") return Response.json({ ok: true });
    if (path === "/v1/models") return Response.json({ object: "list", data: [{ id: "fake-model", object: "model" }] });
    if (path === "/v1/chat/completions" && req.method === "POST") {
      if (process.env.FAKE_PROXY_CHATLOG) {
        const h = Object.fromEntries(["authorization", "x-svc-user-id", "x-svc-user-email", "x-svc-user-name"].map((k) => [k, req.headers.get(k)]));
        appendFileSync(process.env.FAKE_PROXY_CHATLOG, `${JSON.stringify(h)}\n`);
      }
      const body = (await req.json()) as { tools?: { function: { name: string } }[]; messages: { role: string }[] };
      log({ chat: { tools: body.tools?.map((t) => t.function.name) ?? [], last: body.messages.at(-1)?.role } });
      if (body.tools?.some((t) => t.function.name === "lookup_customer") && body.messages.at(-1)?.role !== "tool") {
        const call = {
          id: "c2",
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "lookup_customer", arguments: JSON.stringify({ customer_id: "c-1" }) } }] } }],
        };
        return new Response(`data: ${JSON.stringify(call)}\n\ndata: [DONE]\n\n`, { headers: { "content-type": "text/event-stream" } });
      }
      const chunk = (content: string) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }] })}\n\n`;
      return new Response(`${chunk("Hello from ")}${chunk("the fake proxy")}data: [DONE]\n\n`, { headers: { "content-type": "text/event-stream" } });
    }
    return new Response("not found", { status: 404 });
  },
});
process.on("SIGTERM", () => {
  if (process.env.FAKE_PROXY_DRAINFILE) writeFileSync(process.env.FAKE_PROXY_DRAINFILE, "drained");
  void server.stop(true);
  process.exit(0);
});
