// Scenario 19 (issue 32): per-user OAuth to an MCP server, from a real Open WebUI. Registered by
// governed-chat.test.ts (it shares that file's world, and runs before scenario 9 stops it):
//   bun test --timeout 600000 test/e2e -t "scenario 19"
// A real authorization server (oidc-provider over https) and a real MCP resource server (the
// Python SDK's MCPServer over https, verifying each JWT access token and echoing its subject).
// Alice's first call is refused with identity.consent_required and the consent link reaches her
// own browser session alone (Open WebUI's elicitation dialog); Chromium follows it (svc's page
// names her, its Continue button goes on) and signs in at the provider; her next call in chat
// succeeds as her account there.
import { describe, expect, test } from "bun:test";
import { chromium } from "playwright-core";
import { api, org } from "../integration/cli-support.ts";
import { freePort, waitFor } from "../support/controlplane-process.ts";
import { consentAtProvider, startOAuthNotesServer, startOAuthServer } from "../support/oauth-server.ts";
import { chatTurn, listenSocket } from "../support/openwebui.ts";
import { ids, modelCallsTool, toolOutputs, toolServerServed } from "./chat-helpers.ts";
import { ALICE, MODEL, auditRecord, auditRecords, linked, policyCreateArgs } from "./world.ts";

const CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage"];

/**
 * Follows a consent link in Chromium: svc's page (its text is `shown`), its Continue button,
 * then the provider's own pages, signed in as `login`; `done` is the page svc ends on.
 */
async function consentInBrowser(url: string, issuer: string, cpUrl: string, login: string): Promise<{ shown: string; done: string }> {
  const browser = await chromium.launch({ executablePath: process.env.SVC_CHROMIUM ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    return await consentAtProvider(await context.newPage(), url, { issuer, returnOrigin: cpUrl, login });
  } finally {
    await browser.close();
  }
}

export function mcpOauthScenario(): void {
  describe("scenario 19: per-user OAuth to an MCP server (issue 32)", () => {
    test("Alice's first call is refused with identity.consent_required; the consent link reaches her session alone; Chromium consents at the provider; her next call runs as her", async () => {
      const w = await linked();
      const url = w.container!.url;
      const port = freePort();
      // the provider says who signed in (an email claim): svc refuses a consent signed in as another person than the link's user
      const as = await startOAuthServer({ resource: `https://127.0.0.1:${port}/mcp`, emails: { "alice-at-idp": ALICE.email } });
      const rs = await startOAuthNotesServer(port, as.issuer);
      const aliceSocket = await listenSocket(url, w.alice);
      const bobSocket = await listenSocket(url, w.bob);
      try {
        const created = await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "onotes", workspace: "default", transport: "http", url: rs.url, auth: "oauth" });
        expect(created.status).toBe(201);
        expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/onotes/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
        // the admin connects the listing grant (CLI: svc tool-servers tokens connect) so the runtime can list the tools
        const connect = await w.cli(["tool-servers", "tokens", "connect", "onotes", "--workspace", "default", "--json"]);
        expect(connect.code).toBe(0);
        expect((await consentInBrowser(JSON.parse(connect.stdout).url, as.issuer, w.cp.url, "svc-lister")).done).toContain("Tool connected");
        await toolServerServed("onotes", "whoami");
        expect((await w.cli(policyCreateArgs({ name: "onotes-alice", src: `user:${w.aliceUserId}`, dst: "tool:onotes.whoami" }))).code).toBe(0);
        await toolServerServed("onotes", "whoami");
        const seen = ids(await auditRecords({ tool: "onotes.whoami" }));

        // first call: refused, the server never sees it, the link goes to Alice's own session
        modelCallsTool("svc_onotes.whoami", {});
        const first = await chatTurn(url, w.alice, { model: MODEL, content: "Who am I at the notes server?", toolIds: ["server:mcp:svc"], sessionId: aliceSocket.sid() });
        expect(JSON.parse(toolOutputs(first.message)[0]!).error).toStartWith("Refused (identity.consent_required)");
        expect(rs.calls().filter((c) => c.tool === "whoami")).toHaveLength(0);
        const asked = () => aliceSocket.events().filter((e) => e.event === "events" && e.data?.data?.type === "request:elicitation");
        await waitFor(() => asked().length > 0, "the consent-link elicitation on Alice's socket");
        const elicitation = asked()[0]!.data.data.data;
        expect(elicitation).toMatchObject({ mode: "url", server_name: "svc" });
        expect(elicitation.url).toStartWith(`${w.cp.url}/oauth/tool-servers/consent/`);
        const token = String(elicitation.url).split("/consent/")[1]!;
        expect(JSON.stringify(bobSocket.events())).not.toContain(token);
        expect(bobSocket.events().some((e) => e.data?.data?.type === "request:elicitation")).toBe(false);
        const stored = await (await fetch(`${url}/api/v1/chats/${first.chatId}`, { headers: { authorization: `Bearer ${w.alice.token}` } })).text();
        expect(stored).not.toContain(token);
        expect(JSON.stringify(w.model.requests)).not.toContain(token);
        expect(w.container!.stderr()).not.toContain(token);

        // Alice consents in the browser: svc's page names her and warns anyone else; she continues and signs in at the provider as her account there
        const consented = await consentInBrowser(elicitation.url, as.issuer, w.cp.url, "alice-at-idp");
        expect(consented.shown).toContain(`${ALICE.name} (${ALICE.email})`);
        expect(consented.shown).toContain(`Continue only if you are ${ALICE.email}.`);
        expect(consented.done).toContain("alice-at-idp");

        // her next call runs, carrying her token: the server sees her subject
        modelCallsTool("svc_onotes.whoami", {});
        const second = await chatTurn(url, w.alice, { model: MODEL, content: "And now?", toolIds: ["server:mcp:svc"], sessionId: aliceSocket.sid() });
        expect(toolOutputs(second.message)[0]).toContain("subject=alice-at-idp");
        expect(
          rs
            .calls()
            .filter((c) => c.tool === "whoami")
            .map((c) => c.subject),
        ).toEqual(["alice-at-idp"]);
        const outcome = await auditRecord({ kind: "outcome" }, (r) => !seen.has(r.id) && r.upstream_identity?.subject === "alice-at-idp", "the outcome record naming Alice's OAuth subject");
        expect(outcome.upstream_identity).toEqual({ kind: "oauth", subject: "alice-at-idp" });
        expect(w.container!.stderr()).not.toMatch(/eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/);
      } finally {
        await api(w.cp, "DELETE", org(w.cp, `/tool-servers/onotes/assignments/${w.agentId}`));
        await aliceSocket.stop();
        await bobSocket.stop();
        await rs.stop();
        await as.stop();
      }
    });
  });
}
