// What the end-to-end scenarios ask of a chat and of the runtime: the model double's tool
// call, what Open WebUI stored of a turn, what the model was offered, and an MCP server served.
import { join } from "node:path";
import { api } from "../integration/cli-support.ts";
import { waitFor } from "../support/controlplane-process.ts";
import { bundleApplied, world } from "./world.ts";

/** The model answers with a call of `tool` first, then (seeing the tool's result) with text. */
export function modelCallsTool(tool: string, args: Record<string, unknown>): void {
  world().model.respond = (body) => {
    const last = body?.messages?.at(-1);
    if (last?.role === "tool") return { text: `The tool said: ${last.content}` };
    return { toolCall: { id: `call_${tool}`, name: tool, arguments: JSON.stringify(args) } };
  };
}

/** The text of the tool result(s) Open WebUI stored in an assistant message. */
export function toolOutputs(message: any): string[] {
  return (message?.output ?? [])
    .filter((o: any) => o.type === "function_call_output")
    .map((o: any) => (Array.isArray(o.output) ? o.output.map((p: any) => p.text ?? "").join("") : String(o.output ?? "")));
}

/** The status Open WebUI gave each tool call's output (completed, or failed: a red cross, not a green check). */
export function toolStatuses(message: any): string[] {
  return (message?.output ?? []).filter((o: any) => o.type === "function_call_output").map((o: any) => String(o.status));
}

/** The refusal text of a failed call's output: svc's guard returns {"error": <text>}. */
export const failedText = (output: string | undefined): string => String((JSON.parse(output ?? "null") as { error?: unknown } | null)?.error);

export const ids = (records: any[]) => new Set(records.map((r) => r.id));

/** The error text Open WebUI stored on an assistant message (a Pipe or filter exception). */
export function errorText(message: any): string {
  const e = message?.error;
  const c = e?.content ?? e;
  return String(typeof c === "string" ? c : (c?.detail ?? c?.message ?? JSON.stringify(c ?? null)));
}

/** The names of the tools a model request offered. */
export const offered = (request: any) => (request?.body?.tools ?? []).map((t: any) => t.function?.name).sort();

/** Waits until the proxy reached MCP server `name`, registered `<name>.<tool>` and applies that bundle. */
export async function toolServerServed(name: string, tool = "lookup"): Promise<void> {
  const w = world();
  const sock = join(w.container!.stateDir, "proxy.sock");
  await waitFor(
    async () => {
      const res = await fetch("http://svc-proxy/v1/policy", { unix: sock, headers: { authorization: `Bearer ${w.runtimeToken}` } } as RequestInit);
      const j = (await res.json()) as { tool_servers?: { name: string; state: string }[] };
      return (j.tool_servers ?? []).some((t) => t.name === name && t.state === "ok");
    },
    `the proxy to reach the ${name} server`,
    60_000,
  );
  await waitFor(
    async () => (await api(w.cp, "GET", "/runtime/policy-bundle?version=1", undefined, w.runtimeToken)).json.tools.some((t: any) => t.name === `${name}.${tool}`),
    `${name}.${tool} registered`,
    60_000,
  );
  await bundleApplied();
}
