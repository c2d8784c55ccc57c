// MCP straight to a runtime container's gateway, as Open WebUI reaches it: the URL of the `svc`
// tool-server connection svc run seeded into Open WebUI, and a user's own Open WebUI session
// token. For what a chat cannot show (issue 31): a revoked session, which Open WebUI refuses
// before any chat, and a second installation's runtime.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type OwuiUser, owui } from "../support/openwebui.ts";

/** The gateway URL Open WebUI was seeded with (its `svc` connection). */
export async function gatewayUrl(base: string, admin: OwuiUser): Promise<string> {
  const r = await owui(base, "GET", "/api/v1/configs/tool_servers", admin.token);
  const svc = ((r.json?.TOOL_SERVER_CONNECTIONS ?? []) as any[]).find((c) => c?.info?.id === "svc");
  if (!svc) throw new Error(`Open WebUI at ${base} has no svc tool-server connection: ${r.text.slice(0, 500)}`);
  return `${svc.url}${svc.path ?? ""}`;
}

/** An MCP client (the official SDK) on the gateway with this session token. */
export async function gatewayClient(url: string, token: string): Promise<Client> {
  const c = new Client({ name: "e2e", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

/** One MCP `initialize`, raw: the HTTP status and body (a refusal the SDK would only throw on). */
export async function gatewayInitialize(url: string, token: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "e2e", version: "1" } } }),
  });
  return { status: res.status, text: await res.text() };
}

/** The text of an MCP tool result. */
export const resultText = (r: object): string => ((r as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");
