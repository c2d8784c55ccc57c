// The spec end to end, from a user's side: a control plane, the svc CLI, a model provider
// double over HTTPS, and one runtime container (`svc run` as UID 10001) running the real Open
// WebUI from pip. Scenarios share the container (Open WebUI takes ~20 s to start); each one
// asks for the set-up stages it needs (world.ts), so any one runs alone:
//   bun test test/e2e -t "scenario 4"
// Scenario 9 stops the shared container (credential rotation), so it runs last.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { api, filesHolding, org } from "../integration/cli-support.ts";
import { AS_CONTAINER_USER, events, plainLines } from "../integration/supervisor-helpers.ts";
import { waitFor } from "../support/controlplane-process.ts";
import { parseSse } from "../support/model-server.ts";
import { startNotesServer } from "../support/mcp/servers.ts";
import { type OwuiUser, chatTurn, listenSocket, modelIds, owui, setFunctionActive, signIn, streamChat } from "../support/openwebui.ts";
import {
  ALICE,
  BOB,
  BOB_CP_PASSWORD,
  CAROL,
  MODEL,
  MODEL_API_KEY,
  auditRecord,
  auditRecords,
  booted,
  bundleApplied,
  containerEnv,
  freshStateDir,
  frontendPid,
  linked,
  proxyMetrics,
  proxyPid,
  startContainer,
  stopContainer,
  teardown,
  modelProfileCreateArgs,
  policyCreateArgs,
} from "./world.ts";
import { errorText, failedText, ids, modelCallsTool, offered, toolOutputs, toolServerServed, toolStatuses } from "./chat-helpers.ts";
import { mcpServersScenario } from "./scenario-mcp-servers.ts";
import { mcpOauthScenario } from "./scenario-mcp-oauth.ts";
import { tracingScenario } from "./scenario-tracing.ts";

setDefaultTimeout(300_000);
afterAll(teardown);

describe("scenario 1: the setup order of spec §1 with the svc CLI", () => {
  test("login, bot init, credential (piped), profile (api_key once the runtime registered), assign, policies, link", async () => {
    const w = await linked();
    expect(w.log.map((l) => l.step)).toEqual([
      "login",
      "bot init",
      "bot credential",
      "model-profiles create",
      "model-profiles assign",
      "model-profiles readiness",
      "policies create chat",
      "policies create crm-readers",
      "policies create notes",
      "users remote-identities list",
    ]);
    for (const l of w.log) expect(l.run.code).toBe(0);
    // the credential: one line on a pipe, nothing else
    const cred = w.log.find((l) => l.step === "bot credential")!.run;
    expect(cred.stdout).toMatch(/^svc_rt_\S+\n$/);
    expect(cred.stdout.trim()).toBe(w.runtimeToken);
    // the installation, its agent, and the runtime that registered (tools synced at boot)
    const list = await w.cli(["bot", "list", "--json"]);
    expect(JSON.parse(list.stdout).installations ?? JSON.parse(list.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ id: w.installationId, platform: "chatui" })]));
    const agents = await w.cli(["bot", "agents", "list", "--installation", w.installationId, "--json"]);
    expect(agents.stdout).toContain(w.agentId);
    const status = await w.cli(["bot", "status", "--installation", w.installationId, "--json"]);
    const st = JSON.parse(status.stdout);
    expect(st.tool_count).toBe(4); // crm.lookup_customer, crm.update, tickets.list_open, notes.search
    expect(st.replicas.length).toBe(1);
    // the profile is assigned and ready; its key was sealed to the registered runtime
    const assignment = await w.cli(["model-profiles", "assignment", "--workspace", "default", "--agent", w.agentId, "--json"]);
    expect(JSON.parse(assignment.stdout).profile.id).toBe(w.profileId);
    const readiness = await w.cli(["model-profiles", "readiness", w.profileId, "--workspace", "default", "--json"]);
    expect(JSON.parse(readiness.stdout).ready).toBe(true);
    const policies = await w.cli(["policies", "list", "--workspace", "default", "--json"]);
    expect(
      JSON.parse(policies.stdout)
        .policies.map((p: any) => p.dst)
        .sort(),
    ).toEqual(["model:invoke", "tool:crm.lookup_customer", "tool:notes.search"]);
    // the link: Alice's front-end user id is linked to her service user
    const links = JSON.parse(w.log.find((l) => l.step === "users remote-identities list")!.run.stdout);
    expect((links.remote_identities ?? links).map((r: any) => r.remote_user_id)).toContain(w.alice.id);
    const resolved = await w.cli(["users", "resolve", "--email", ALICE.email, "--json"]);
    expect(JSON.parse(resolved.stdout).id).toBe(w.aliceUserId);
    // spec §4 boot diagnostics: the sync line with its counts, then the seeded line
    const boot = events(w.container!.stderr());
    const synced = boot.indexOf("tool sync: registered 4 tool(s) at /api/v1/runtime/tools (added 4, removed 0, unchanged 0, updated 0)");
    const seeded = boot.findIndex((e) => e.startsWith('svc functions seeded: Pipe "svc" and guard "svc_guard" active, 3 toolkit tool(s) (acme_crm, acme_tickets, misnamed)'));
    expect(synced).toBeGreaterThanOrEqual(0);
    expect(seeded).toBeGreaterThan(synced);
  });

  test("an api_key profile is refused while no runtime of the scope has registered", async () => {
    const w = await linked();
    const agent = await api(w.cp, "POST", org(w.cp, "/agents"), { name: "no-runtime-agent", workspace: "default" });
    const r = await w.cli(modelProfileCreateArgs("Nobody", ["--agent", agent.json.id]), `${MODEL_API_KEY}\n`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("(no_runtime_recipient)");
  });
});

describe("scenario 2: the model list", () => {
  test("empty before a profile is assigned and before a model:invoke permit; filled after", async () => {
    const w = await linked();
    expect(w.modelsSeen.beforeProfile).toEqual([]);
    expect(w.modelsSeen.beforePermit).toEqual([]);
    expect(w.modelsSeen.afterPermit).toEqual([MODEL]);
    expect(await modelIds(w.container!.url, w.alice)).toEqual([MODEL]);
  });
});

describe("scenario 3: a chat turn through the Pipe", () => {
  test("permitted, streamed, audited under the user", async () => {
    const w = await linked();
    w.model.respond = null;
    const before = w.model.requests.length;
    const r = await streamChat(w.container!.url, w.alice, { model: MODEL, content: "Hello?" });
    expect(r.status).toBe(200);
    expect(r.contentType).toContain("text/event-stream");
    const events = parseSse(r.text);
    const pieces = events
      .filter((e) => e !== "[DONE]")
      .map((e) => e.choices?.[0]?.delta?.content)
      .filter((c) => typeof c === "string" && c);
    expect(pieces.length).toBeGreaterThan(1); // chunk by chunk, not one body
    expect(pieces.join("")).toBe("Hello from the model");
    // the upstream got the call, streaming, with the key sealed at the CLI and unsealed by the runtime
    const up = w.model.requests.slice(before);
    expect(up).toHaveLength(1);
    expect(up[0]!.body.stream).toBe(true);
    expect(up[0]!.headers.authorization).toBe(`Bearer ${MODEL_API_KEY}`);
    expect(up[0]!.body.model).toBe("gpt-e2e");
    const rec = await auditRecord({ kind: "model", decision: "permit", user: w.aliceUserId }, (x) => x.subject.remote_user_id === w.alice.id);
    expect(rec).toMatchObject({ action: "model:invoke", decision: "permit", installation_id: w.installationId, agent_id: w.agentId, harness: "chatui" });
    expect(rec.subject).toMatchObject({ user_id: w.aliceUserId, email: ALICE.email, via_installation: false });
  });
});

describe("scenario 4: governed tools in the native tool loop", () => {
  test("a permitted read tool runs; a write tool with no permit is refused and its body never runs; both audited", async () => {
    const w = await linked();
    const url = w.container!.url;
    modelCallsTool("lookup_customer", { customer_id: "c-1" });
    const read = await chatTurn(url, w.alice, { model: MODEL, content: "Who is customer c-1?", toolIds: ["acme_crm"] });
    expect(toolOutputs(read.message)).toEqual(["Ada Lovelace <ada@example.com>"]);
    expect(read.message.content).toBe("The tool said: Ada Lovelace <ada@example.com>");

    const before = w.model.requests.length;
    modelCallsTool("update_customer", { customer_id: "c-1", email: "mallory@evil.example" });
    const write = await chatTurn(url, w.alice, { model: MODEL, content: "Change c-1's email to mallory@evil.example", toolIds: ["acme_crm"] });
    const [refusal] = toolOutputs(write.message);
    // a failed call for Open WebUI (not a green check), the spec's refusal text unchanged inside
    expect(failedText(refusal)).toStartWith("Refused (svc.denied)");
    expect(toolStatuses(write.message)).toEqual(["failed"]);
    expect(toolStatuses(read.message)).toEqual(["completed"]);
    // what Alice reads: the model's answer built on the refusal
    expect(write.message.content).toBe(`The tool said: ${refusal}`);
    // the model got the refusal as the tool result
    const second = w.model.requests.slice(before).at(-1)!.body.messages.at(-1);
    expect(second).toMatchObject({ role: "tool" });
    expect(failedText(second.content)).toStartWith("Refused (svc.denied)");

    // the write body never ran: the customer's email is unchanged
    modelCallsTool("lookup_customer", { customer_id: "c-1" });
    const again = await chatTurn(url, w.alice, { model: MODEL, content: "And now?", toolIds: ["acme_crm"] });
    expect(toolOutputs(again.message)).toEqual(["Ada Lovelace <ada@example.com>"]);

    const permit = await auditRecord({ kind: "tool", tool: "crm.lookup_customer", decision: "permit", user: w.aliceUserId });
    expect(permit).toMatchObject({ kind: "tool", action: "tool:crm.lookup_customer", decision: "permit" });
    expect(permit.subject).toMatchObject({ user_id: w.aliceUserId, remote_user_id: w.alice.id, via_installation: false });
    const deny = await auditRecord({ kind: "tool", tool: "crm.update", decision: "deny", user: w.aliceUserId });
    expect(deny).toMatchObject({ kind: "tool", action: "tool:crm.update", decision: "deny", reason: "svc.denied" });
    expect(deny.subject).toMatchObject({ user_id: w.aliceUserId, remote_user_id: w.alice.id });
    // the permitted call's outcome is recorded against its decision; the refused one has none
    const outcomes = await auditRecords({ kind: "outcome", user: w.aliceUserId });
    expect(outcomes.some((o) => o.ref === permit.id && o.outcome === "ok" && o.exit_code === 0)).toBe(true);
    expect(outcomes.some((o) => o.ref === deny.id)).toBe(false);
  });

  test("a condition on the arguments (issue 17): one email domain is permitted and the write runs, another is refused and never runs", async () => {
    const w = await linked();
    const url = w.container!.url;
    const created = await api(w.cp!, "POST", org(w.cp!, "/policies"), {
      name: "own-domain updates",
      src: `user:${w.aliceUserId}`,
      dst: "tool:crm.update",
      effect: "permit",
      workspace: "default",
      agent_id: w.agentId,
      condition: "args.email.endsWith('@example.com')",
    });
    expect(created.status).toBe(201);
    try {
      await bundleApplied();
      modelCallsTool("update_customer", { customer_id: "c-1", email: "ada.l@example.com" });
      const ok = await chatTurn(url, w.alice, { model: MODEL, content: "Change c-1's email to ada.l@example.com", toolIds: ["acme_crm"] });
      expect(toolOutputs(ok.message)).toEqual(["customer c-1 now has email ada.l@example.com"]);
      modelCallsTool("update_customer", { customer_id: "c-1", email: "mallory@evil.example" });
      const refused = await chatTurn(url, w.alice, { model: MODEL, content: "Change c-1's email to mallory@evil.example", toolIds: ["acme_crm"] });
      expect(toolOutputs(refused.message).map(failedText)).toEqual(["Refused (svc.denied): no policy permits tool:crm.update for this user"]);
      // shown as a failed call, not a success
      expect(toolStatuses(refused.message)).toEqual(["failed"]);
      expect(toolStatuses(ok.message)).toEqual(["completed"]);
      modelCallsTool("lookup_customer", { customer_id: "c-1" });
      const after = await chatTurn(url, w.alice, { model: MODEL, content: "And now?", toolIds: ["acme_crm"] });
      expect(toolOutputs(after.message)).toEqual(["Ada Lovelace <ada.l@example.com>"]);
      const permit = await auditRecord({ kind: "tool", tool: "crm.update", decision: "permit", user: w.aliceUserId });
      expect(permit.policy_id).toBe(created.json.id);
      modelCallsTool("update_customer", { customer_id: "c-1", email: "ada@example.com" });
      await chatTurn(url, w.alice, { model: MODEL, content: "Put c-1's email back", toolIds: ["acme_crm"] });
    } finally {
      // back to the scenario's policies (no permit for the write tool) and the customer's email
      await api(w.cp!, "DELETE", org(w.cp!, `/policies/${created.json.id}`));
      await bundleApplied();
    }
  });

  test("a built-in tool of the front end is neither offered to the model nor run when the model calls it", async () => {
    const w = await linked();
    const url = w.container!.url;
    const socket = await listenSocket(url, w.alice); // a browser session: Open WebUI adds its built-in tools
    try {
      const seen = ids(await auditRecords({ kind: "tool", user: w.aliceUserId }));
      const before = w.model.requests.length;
      modelCallsTool("search_chats", { query: "password" });
      const turn = await chatTurn(url, w.alice, { model: MODEL, content: "Search my chats for passwords", toolIds: ["acme_crm"], sessionId: socket.sid() });
      const requests = w.model.requests.slice(before);
      // the model was offered the governed tools only …
      expect(requests).toHaveLength(1);
      expect(offered(requests[0])).toEqual(["lookup_customer", "update_customer"]);
      // … and its call of search_chats never reached the front end's tool loop: nothing ran,
      // no tool result went back to the model
      expect(toolOutputs(turn.message)).toEqual([]);
      expect(JSON.stringify(turn.message)).not.toContain("search_chats");
      expect(turn.message.content ?? "").toBe("");
      // a governed call in the same session still works and is audited
      modelCallsTool("lookup_customer", { customer_id: "c-1" });
      const ok = await chatTurn(url, w.alice, { model: MODEL, content: "Who is c-1?", toolIds: ["acme_crm"], sessionId: socket.sid() });
      expect(toolOutputs(ok.message)).toEqual(["Ada Lovelace <ada@example.com>"]);
      const rec = await auditRecord({ kind: "tool", user: w.aliceUserId }, (r) => !seen.has(r.id));
      expect(rec).toMatchObject({ action: "tool:crm.lookup_customer", decision: "permit" });
      expect((await auditRecords({ kind: "tool", user: w.aliceUserId })).filter((r) => !seen.has(r.id)).map((r) => r.action)).toEqual(["tool:crm.lookup_customer"]);
    } finally {
      await socket.stop();
    }
  });
});

/** Signs in on the control plane's claim page (/claim/<token>) with a password, as a browser would. */
async function claimWithPassword(claimUrl: string, email: string, password: string): Promise<{ status: number; body: string }> {
  const page = await fetch(claimUrl);
  const html = await page.text();
  expect(page.status).toBe(200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no _csrf on the claim page: ${html.slice(0, 500)}`);
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const res = await fetch(claimUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ _csrf: csrf, action: "password", email, password }).toString(),
  });
  return { status: res.status, body: await res.text() };
}

describe("scenario 5: an unlinked front-end user", () => {
  test("is refused with a claim link for them alone, never in the chat or the model's context; after claiming, decided as themselves", async () => {
    const w = await linked();
    const url = w.container!.url;
    const bobSocket = await listenSocket(url, w.bob);
    const carolSocket = await listenSocket(url, w.carol);
    try {
      const before = w.model.requests.length;
      modelCallsTool("lookup_customer", { customer_id: "c-1" });
      const turn = await chatTurn(url, w.bob, { model: MODEL, content: "Who is customer c-1?", toolIds: ["acme_crm"] });
      // what Bob reads in the chat: the spec's refusal (§7), then that a link was sent (never the link)
      expect(errorText(turn.message)).toStartWith("Refused (identity.unlinked): a one-time link to link your chat account was sent to you");
      expect(errorText(turn.message)).not.toContain("/claim/");
      // the claim link reached Bob's socket as one dialog (stays until dismissed; its primary action opens the link in a new tab)
      await waitFor(() => bobSocket.dialogs().length > 0, "the claim-link dialog");
      expect(bobSocket.dialogs()).toHaveLength(1);
      const note = bobSocket.dialogs()[0]!;
      expect(note.data).toMatchObject({ type: "execute", data: { title: "Link your chat account" } });
      const link = String(note.data.data.url);
      expect(String(note.data.data.code)).toContain(JSON.stringify(link));
      expect(link).toStartWith(`${w.cp.url}/claim/`);
      const token = link!.split("/claim/")[1]!;
      // ...to Bob alone: Carol's open socket got nothing
      expect(carolSocket.notifications()).toEqual([]);
      expect(carolSocket.dialogs()).toEqual([]);
      expect(JSON.stringify(carolSocket.events())).not.toContain(token);
      // never in the chat as stored, never sent to the model, never logged
      const stored = await (await fetch(`${url}/api/v1/chats/${turn.chatId}`, { headers: { authorization: `Bearer ${w.bob.token}` } })).text();
      expect(stored).toContain("identity.unlinked");
      expect(stored).not.toContain(token);
      expect(stored).not.toContain("/claim/");
      expect(w.model.requests.length).toBe(before); // the refused turn reached no model
      expect(JSON.stringify(w.model.requests)).not.toContain(token);
      expect(w.container!.stderr()).not.toContain(token);
      // audited under the installation's subject, marked via installation
      const refused = await auditRecord({ decision: "deny", kind: "model" }, (r) => r.subject.remote_user_id === w.bob.id && r.reason === "identity.unlinked");
      expect(refused).toMatchObject({ action: "model:invoke", decision: "deny", installation_id: w.installationId });
      expect(refused.subject).toMatchObject({ user_id: null, via_installation: true });
      expect(JSON.stringify(refused)).not.toContain(token);

      // Bob opens the link and signs in to the service (console claim page) …
      const member = await api(w.cp, "POST", org(w.cp, "/members"), { email: BOB.email, role: "member", password: BOB_CP_PASSWORD });
      expect(member.status).toBe(201);
      const claimed = await claimWithPassword(link!, BOB.email, BOB_CP_PASSWORD);
      expect(claimed.status).toBe(200);
      expect(claimed.body).toContain("Your chat account is linked");
      const bobUser = JSON.parse((await w.cli(["users", "resolve", "--email", BOB.email, "--json"])).stdout);
      await bundleApplied();
      // … signs in to the chat and asks again: decided under his own service user
      const bob2: OwuiUser = await signIn(url, w.bob.email, w.bob.password);
      const seen = ids(await auditRecords({ user: bobUser.id }));
      modelCallsTool("lookup_customer", { customer_id: "c-1" });
      const again = await chatTurn(url, bob2, { model: MODEL, content: "Who is customer c-1?", toolIds: ["acme_crm"] });
      expect(JSON.stringify(again.message)).not.toContain("identity.unlinked");
      // the model call is permitted now; the tool is decided by policy for Bob (only Alice may read the CRM)
      expect(failedText(toolOutputs(again.message)[0])).toStartWith("Refused (svc.denied)");
      const model = await auditRecord({ kind: "model", decision: "permit", user: bobUser.id }, (r) => !seen.has(r.id));
      expect(model.subject).toMatchObject({ user_id: bobUser.id, remote_user_id: w.bob.id, via_installation: false });
      const tool = await auditRecord({ kind: "tool", tool: "crm.lookup_customer", decision: "deny", user: bobUser.id }, (r) => !seen.has(r.id));
      expect(tool).toMatchObject({ reason: "svc.denied" });
      expect(tool.subject).toMatchObject({ user_id: bobUser.id, via_installation: false });
    } finally {
      await bobSocket.stop();
      await carolSocket.stop();
    }
  });
});

describe("scenario 6: a pack whose method passes another name", () => {
  test("is refused as tool_not_registered even with a permit for the declared name", async () => {
    const w = await linked();
    expect(w.container!.stderr()).toContain("notes.find"); // the boot step warned about it
    modelCallsTool("search", { query: "quarterly report" });
    const turn = await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "Search my notes", toolIds: ["misnamed"] });
    const [output] = toolOutputs(turn.message);
    expect(failedText(output)).toStartWith("tool_not_registered");
    expect(toolStatuses(turn.message)).toEqual(["failed"]);
    expect(turn.message.content).toBe(`The tool said: ${output}`); // what Alice reads
    const rec = await auditRecord({ decision: "deny", user: w.aliceUserId }, (r) => r.action === "tool:notes.find");
    expect(rec).toMatchObject({ kind: "tool", decision: "deny", reason: "tool_not_registered" });
    expect(rec.subject).toMatchObject({ user_id: w.aliceUserId, remote_user_id: w.alice.id, via_installation: false });
  });
});

describe("scenario 10: svc harness sync", () => {
  test("clean after boot; exit 1 once the guard is deactivated", async () => {
    const w = await linked();
    const url = w.container!.url;
    const sync = async () => w.cli(["harness", "sync", "--harness", "chatui", "--url", url], undefined, { CHATUI_ADMIN_TOKEN: w.admin.token });
    const clean = await sync();
    expect(clean.stdout).toContain("In sync");
    expect(clean.code).toBe(0);
    await setFunctionActive(url, w.admin, "svc_guard", false);
    try {
      const drift = await sync();
      expect(drift.code).toBe(1);
      expect(drift.stdout).toContain("drift:");
      expect(drift.stdout).toContain("svc_guard");
    } finally {
      await setFunctionActive(url, w.admin, "svc_guard", true);
    }
    expect((await sync()).code).toBe(0);
  });
});

describe("scenario 7: the proxy stopped", () => {
  test("the next turn fails as governance-unavailable and nothing reaches the model", async () => {
    const w = await linked();
    w.model.respond = null;
    const pid = proxyPid(w.container!);
    const before = w.model.requests.length;
    const seen = ids(await auditRecords({ user: w.aliceUserId }));
    // SIGSTOP: the daemon stops answering but stays a child, so `svc run` keeps the front end
    // up (a dead proxy stops the whole container, by design).
    process.kill(pid, "SIGSTOP");
    try {
      const turn = await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "Are you there?" });
      expect(errorText(turn.message)).toContain("Governance unavailable");
      expect(errorText(turn.message)).toContain("The request was not sent");
      expect(w.model.requests.length).toBe(before);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    let answered = 0;
    await waitFor(async () => {
      const ok = (await streamChat(w.container!.url, w.alice, { model: MODEL, content: "back?" })).text.includes("Hello");
      if (ok) answered++;
      return ok;
    }, "the turns to work again");
    // the refused turn was never decided: the only new decision records are the answered turns'
    // permits (each answered call also gets its usage outcome record, kind "outcome")
    const decisions = async () => (await auditRecords({ user: w.aliceUserId })).filter((r) => !seen.has(r.id) && r.kind !== "outcome");
    await waitFor(async () => (await decisions()).length >= answered, "the new turns' records");
    const fresh = await decisions();
    expect(fresh.map((r) => `${r.action} ${r.decision}`)).toEqual(Array(answered).fill("model:invoke permit"));
    expect(w.model.requests.slice(before).map((r) => r.body.messages.at(-1).content)).toEqual(Array(answered).fill("back?"));
  });
});

describe("scenario 8: audit-argument encryption", () => {
  test("with an active key the tool record is ciphertext that svc audit decrypt opens; after the last key is disabled, digest-only", async () => {
    const w = await linked();
    const identity = join(w.home, "audit-identity.txt");
    const created = await w.cli(["audit", "keys", "create", "--name", "e2e", "--identity-file", identity, "--json"]);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    await bundleApplied();

    let seen = ids(await auditRecords({ tool: "crm.lookup_customer" }));
    modelCallsTool("lookup_customer", { customer_id: "c-1" });
    await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "Who is c-1?", toolIds: ["acme_crm"] });
    const enc = await auditRecord({ kind: "tool", tool: "crm.lookup_customer", decision: "permit", user: w.aliceUserId }, (r) => !seen.has(r.id));
    expect(enc.encryption).toEqual({ mode: "recipients", key_ids: [key.id] });
    const dec = await w.cli(["audit", "decrypt", "--record", enc.id, "--identity", identity, "--stdout"]);
    expect(dec.code).toBe(0);
    expect(JSON.parse(dec.stdout).arguments).toEqual({ customer_id: "c-1" });

    const disabled = await w.cli(["audit", "keys", "disable", key.id]);
    expect(disabled.code).toBe(0);
    await bundleApplied();
    seen = ids(await auditRecords({ tool: "crm.lookup_customer" }));
    await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "Who is c-1 now?", toolIds: ["acme_crm"] });
    const plain = await auditRecord({ kind: "tool", tool: "crm.lookup_customer", decision: "permit", user: w.aliceUserId }, (r) => !seen.has(r.id));
    expect(plain.encryption).toEqual({ mode: "digest-only" });
    expect(plain.args_digest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(plain.args_digest).toBe(enc.args_digest); // same arguments, same digest
    const none = await w.cli(["audit", "decrypt", "--record", plain.id, "--identity", identity, "--stdout"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("not_found");
  });
});

describe("scenario 13: an MCP tool server through svc's gateway (issue 13)", () => {
  test("permit runs it at the upstream; a deny never reaches it; audited under the user with encrypted arguments; a hand-added MCP connection is not served", async () => {
    const w = await linked();
    const notes = await startNotesServer();
    const admin = await signIn(w.container!.url, "admin@example.com", "admin-pass-1");
    try {
      // the admin registers the server, assigns it, and permits Alice to look things up — except "forbidden"
      const created = await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "kb", workspace: "default", transport: "http", url: notes.url });
      expect(created.status).toBe(201);
      expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/kb/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
      const policy = async (name: string, dst: string, effect: string, condition?: string) => w.cli(policyCreateArgs({ name, src: `user:${w.aliceUserId}`, dst, effect, condition }));
      expect((await policy("kb-lookup", "tool:kb.lookup", "permit")).code).toBe(0);
      expect((await policy("kb-no-forbidden", "tool:kb.lookup", "deny", '"term" in args && args.term == "forbidden"')).code).toBe(0);
      const identity = join(w.home, "mcp-audit-identity.txt");
      const key = await w.cli(["audit", "keys", "create", "--name", "e2e-mcp", "--identity-file", identity, "--json"]);
      expect(key.code).toBe(0);
      // the proxy lists the server on its next poll and registers kb.* through the tool sync
      await toolServerServed("kb");

      // permit: the model (double) calls the MCP tool; Open WebUI runs it through the gateway
      const seen = ids(await auditRecords({ tool: "kb.lookup" }));
      modelCallsTool("svc_kb.lookup", { term: "invoices" });
      const before = w.model.requests.length;
      const turn = await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "What do the notes say about invoices?", toolIds: ["server:mcp:svc"] });
      expect(toolOutputs(turn.message)[0]).toContain("note about invoices");
      expect(notes.calls()).toContainEqual({ tool: "lookup", args: { term: "invoices" } });
      expect(offered(w.model.requests[before])).toContain("svc_kb.lookup");
      expect(offered(w.model.requests[before])).not.toContain("svc_kb.add_note"); // not permitted: not offered
      const permit = await auditRecord({ kind: "tool", tool: "kb.lookup", decision: "permit", user: w.aliceUserId }, (r) => !seen.has(r.id));
      expect(permit.subject).toMatchObject({ user_id: w.aliceUserId, remote_user_id: w.alice.id, via_installation: false });
      expect(permit.tool_server).toBe("kb"); // the control plane keeps the MCP server
      expect(permit.encryption).toEqual({ mode: "recipients", key_ids: [JSON.parse(key.stdout).id] });
      const dec = await w.cli(["audit", "decrypt", "--record", permit.id, "--identity", identity, "--stdout"]);
      expect(JSON.parse(dec.stdout).arguments).toEqual({ term: "invoices" });

      // deny: decided at the call, the upstream never contacted
      const calls = notes.calls().length;
      modelCallsTool("svc_kb.lookup", { term: "forbidden" });
      const denied = await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "And about the forbidden topic?", toolIds: ["server:mcp:svc"] });
      // Open WebUI turns an MCP error result into {"error": <its text>} for the model
      expect(JSON.parse(toolOutputs(denied.message)[0]!).error).toBe('Refused (svc.denied): policy "kb-no-forbidden" denies tool:kb.lookup');
      expect(notes.calls().length).toBe(calls);
      const deny = await auditRecord({ kind: "tool", tool: "kb.lookup", decision: "deny", user: w.aliceUserId });
      expect(deny.subject).toMatchObject({ user_id: w.aliceUserId, via_installation: false });

      // a direct MCP connection an admin adds by hand in Open WebUI is never served, and is drift
      const current = (await owui(w.container!.url, "GET", "/api/v1/configs/tool_servers", admin.token)).json;
      const direct = {
        type: "mcp",
        url: notes.url,
        path: "",
        auth_type: "none",
        key: "",
        config: { enable: true, access_grants: [{ principal_type: "user", principal_id: "*", permission: "read" }] },
        info: { id: "direct", name: "direct" },
      };
      const set = await owui(w.container!.url, "POST", "/api/v1/configs/tool_servers", admin.token, { TOOL_SERVER_CONNECTIONS: [...current.TOOL_SERVER_CONNECTIONS, direct] });
      expect(set.status).toBe(200);
      const callsBefore = notes.calls().length;
      modelCallsTool("direct_lookup", { term: "bypass" });
      const at = w.model.requests.length;
      await chatTurn(w.container!.url, w.alice, { model: MODEL, content: "Use the direct server", toolIds: ["server:mcp:svc", "server:mcp:direct"] });
      expect(offered(w.model.requests[at]).filter((n: string) => n.startsWith("direct_"))).toEqual([]);
      expect(notes.calls().length).toBe(callsBefore);
      const drift = await w.cli(["harness", "sync", "--harness", "chatui", "--url", w.container!.url], undefined, { CHATUI_ADMIN_TOKEN: admin.token });
      expect(drift.code).toBe(1);
      expect(drift.stdout).toContain('drift: tool server "direct"');
      expect((await owui(w.container!.url, "POST", "/api/v1/configs/tool_servers", admin.token, current)).status).toBe(200);
      expect((await w.cli(["audit", "keys", "disable", JSON.parse(key.stdout).id])).code).toBe(0);
    } finally {
      await notes.stop();
    }
  });

  test("an unlinked user's call: exactly Refused (identity.unlinked); the claim link reaches that user's own session alone, never the tool result, the chat or the model", async () => {
    const w = await linked();
    const url = w.container!.url;
    const notes = await startNotesServer();
    // Carol, linked while the turn starts (so the gateway lists the tool to her and the model
    // is called), is unlinked by an admin before the model's tool call runs: the only way an
    // Open WebUI chat reaches an MCP tools/call as an unlinked user (unlinked users are offered
    // no tools and their model calls are refused first).
    const created = await api(w.cp, "POST", org(w.cp, "/tool-servers"), { name: "kbx", workspace: "default", transport: "http", url: notes.url });
    expect(created.status).toBe(201);
    expect((await api(w.cp, "POST", org(w.cp, "/tool-servers/kbx/assign"), { agent_id: w.agentId })).status).toBeLessThan(300);
    const carolUser = await api(w.cp, "POST", org(w.cp, "/users"), { email: CAROL.email, display_name: CAROL.name });
    expect(carolUser.status).toBe(201);
    const carolId = carolUser.json.id as string;
    expect((await api(w.cp, "POST", org(w.cp, `/users/${carolId}/remote-identities`), { platform: "chatui", remote_user_id: w.carol.id })).status).toBe(201);
    const permit = await w.cli(policyCreateArgs({ name: "kbx-carol", src: `user:${carolId}`, dst: "tool:kbx.lookup" }));
    expect(permit.code).toBe(0);
    await toolServerServed("kbx");

    const carolSocket = await listenSocket(url, w.carol);
    const aliceSocket = await listenSocket(url, w.alice);
    const release = Promise.withResolvers<void>();
    try {
      const seen = ids(await auditRecords({ tool: "kbx.lookup" }));
      const calls = notes.calls().length;
      w.model.respond = (body) => {
        const last = body?.messages?.at(-1);
        if (last?.role === "tool") return { text: `The tool said: ${last.content}` };
        return { toolCall: { id: "call_kbx", name: "svc_kbx.lookup", arguments: JSON.stringify({ term: "invoices" }) }, holdAfterFirstChunk: release.promise };
      };
      const before = w.model.requests.length;
      // Carol's browser session: Open WebUI hands MCP elicitations to it (the event caller).
      const turn = chatTurn(url, w.carol, { model: MODEL, content: "What do the notes say about invoices?", toolIds: ["server:mcp:svc"], sessionId: carolSocket.sid() });
      await waitFor(() => w.model.requests.length > before, "the model call of Carol's turn");
      expect(offered(w.model.requests[before])).toContain("svc_kbx.lookup"); // listed while she was linked
      const unlinked = await api(w.cp, "DELETE", org(w.cp, `/users/${carolId}/remote-identities/${w.carol.id}`));
      expect(unlinked.status).toBe(200);
      await bundleApplied();
      release.resolve(); // the model's tool call now reaches Open WebUI, which runs it through the gateway
      const done = await turn;

      // what the tool returned, to the model and to the chat: exactly the spec's refusal
      expect(toolOutputs(done.message).map((o) => JSON.parse(o).error)).toEqual(["Refused (identity.unlinked)"]);
      expect(notes.calls().length).toBe(calls); // the upstream never saw it
      // the claim link reached Carol's own session as one elicitation (Open WebUI's dialog)
      const asked = () => carolSocket.events().filter((e) => e.event === "events" && e.data?.data?.type === "request:elicitation");
      await waitFor(() => asked().length > 0, "the claim-link elicitation on Carol's socket").catch((e) => {
        const lines = plainLines(w.container!.stderr()).filter((l) => /claim|elicit|event caller|unlinked|session/i.test(l) && !/httpx2/.test(l));
        const kinds = carolSocket.events().map((x) => `${x.event}:${x.data?.data?.type ?? ""}`);
        throw new Error(
          `${(e as Error).message}\nCarol's socket: ${kinds.join(" ")} ${JSON.stringify(carolSocket.events().filter((x) => !x.event.startsWith("events"))).slice(0, 2000)}\n${lines.slice(-30).join("\n")}`,
        );
      });
      expect(asked()).toHaveLength(1);
      const elicitation = asked()[0]!.data.data.data;
      expect(elicitation).toMatchObject({ mode: "url", server_name: "svc" });
      expect(elicitation.url).toStartWith(`${w.cp.url}/claim/`);
      const token = String(elicitation.url).split("/claim/")[1]!;
      // … to Carol alone: Alice's open socket got nothing of it
      expect(JSON.stringify(aliceSocket.events())).not.toContain(token);
      expect(aliceSocket.events().some((e) => e.data?.data?.type === "request:elicitation")).toBe(false);
      // never in the stored chat, never sent to the model, never logged
      const stored = await (await fetch(`${url}/api/v1/chats/${done.chatId}`, { headers: { authorization: `Bearer ${w.carol.token}` } })).text();
      expect(stored).toContain("identity.unlinked");
      expect(stored).not.toContain(token);
      expect(JSON.stringify(w.model.requests)).not.toContain(token);
      expect(w.container!.stderr()).not.toContain(token);
      // audited under the installation's subject, marked via installation, naming the server
      const rec = await auditRecord({ kind: "tool", tool: "kbx.lookup", decision: "deny" }, (r) => !seen.has(r.id) && r.reason === "identity.unlinked");
      expect(rec).toMatchObject({ action: "tool:kbx.lookup", tool_server: "kbx", installation_id: w.installationId });
      expect(rec.subject).toMatchObject({ user_id: null, remote_user_id: w.carol.id, via_installation: true });
      expect(JSON.stringify(rec)).not.toContain(token);
    } finally {
      release.resolve();
      await carolSocket.stop();
      await aliceSocket.stop();
      await notes.stop();
    }
  });
});

describe("scenario 16: a budget (issue 16)", () => {
  test("the 80 % warning reaches Alice alone, never the chat or the model; at the limit the turn is refused as an assistant message, audited", async () => {
    const w = await linked();
    const url = w.container!.url;
    w.model.respond = null;
    const aliceSocket = await listenSocket(url, w.alice);
    const bobSocket = await listenSocket(url, w.bob);
    const spentOf = async (name: string) => (JSON.parse((await w.cli(["budgets", "list", "--json"])).stdout).budgets.find((b: any) => b.name === name)?.spent ?? NaN) as number;
    const fetched = async (name: string) => waitFor(async () => (await proxyMetrics()).includes(`svc_proxy_budget_limit{budget="${name}"}`), `the proxy to fetch the budget ${name}`, 30_000);
    const create = async (name: string, tokens: number) =>
      expect((await w.cli(["budgets", "create", "--name", name, "--user", ALICE.email, "--period", "day", "--tokens", String(tokens)])).code).toBe(0);
    try {
      // what one turn costs, and what Alice has spent today already (earlier scenarios)
      await create("e2e-probe", 1_000_000_000);
      // Read only a settled figure: another scenario's turns (scenario 20's replica among them)
      // may still be shipping, and counting them into one turn's cost would set the limit too high.
      const settled = async (name: string, above: number) => {
        let last = NaN;
        await waitFor(
          async () => {
            const now = await spentOf(name);
            const still = now === last && now > above;
            last = now;
            if (!still) await Bun.sleep(1_500);
            return still;
          },
          `the spending of ${name} settled`,
          60_000,
        );
        return last;
      };
      const s0 = await settled("e2e-probe", -1);
      await chatTurn(url, w.alice, { model: MODEL, content: "Hello?" });
      const s1 = await settled("e2e-probe", s0);
      const perTurn = s1 - s0;
      expect((await w.cli(["budgets", "delete", "e2e-probe"])).code).toBe(0);
      // a limit that one more turn takes past 80 % and two more past 100 %
      await create("alice-e2e", s1 + Math.ceil(perTurn * 1.2));
      await fetched("alice-e2e");
      const before = w.model.requests.length;
      const turns: any[] = [];
      for (let i = 0; i < 3; i++) turns.push(await chatTurn(url, w.alice, { model: MODEL, content: "Hello?" })); // the probe's words: the same cost
      // two permitted turns (the warning on one of them), then the refusal as the assistant's answer
      expect(turns[0].message.content).toContain("Hello from the model");
      expect(turns[1].message.content).toContain("Hello from the model");
      expect(turns[2].message.content).toStartWith('Refused (svc.budget_exceeded): the budget "alice-e2e" is used up');
      expect(w.model.requests.length).toBe(before + 2); // the refused turn reached no model
      await waitFor(() => aliceSocket.notifications().length > 0, "the budget warning");
      const warnings = aliceSocket.notifications();
      expect(warnings).toHaveLength(1);
      expect(warnings[0].data).toMatchObject({ type: "notification", data: { type: "warning" } });
      expect(String(warnings[0].data.data.content)).toMatch(/^\d+ % of the budget "alice-e2e" is used/);
      // to Alice alone; never in the stored chats nor sent to the model
      expect(bobSocket.notifications()).toEqual([]);
      expect(JSON.stringify(bobSocket.events())).not.toContain("alice-e2e");
      for (const t of turns) {
        const stored = await (await fetch(`${url}/api/v1/chats/${t.chatId}`, { headers: { authorization: `Bearer ${w.alice.token}` } })).text();
        expect(stored).not.toContain("% of the budget");
      }
      expect(JSON.stringify(w.model.requests)).not.toContain("alice-e2e");
      const refused = await auditRecord({ kind: "model", decision: "deny", user: w.aliceUserId }, (r) => r.reason.startsWith("svc.budget_exceeded: "));
      expect(refused).toMatchObject({
        action: "model:invoke",
        decision: "deny",
        reason: expect.stringMatching(/^svc\.budget_exceeded: budget "alice-e2e" \(bud_[0-9A-Z]{26}\)$/),
        policy_id: null,
        installation_id: w.installationId,
      });
    } finally {
      await w.cli(["budgets", "delete", "e2e-probe"]);
      await w.cli(["budgets", "delete", "alice-e2e"]);
      await aliceSocket.stop();
      await bobSocket.stop();
    }
  });
});

describe("scenario 17: what the front end holds (issue 27, docs/frontend-boundary.md)", () => {
  test("Open WebUI's environment has no runtime token; a process of its UID cannot read the supervisor's or the proxy's; the state directory gives away neither the token nor the digest key", async () => {
    const w = await linked();
    const c = w.container!;
    const front = frontendPid(c);
    const environ = readFileSync(`/proc/${front}/environ`, "utf8").split("\0");
    expect(environ.some((e) => e.startsWith("SVC_RUNTIME_TOKEN="))).toBe(false);
    expect(environ.join("\n")).not.toContain(w.runtimeToken);
    const credential = environ.find((e) => e.startsWith("SVC_FRONTEND_TOKEN="))?.slice("SVC_FRONTEND_TOKEN=".length) ?? "";
    expect(credential).toMatch(/^svc_fe_/);
    // the Pipe lists the models with it (spec §5.4's call, made with the boot's credential)
    expect(await modelIds(c.url, w.alice)).toEqual([MODEL]);
    // code of the front end's UID: Open WebUI's own environment is readable, the others' are not
    const asFrontEnd = (path: string) => Bun.spawnSync([...AS_CONTAINER_USER, "cat", path], { stdout: "pipe", stderr: "pipe" });
    expect(asFrontEnd(`/proc/${front}/environ`).exitCode).toBe(0);
    for (const pid of [c.proc.pid, proxyPid(c)]) {
      const r = asFrontEnd(`/proc/${pid}/environ`);
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr.toString()).toContain("Permission denied");
      expect(readFileSync(`/proc/${pid}/environ`, "utf8")).toContain(w.runtimeToken); // there, for root alone
    }
    // its credential is worth nothing at the control plane
    expect((await api(w.cp, "GET", "/runtime/digest-key", undefined, credential)).status).toBe(401);
    const material = (await api(w.cp, "GET", "/runtime/digest-key", undefined, w.runtimeToken)).json.key as string;
    for (const secret of [w.runtimeToken, material]) expect(filesHolding(join(c.stateDir, "proxy"), secret)).toEqual([]);
  });
});

// Scenario 18 (issue 31), in its own module; before scenario 9, which stops the shared container.
mcpServersScenario();
mcpOauthScenario();
// Scenario 20 (issue 35), in its own module: a traced replica beside the shared container.
tracingScenario();

describe("scenario 9: container start failures", () => {
  test("a malformed pack stops the container naming the pack and entry", async () => {
    const w = await booted();
    const c = startContainer(containerEnv({ token: w.runtimeToken, stateDir: freshStateDir(), port: 1, packs: "broken_pack" }));
    expect(await c.exit).toBe(1);
    expect(plainLines(c.stderr())).toEqual([
      `tool pack "broken_pack": TOOLKITS[0] (id "broken").tools[1] (name "broken.delete_everything"): "access" must be "read" or "write", not 'admin'; refusing to start`,
    ]);
  });

  test("a second installation declaring the same tools: the tool sync's 409 names the tool and the installation holding it", async () => {
    const w = await booted();
    const init = await w.cli(["bot", "init", "--platform", "chatui", "--name", "helpdesk-2", "--agent", w.agentId, "--workspace", "default", "--json"]);
    expect(init.code).toBe(0);
    const other = JSON.parse(init.stdout).id as string;
    // The first installation's pack tools (its MCP tools, when scenario 13 ran first, come and
    // go with that scenario's servers, so only the pack tools are compared).
    const PACK_TOOLS = ["crm.lookup_customer", "crm.update", "notes.search", "tickets.list_open"];
    const packToolsOf = async (id: string) =>
      ((await api(w.cp, "GET", org(w.cp, `/installations/${id}/tools`))).json.tools as { name: string }[])
        .map((t) => t.name)
        .filter((n) => PACK_TOOLS.includes(n))
        .sort();
    expect(await packToolsOf(w.installationId)).toEqual(PACK_TOOLS);
    const cred = await w.cli(["bot", "credential", "--installation", other, "--workspace", "default"]);
    expect(cred.code).toBe(0);
    const c = startContainer(containerEnv({ token: cred.stdout.trim(), stateDir: freshStateDir(), port: 1 }));
    expect(await c.exit).toBe(1);
    expect(plainLines(c.stderr()).filter((l) => !l.startsWith("svc proxy serve:"))).toEqual([
      `registering the packs' tools failed; refusing to start: HTTP 409: tool "crm.lookup_customer" is already registered in the workspace by another installation, ${w.installationId} (helpdesk); rename the tool in the pack or remove the other registration (1 attempt)`,
    ]);
    // nothing changed for either installation
    const status = JSON.parse((await w.cli(["bot", "status", "--installation", other, "--json"])).stdout);
    expect(status.tool_count).toBe(0);
    expect(await packToolsOf(w.installationId)).toEqual(PACK_TOOLS);
  });

  test("a control-plane URL ending in /api/v1 is refused; the tool sync itself fails with the 404 message", async () => {
    const w = await booted();
    const bad = `${w.cp.url}/api/v1`;
    const c = startContainer(containerEnv({ token: w.runtimeToken, stateDir: freshStateDir(), port: 1, url: bad }));
    expect(await c.exit).toBe(1);
    const line = plainLines(c.stderr()).find((l) => l.startsWith("runtime bootstrap failed:"));
    expect(line).toContain("ends in /api/v1");
    // the same URL given to the tool sync (svc boot sync, what the container runs after the proxy)
    const sync = Bun.spawnSync([w.bin, "boot", "sync"], {
      env: {
        PATH: process.env.PATH!,
        SVC_RUNTIME_TOKEN: w.runtimeToken,
        SVC_RUNTIME_CONTROL_PLANE_URL: bad,
        SVC_CHATUI_TOOL_PACKS: "acme_tools",
        SVC_CHATUI_PYTHON: c.env.SVC_CHATUI_PYTHON!,
        PYTHONPATH: c.env.PYTHONPATH!,
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(sync.exitCode).toBe(1);
    expect(sync.stderr.toString()).toContain("registering the packs' tools failed; refusing to start: HTTP 404");
    expect(sync.stderr.toString()).toContain("it ends in /api/v1: remove that suffix");
  });

  test("after svc bot credential --rotate, a container restarted with the old token fails with 401", async () => {
    const w = await booted();

    const old = w.runtimeToken;
    const rotated = await w.cli(["bot", "credential", "--installation", w.installationId, "--workspace", "default", "--rotate"]);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout.trim()).toMatch(/^svc_rt_/);
    expect(rotated.stdout.trim()).not.toBe(old);
    // the running container is restarted (its state volume kept) without updating the secret
    const c0 = w.container!;
    expect(await stopContainer(c0)).toBe(0);
    w.container = null;
    const restarted = startContainer({ ...c0.env });
    expect(await restarted.exit).toBe(1);
    // Either the tool sync (PUT /runtime/tools) is refused while the proxy still decides on its
    // last good bundle, or the proxy's own bootstrap is refused first; both are the 401.
    const lines = plainLines(restarted.stderr()).filter((l) => !l.startsWith("svc proxy serve:")); // the proxy's own line, passed through
    expect(lines).toHaveLength(1);
    expect([
      "registering the packs' tools failed; refusing to start: HTTP 401: the runtime token (SVC_RUNTIME_TOKEN) is wrong or was rotated; get a new one with `svc bot credential --installation <id> --workspace <ws> --rotate` piped to your secret manager, then restart the container (1 attempt)",
      "runtime bootstrap failed: svc proxy serve: the control plane refused the runtime token (401 on bootstrap): SVC_RUNTIME_TOKEN is wrong or was rotated",
    ]).toContain(lines[0]!);
    // a fresh volume with the old token: the bootstrap itself is refused
    const fresh = startContainer(containerEnv({ token: old, stateDir: freshStateDir(), port: 1 }));
    expect(await fresh.exit).toBe(1);
    expect(plainLines(fresh.stderr()).filter((l) => !l.startsWith("svc proxy serve:"))).toEqual([
      "runtime bootstrap failed: svc proxy serve: the control plane refused the runtime token (401 on bootstrap): SVC_RUNTIME_TOKEN is wrong or was rotated",
    ]);
  });
});
