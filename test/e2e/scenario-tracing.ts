// Scenario 20 (issue 35): one chat turn, one trace. Registered by governed-chat.test.ts (it
// shares that file's world, and runs before scenario 9 stops it):
//   bun test --timeout 600000 test/e2e -t "scenario 20"
// A second replica of the installation boots with tracing on everywhere: the real Open WebUI
// with its own ENABLE_OTEL (gRPC exporter), svc's proxy (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// and an MCP server (the Python SDK's MCPServer with the OpenTelemetry SDK), all exporting to one
// real OpenTelemetry Collector (scripts/otelcol.sh). Alice's one turn calls a pack tool and an
// MCP tool; the Collector passes on ONE trace holding Open WebUI's spans, svc's decision and
// fsync spans for both calls, and the MCP server's span, each linked to its parent.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { api, org } from "../integration/cli-support.ts";
import { freePort, waitFor } from "../support/controlplane-process.ts";
import { startNotesServer } from "../support/mcp/servers.ts";
import { type OtlpSpan, startCollector } from "../support/otel-collector.ts";
import { addUser, chatTurn, signIn } from "../support/openwebui.ts";
import { toolOutputs } from "./chat-helpers.ts";
import {
  ADMIN,
  ALICE,
  MODEL,
  MODEL_API_KEY,
  type Container,
  bundleApplied,
  containerEnv,
  freshStateDir,
  linked,
  modelProfileCreateArgs,
  policyCreateArgs,
  startContainer,
  stopContainer,
} from "./world.ts";

async function serverState(stateDir: string, token: string, name: string): Promise<string | null> {
  const res = await fetch("http://svc-proxy/v1/policy", { unix: join(stateDir, "proxy.sock"), headers: { authorization: `Bearer ${token}` } } as RequestInit);
  const j = (await res.json()) as { tool_servers?: { name: string; state: string }[] };
  return (j.tool_servers ?? []).find((t) => t.name === name)?.state ?? null;
}

export function tracingScenario(): void {
  describe("scenario 20: one chat turn, one trace (issue 35)", () => {
    test("Open WebUI's spans, svc's decisions and fsyncs for a pack tool and an MCP tool, and the MCP server's span, in one trace through a real Collector", async () => {
      const w = await linked();
      const collector = await startCollector();
      const notes = await startNotesServer({ otlp: `${collector.httpEndpoint}/v1/traces` });
      let c: Container | null = null;
      let reassigned = false;
      try {
        expect((await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "traced", workspace: "default", transport: "http", url: notes.url })).status).toBe(201);
        expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/traced/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
        expect((await w.cli(policyCreateArgs({ name: "traced-lookup", src: `user:${w.aliceUserId}`, dst: "tool:traced.lookup" }))).code).toBe(0);
        // Open WebUI's exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (gRPC); svc's proxy the traces endpoint, which comes first for it.
        const otel = {
          ENABLE_OTEL: "true",
          ENABLE_OTEL_TRACES: "true",
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint,
          OTEL_EXPORTER_OTLP_INSECURE: "true",
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.httpEndpoint}/v1/traces`,
        };
        c = startContainer(containerEnv({ token: w.runtimeToken, stateDir: freshStateDir(), port: freePort(), extra: otel }));
        const traced = c;
        await waitFor(
          () => {
            if (traced.proc.exitCode !== null) throw new Error(`the traced container exited: ${traced.stderr().slice(-3000)}`);
            return traced.stderr().includes("svc functions seeded");
          },
          "the traced container to boot and seed its Open WebUI",
          240_000,
        );
        const admin = await signIn(traced.url, ADMIN.email, ADMIN.password);
        const alice = await addUser(traced.url, admin, ALICE);
        expect((await api(w.cp, "POST", org(w.cp, `/users/${w.aliceUserId}/remote-identities`), { platform: "chatui", remote_user_id: alice.id })).status).toBeLessThan(300);
        // The profile's API key is sealed to the runtimes registered when it was made: one made now
        // (same endpoint, model and key) is sealed to the new replica too.
        const made = await w.cli(modelProfileCreateArgs("E2E model (traced)", ["--json"]), `${MODEL_API_KEY}\n`);
        expect(made.code).toBe(0);
        expect((await w.cli(["model-profiles", "assign", JSON.parse(made.stdout).id, "--workspace", "default", "--agent", w.agentId])).code).toBe(0);
        reassigned = true;
        await waitFor(async () => (await serverState(traced.stateDir, w.runtimeToken, "traced")) === "ok", "the traced runtime to reach the MCP server", 90_000);
        await waitFor(
          async () => (await api(w.cp, "GET", "/runtime/policy-bundle?version=1", undefined, w.runtimeToken)).json.tools.some((t: any) => t.name === "traced.lookup"),
          "traced.lookup registered",
          60_000,
        );
        await bundleApplied({ stateDir: traced.stateDir, token: w.runtimeToken });

        // One turn: the model calls the pack tool, then (its result seen) the MCP tool, then answers.
        w.model.respond = (body) => {
          const results = (body?.messages ?? []).filter((m: any) => m.role === "tool").length;
          if (results === 0) return { toolCall: { id: "call_pack", name: "lookup_customer", arguments: JSON.stringify({ customer_id: "c-1" }) } };
          if (results === 1) return { toolCall: { id: "call_mcp", name: "svc_traced.lookup", arguments: JSON.stringify({ term: "invoices" }) } };
          return { text: "Both tools answered." };
        };
        const turn = await chatTurn(traced.url, alice, { model: MODEL, content: "Who is c-1, and what do the notes say about invoices?", toolIds: ["acme_crm", "server:mcp:svc"] });
        if (toolOutputs(turn.message).length !== 2)
          throw new Error(
            `the turn did not call both tools: ${JSON.stringify(turn.message).slice(0, 3000)}\n--- model requests: ${w.model.requests.length}, last: ${JSON.stringify(w.model.requests.at(-1)?.body ?? null).slice(0, 1500)}\n--- traced container (tail) ---\n${traced.stderr().slice(-6000)}`,
          );
        expect(toolOutputs(turn.message)).toEqual(["Ada Lovelace <ada@example.com>", expect.stringContaining("note about invoices")]);

        // The MCP server's span names the trace; everything else must be in it.
        const inTrace = (spans: OtlpSpan[]) => {
          const server = spans.find((s) => s.service === "notes-mcp" && s.name === "tools/call lookup");
          return server ? spans.filter((s) => s.traceId === server.traceId) : [];
        };
        // (complete: Open WebUI's spans and both calls' fsyncs there, and every parent exported)
        const all = await collector.waitFor(
          (s) => {
            const t = inTrace(s);
            const ids = new Set(t.map((x) => x.spanId));
            return (
              t.some((x) => x.service === "open-webui") && t.filter((x) => x.name === "svc.audit.spool_write").length >= 2 && t.filter((x) => !x.parentSpanId || !ids.has(x.parentSpanId)).length === 1
            );
          },
          "one trace with Open WebUI's, svc's and the MCP server's spans",
          60_000,
        );
        const trace = inTrace(all);
        const byId = new Map(trace.map((s) => [s.spanId, s]));
        const one = (service: string, name: string) => {
          const hit = trace.filter((s) => s.service === service && s.name === name);
          expect(
            hit.map((s) => `${s.service}:${s.name}`),
            `${service}:${name} in ${trace.map((s) => `${s.service}:${s.name}`).join(", ")}`,
          ).toHaveLength(1);
          return hit[0]!;
        };
        // the pack tool: the governor's span in Open WebUI, svc's decision under it, with its fsync
        const packSpan = one("open-webui", "execute_tool crm.lookup_customer");
        const packDecision = one("svc-proxy", "svc.tool_decision");
        expect(packDecision.parentSpanId).toBe(packSpan.spanId);
        // the MCP tool: Open WebUI's MCP client span → svc's call → svc's upstream call → the server's span
        const mcpCall = one("svc-proxy", "tools/call traced.lookup");
        expect(byId.get(mcpCall.parentSpanId!)?.service).toBe("open-webui");
        const upstream = one("svc-proxy", "tools/call lookup");
        expect(upstream.parentSpanId).toBe(mcpCall.spanId);
        expect(one("notes-mcp", "tools/call lookup").parentSpanId).toBe(upstream.spanId);
        // svc's decision and its record's fsync for each of the two calls
        const decisions = trace.filter((s) => s.name === "svc.decision");
        const writes = trace.filter((s) => s.name === "svc.audit.spool_write");
        for (const parent of [packDecision, mcpCall]) {
          expect(decisions.some((d) => d.parentSpanId === parent.spanId && d.attributes["svc.decision"] === "permit")).toBe(true);
          expect(writes.some((d) => d.parentSpanId === parent.spanId && typeof d.attributes["svc.record.id"] === "string")).toBe(true);
        }
        // Every span but the root has its parent in the trace: nothing dangles.
        const roots = trace.filter((s) => !s.parentSpanId || !byId.has(s.parentSpanId));
        expect(roots.map((s) => s.service)).toEqual(["open-webui"]);
        expect(JSON.stringify(trace.filter((s) => s.service !== "open-webui"))).not.toContain("c-1"); // no argument in svc's or the server's spans
      } finally {
        if (reassigned) await w.cli(["model-profiles", "assign", w.profileId, "--workspace", "default", "--agent", w.agentId]);
        if (c) await stopContainer(c);
        await notes.stop();
        await collector.stop();
      }
    }, 900_000);
  });
}
