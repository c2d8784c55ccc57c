// Scenario 18 (issue 31): the MCP servers customers run, from a real Open WebUI. Registered by
// governed-chat.test.ts (it shares that file's world, and runs before scenario 9 stops it):
//   bun test --timeout 600000 test/e2e -t "scenario 18"
// - server-everything (npm) over Streamable HTTP: a hyphenated tool, offered under a permit
//   whose condition reads the arguments, called from chat and decided both ways;
// - a revoked Open WebUI session (a password change) refused by the gateway within
//   SVC_PROXY_SESSION_RECHECK;
// - two installations of one agent, each container running server-everything over stdio: one's
//   server crashed, the other still serving, nothing unregistered, the crashed one's call
//   ending unreachable (a permit and an error outcome, never a deny).
import { describe, expect, test } from "bun:test";
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { api, org } from "../integration/cli-support.ts";
import { freePort, waitFor } from "../support/controlplane-process.ts";
import { EVERYTHING_JS, startEverythingHttp } from "../support/mcp/servers.ts";
import { addUser, chatTurn, owui, signIn } from "../support/openwebui.ts";
import { ids, modelCallsTool, offered, toolOutputs, toolServerServed } from "./chat-helpers.ts";
import { gatewayClient, gatewayInitialize, gatewayUrl, resultText } from "./mcp-gateway.ts";
import {
  ADMIN,
  ALICE,
  MODEL,
  type Container,
  auditRecord,
  auditRecords,
  bundleApplied,
  childPid,
  containerEnv,
  freshStateDir,
  linked,
  policyCreateArgs,
  startContainer,
  stopContainer,
} from "./world.ts";

const DAVE = { email: "dave@example.com", password: "dave-pass-1", name: "Dave" };

/** An MCP server's state as a runtime's proxy reports it (`svc policy show`'s source). */
async function serverState(stateDir: string, token: string, name: string): Promise<string | null> {
  const res = await fetch("http://svc-proxy/v1/policy", { unix: join(stateDir, "proxy.sock"), headers: { authorization: `Bearer ${token}` } } as RequestInit);
  const j = (await res.json()) as { tool_servers?: { name: string; state: string }[] };
  return (j.tool_servers ?? []).find((t) => t.name === name)?.state ?? null;
}

const toolNames = async (w: Awaited<ReturnType<typeof linked>>, installation: string) =>
  ((await api(w.cp, "GET", org(w.cp, `/installations/${installation}/tools`))).json.tools as { name: string }[]).map((t) => t.name);

export function mcpServersScenario(): void {
  describe("scenario 18: the MCP servers customers run (issue 31)", () => {
    test("server-everything over Streamable HTTP: a hyphenated tool offered under a conditional permit, called from chat, permitted and refused by its arguments", async () => {
      const w = await linked();
      const url = w.container!.url;
      const everything = await startEverythingHttp();
      try {
        expect((await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "everything", workspace: "default", transport: "http", url: everything.url })).status).toBe(201);
        expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/everything/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
        const permit = await w.cli(policyCreateArgs({ name: "small-sums", src: `user:${w.aliceUserId}`, dst: "tool:everything.get-sum", condition: "args.a < 100" }));
        expect(permit.code).toBe(0);
        await toolServerServed("everything", "get-sum");
        const seen = ids(await auditRecords({ tool: "everything.get-sum" }));

        // offered although the listing has no arguments for the condition; permitted with a = 2
        modelCallsTool("svc_everything.get-sum", { a: 2, b: 3 });
        const before = w.model.requests.length;
        const ok = await chatTurn(url, w.alice, { model: MODEL, content: "What is 2 + 3?", toolIds: ["server:mcp:svc"] });
        expect(offered(w.model.requests[before])).toContain("svc_everything.get-sum");
        expect(offered(w.model.requests[before])).not.toContain("svc_everything.echo"); // no permit names it
        expect(toolOutputs(ok.message)[0]).toMatch(/\b5\b/);
        const permitted = await auditRecord({ kind: "tool", tool: "everything.get-sum", decision: "permit", user: w.aliceUserId }, (r) => !seen.has(r.id));
        expect(permitted).toMatchObject({ action: "tool:everything.get-sum", tool_server: "everything" });

        // the same tool, offered again; a = 500 is outside the condition: refused, audited as a deny
        modelCallsTool("svc_everything.get-sum", { a: 500, b: 1 });
        const at = w.model.requests.length;
        const refused = await chatTurn(url, w.alice, { model: MODEL, content: "What is 500 + 1?", toolIds: ["server:mcp:svc"] });
        expect(offered(w.model.requests[at])).toContain("svc_everything.get-sum");
        expect(JSON.parse(toolOutputs(refused.message)[0]!).error).toStartWith("Refused (svc.denied)");
        const denied = await auditRecord({ kind: "tool", tool: "everything.get-sum", decision: "deny", user: w.aliceUserId }, (r) => !seen.has(r.id));
        expect(denied.tool_server).toBe("everything");
      } finally {
        await api(w.cp, "DELETE", org(w.cp, `/tool-servers/everything/assignments/${w.agentId}`));
        await everything.stop();
      }
    });

    test("a revoked session: after Dave changes his password Open WebUI refuses his old token, and the gateway does too within SVC_PROXY_SESSION_RECHECK (15 s), on a new session and on the one he had open", async () => {
      const w = await linked();
      const url = w.container!.url;
      const dave = await addUser(url, w.admin, DAVE);
      const gw = await gatewayUrl(url, w.admin);
      const open = await gatewayClient(gw, dave.token);
      expect(Array.isArray((await open.listTools()).tools)).toBe(true);
      expect((await gatewayInitialize(gw, dave.token)).status).toBe(200);

      const changed = await owui(url, "POST", "/api/v1/auths/update/password", dave.token, { password: DAVE.password, new_password: "dave-pass-2" });
      expect(changed.status).toBe(200);
      const changedAt = Date.now();
      expect((await owui(url, "GET", "/api/v1/auths/", dave.token)).status).toBe(401); // Open WebUI's own verdict

      let refusal = "";
      await waitFor(
        async () => {
          const r = await gatewayInitialize(gw, dave.token);
          if (r.status === 401) refusal = r.text;
          return r.status === 401;
        },
        "the gateway to refuse the revoked session",
        30_000,
      );
      expect(Date.now() - changedAt).toBeLessThan(15_000 + 3_000);
      expect(refusal).toContain("Open WebUI no longer accepts this session");
      // the MCP session opened before is refused too: the check is per request, not per session
      expect(
        String(
          await open.listTools().then(
            () => "served",
            (e: unknown) => e,
          ),
        ),
      ).toMatch(/401|no longer accepts/);
      await open.close().catch(() => {});
      // signed in again, Dave is served again
      const again = await signIn(url, DAVE.email, "dave-pass-2");
      expect((await gatewayInitialize(gw, again.token)).status).toBe(200);
    });

    test("two installations of one agent, each running server-everything over stdio: one's server crashed, the other still serves; nothing is unregistered; the crashed one's call ends unreachable, a permit with an error outcome", async () => {
      const w = await linked();
      // The stdio command, in the image (here: a file UID 10001 runs): server-everything, which
      // stays down while the file crash-mcp is in its container's state volume ($HOME).
      const command = join(w.shared, "everything-stdio.sh");
      writeFileSync(command, `#!/bin/sh\n[ -e "$HOME/crash-mcp" ] && exit 3\nexec ${process.execPath} ${EVERYTHING_JS} stdio\n`);
      chmodSync(command, 0o755);
      expect((await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "local", workspace: "default", transport: "stdio", command })).status).toBe(201);
      expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/local/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
      expect((await w.cli(policyCreateArgs({ name: "alice-local", src: `user:${w.aliceUserId}`, dst: "tool:local.*" }))).code).toBe(0);

      // the second installation of the agent, in a container of its own (no packs: its tools are the agent's MCP tools)
      const init = await w.cli(["bot", "init", "--platform", "chatui", "--name", "helpdesk-b", "--agent", w.agentId, "--workspace", "default", "--json"]);
      expect(init.code).toBe(0);
      const instB = JSON.parse(init.stdout).id as string;
      const tokenB = (await w.cli(["bot", "credential", "--installation", instB, "--workspace", "default"])).stdout.trim();
      let b: Container | null = startContainer(containerEnv({ token: tokenB, stateDir: freshStateDir(), port: freePort(), packs: "" }));
      const a = w.container!;
      try {
        await waitFor(
          () => {
            if (b!.proc.exitCode !== null) throw new Error(`the second container exited: ${b!.stderr().slice(-3000)}`);
            return b!.stderr().includes("svc functions seeded");
          },
          "the second container to boot and seed its Open WebUI",
          180_000,
        );
        const adminB = await signIn(b.url, ADMIN.email, ADMIN.password);
        const aliceB = await addUser(b.url, adminB, ALICE);
        expect((await api(w.cp, "POST", org(w.cp, `/users/${w.aliceUserId}/remote-identities`), { platform: "chatui", remote_user_id: aliceB.id })).status).toBeLessThan(300);
        await waitFor(
          async () => (await serverState(a.stateDir, w.runtimeToken, "local")) === "ok" && (await serverState(b!.stateDir, tokenB, "local")) === "ok",
          "both runtimes to run server-everything",
          90_000,
        );
        await toolServerServed("local", "echo");
        // both installations serve the agent's tools: no 409 between them
        for (const inst of [w.installationId, instB]) expect(await toolNames(w, inst)).toEqual(expect.arrayContaining(["local.echo", "local.get-sum"]));
        const seen = ids(await auditRecords({ tool: "local.echo" }));

        // the first installation's server crashes and stays down
        writeFileSync(join(a.stateDir, "crash-mcp"), "");
        process.kill(
          childPid(a, (argv) => argv.includes(EVERYTHING_JS), "server-everything"),
          "SIGKILL",
        );
        await waitFor(async () => (await serverState(a.stateDir, w.runtimeToken, "local")) === "unreachable", "the first runtime to find its server down", 30_000);
        // nothing unregistered for the agent: the tools are still every installation's
        for (const inst of [w.installationId, instB]) expect(await toolNames(w, inst)).toEqual(expect.arrayContaining(["local.echo", "local.get-sum"]));

        // the second still serves it, to Alice's session of its own Open WebUI
        await bundleApplied({ stateDir: b.stateDir, token: tokenB });
        const gwB = await gatewayClient(await gatewayUrl(b.url, adminB), aliceB.token);
        const listedB = (await gwB.listTools()).tools.map((t) => t.name);
        if (!listedB.includes("local.echo")) {
          const policy = await fetch("http://svc-proxy/v1/policy", { unix: join(b.stateDir, "proxy.sock"), headers: { authorization: `Bearer ${tokenB}` } } as RequestInit);
          throw new Error(`the second runtime lists ${JSON.stringify(listedB)} to Alice; its policy: ${(await policy.text()).slice(0, 3000)}`);
        }
        expect(resultText(await gwB.callTool({ name: "local.echo", arguments: { message: "from the second" } }))).toContain("from the second");
        await gwB.close();
        const servedB = await auditRecord({ kind: "tool", tool: "local.echo", decision: "permit", installation: instB }, (r) => !seen.has(r.id));
        expect(servedB.subject).toMatchObject({ user_id: w.aliceUserId, remote_user_id: aliceB.id });

        // the first: its chat is not offered the tool while its server is down …
        modelCallsTool("svc_local.echo", { message: "from the first" });
        const before = w.model.requests.length;
        await chatTurn(a.url, w.alice, { model: MODEL, content: "Echo something", toolIds: ["server:mcp:svc"] });
        expect(offered(w.model.requests[before])).not.toContain("svc_local.echo");
        // … and a call to it there ends unreachable: decided (a permit), outcome error, never a deny
        const gwA = await gatewayClient(await gatewayUrl(a.url, w.admin), w.alice.token);
        const r = await gwA.callTool({ name: "local.echo", arguments: { message: "from the first" } });
        await gwA.close();
        expect(r.isError).toBe(true);
        expect(resultText(r)).toContain('MCP server "local" is unreachable from this runtime');
        const servedA = await auditRecord({ kind: "tool", tool: "local.echo", decision: "permit", installation: w.installationId }, (x) => !seen.has(x.id));
        await waitFor(
          async () => (await auditRecords({ kind: "outcome", installation: w.installationId })).some((o) => o.ref === servedA.id && o.outcome === "error"),
          "the unreachable call's error outcome",
          30_000,
        );
        expect((await auditRecords({ tool: "local.echo", decision: "deny" })).filter((x) => !seen.has(x.id))).toEqual([]);
      } finally {
        rmSync(join(a.stateDir, "crash-mcp"), { force: true });
        if (b) await stopContainer(b);
        b = null;
        await api(w.cp, "DELETE", org(w.cp, `/tool-servers/local/assignments/${w.agentId}`));
      }
    });
  });
}
