// The admin trail (issue 27), what the organization runs and decides: agents, installations and
// their runtime credentials, model profiles and their sealed keys, tool servers and their
// secrets, policies (with before and after, and an apply as one event), budgets, audit keys,
// settings (the escrow switch, retention) and retention runs, SIEM sinks, directory sync's
// configuration and runs (an admin's and the scheduler's). Each admin action through the API
// is exactly one admin event naming the owner, their address and user agent; secrets only as
// digests, and none of the raw ones anywhere the audit reaches, the SIEM's delivery included.
// Runs on SQLite, and on PostgreSQL with SVC_TEST_POSTGRES_URL.
import { afterAll, expect, test } from "bun:test";
import { retentionSettled } from "./retention-runs.ts";
import { ADMIN_ACTIONS } from "../../contract/admin-event.ts";
import { fakeReplica, sealKey } from "../auth/test-fixtures.ts";
import { getConfig } from "../directory-sync/config.ts";
import { startIfDue, stopRuns } from "../directory-sync/service.ts";
import { deliverDue } from "../sinks/deliver.ts";
import { syslogPri, otlpSeverity } from "../sinks/format.ts";
import { newRecipient } from "../runtime/fixtures.ts";
import { testTls } from "../../../test/support/tls.ts";
import { actingAsSystem, secretDigest } from "./admin-events.ts";
import { PEOPLE_ACTIONS, everyStreamed, scanForSecrets, trailWorld } from "./trail-fixtures.ts";

const tls = testTls();
const received: string[] = [];
const siem = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: tls.cert, key: tls.key }, fetch: async (req) => (received.push(await req.text()), Response.json({ text: "Success", code: 0 })) });
afterAll(async () => siem.stop(true));

const GUID = "11111111-2222-4333-8444-555555555555";

test("runtimes, profiles, tool servers, policies, budgets, audit keys, settings, sinks and directory sync: one event each, the right actor, no secret", async () => {
  const w = await trailWorld();
  const { cp, api, step, secrets } = w;
  await w.fresh();

  // Runtimes and their credentials: the token only as the digest its stored hash also starts with.
  const agent = (await step("agent.create", async () => api("POST", "/agents", { name: "helpdesk", workspace: "default" }))).out.json;
  const inst = (await step("installation.create", async () => api("POST", "/installations", { platform: "chatui", name: "helpdesk-bot", agent_id: agent.id, workspace: "default" }))).out.json;
  const issued = await step("runtime_credential.issue", async () => api("POST", `/installations/${inst.id}/credential`, {}));
  secrets.set("the first runtime token", issued.out.json.token);
  expect(issued.event.admin.after).toMatchObject({ token: secretDigest(issued.out.json.token) });
  const rotated = await step("runtime_credential.rotate", async () => api("POST", `/installations/${inst.id}/credential`, { rotate: true }));
  secrets.set("the rotated runtime token", rotated.out.json.token);
  expect(rotated.event.admin).toMatchObject({ before: { token: secretDigest(issued.out.json.token) }, after: { token: secretDigest(rotated.out.json.token) } });
  const replica = await fakeReplica(cp, inst.id);

  // Model profiles: the sealed key only as a digest.
  const sealed = await sealKey([replica.recipient], "sk-live-provider-key-1");
  const resealed = await sealKey([replica.recipient], "sk-live-provider-key-2");
  secrets.set("the provider key", "sk-live-provider-key-1").set("the second provider key", "sk-live-provider-key-2").set("the sealed key", sealed).set("the resealed key", resealed);
  const profile = await step("model_profile.create", async () =>
    api("POST", "/model-profiles", {
      display_name: "gateway",
      endpoint: "https://llm.example.com/v1",
      auth_type: "api_key",
      default_model: "gpt-x",
      workspace: "default",
      api_key_sealed: sealed,
      sealed_to: [replica.id],
    }),
  );
  expect(profile.event.admin.after).toMatchObject({ api_key_sealed: secretDigest(sealed), sealed_to: [replica.id] });
  const mp = profile.out.json.id as string;
  const rekeyed = await step("model_profile.api_key_set", async () => api("PUT", `/model-profiles/${mp}/api-key`, { api_key_sealed: resealed, sealed_to: [replica.id] }));
  expect(rekeyed.event.admin).toMatchObject({ before: { api_key_sealed: secretDigest(sealed) }, after: { api_key_sealed: secretDigest(resealed) } });
  await step("model_profile.prices_set", async () => api("PUT", `/model-profiles/${mp}/prices`, { prices: { "gpt-x": { prompt: 1, completion: 2 } } }));
  await step("model_profile.assign", async () => api("POST", `/model-profiles/${mp}/assign`, { agent_id: agent.id }));

  // Tool servers: the sealed secrets only as digests.
  const doc = JSON.stringify({ Authorization: "Bearer ghp_tool_server_secret" });
  const tsSealed = await sealKey([replica.recipient], doc);
  const tsResealed = await sealKey([replica.recipient], doc);
  secrets.set("the tool server's secret", "ghp_tool_server_secret").set("its sealed secrets", tsSealed).set("its resealed secrets", tsResealed);
  const server = (
    await step("tool_server.create", async () =>
      api("POST", "/tool-servers", {
        name: "github",
        transport: "http",
        url: "https://mcp.example.com/mcp",
        workspace: "default",
        secrets_sealed: tsSealed,
        secret_names: ["Authorization"],
        sealed_to: [replica.id],
      }),
    )
  ).out.json;
  const changed = await step("tool_server.update", async () => api("PATCH", `/tool-servers/${server.id}`, { url: "https://mcp2.example.com/mcp" }));
  expect(changed.event.admin).toMatchObject({ before: { url: "https://mcp.example.com/mcp" }, after: { url: "https://mcp2.example.com/mcp", secrets_sealed: secretDigest(tsSealed) } });
  await step("tool_server.secrets_set", async () => api("PUT", `/tool-servers/${server.id}/secrets`, { secrets_sealed: tsResealed, secret_names: ["Authorization"], sealed_to: [replica.id] }));
  await step("tool_server.tools_set", async () => api("PUT", `/tool-servers/${server.id}/tools`, { allowed_tools: ["search"], access_overrides: { search: "read" } }));
  await step("tool_server.assign", async () => api("POST", `/tool-servers/${server.id}/assign`, { agent_id: agent.id }));
  await step("tool_server.unassign", async () => api("DELETE", `/tool-servers/${server.id}/assignments/${agent.id}`));
  await step("tool_server.delete", async () => expect((await api("DELETE", `/tool-servers/${server.id}`)).status).toBe(204));

  // Policies, with before and after; an apply is one event for the whole set.
  const base = { src: "group:staff", dst: "model:invoke", effect: "permit", workspace: "default" };
  const pol = (await step("policy.create", async () => api("POST", "/policies", { ...base, name: "staff chat" }))).out.json;
  const upd = await step("policy.update", async () => api("PATCH", `/policies/${pol.id}`, { effect: "deny" }));
  expect(upd.event.admin).toMatchObject({ before: { id: pol.id, effect: "permit" }, after: { id: pol.id, effect: "deny" }, severity: "notice" });
  const other = (await api("POST", "/policies", { ...base, name: "scratch" })).json;
  await w.fresh();
  await step("policy.delete", async () => api("DELETE", `/policies/${other.id}`));
  const rule = { src: "group:staff", dst: "model:invoke", effect: "permit" };
  const applied = await step("policy.apply", async () =>
    api("POST", "/policies/apply", {
      workspace: "default",
      policies: [
        { ...rule, name: "staff chat" },
        { ...rule, name: "all chat", src: "*" },
      ],
    }),
  );
  expect(applied.event.admin).toMatchObject({ before: { policies: [{ name: "staff chat", effect: "deny" }] }, after: { plan: { create: [{ name: "all chat" }], update: [{ name: "staff chat" }] } } });
  expect((await api("POST", "/policies/apply", { workspace: "default", dry_run: true, policies: [] })).status).toBe(200);
  expect(await w.fresh()).toEqual([]); // a dry run changes nothing and tells nothing

  await step("budget.create", async () => api("POST", "/budgets", { name: "daily", scope: "agent", target: agent.id, period: "day", unit: "tokens", limit: 1000 }));
  await step("budget.delete", async () => api("DELETE", "/budgets/daily"));

  // Audit keys, the escrow switch and retention.
  const { recipient } = await newRecipient();
  const key = (await step("audit_key.create", async () => api("POST", "/audit-encryption-keys", { name: "security", public_key: recipient }))).out.json;
  const escrow = await step("settings.update", async () => api("PATCH", "/settings", { escrow_enabled: true }));
  expect(escrow.event.admin).toMatchObject({ before: { escrow_enabled: false }, after: { escrow_enabled: true }, severity: "high" });
  const retention = await step("settings.update", async () => api("PATCH", "/settings", { audit_retention_days: 30 }));
  expect(retention.event.admin).toMatchObject({ before: { audit_retention_days: null }, after: { audit_retention_days: 30 }, severity: "notice" });
  await step("audit_key.disable", async () => api("POST", `/audit-encryption-keys/${key.id}:disable`));
  const digest = await step("digest_key.rotate", async () => api("POST", "/audit-digest-keys"));
  expect(digest.event.admin).toMatchObject({ after: { current: digest.out.json.key.id }, severity: "high" });
  const assertion = await step("assertion_key.rotate", async () => api("POST", "/assertion-keys", {}));
  expect(assertion.event.admin).toMatchObject({ after: { current: assertion.out.json.key.id }, severity: "high" });
  const signing = await step("signing_key.rotate", async () => api("POST", "/audit-signing-key/rotate"));
  expect(signing.event.admin).toMatchObject({ after: { public_key: signing.out.json.public_key }, severity: "high" });
  // the run goes on in the background: its event is written once it is done
  const run = await step("audit_retention.run", async () => {
    const started = await api("POST", "/audit-retention/run");
    await retentionSettled(cp.orgId);
    return started;
  });
  expect(run.event.admin.after).toMatchObject({ retention_days: 30, deleted: 0 });

  // SIEM sinks: the secret only as a digest. This one backfills, and receives everything below.
  secrets.set("the sink's HMAC secret", "siem-hmac-secret-value-123").set("the other sink's secret", "another-siem-secret-4567");
  const sink = await step("siem_sink.create", async () =>
    api("POST", "/siem-sinks", { name: "splunk", kind: "webhook", endpoint: `https://127.0.0.1:${siem.port}/hec`, ca_pem: tls.ca, secret: "siem-hmac-secret-value-123", backfill: true }),
  );
  expect(sink.event.admin.after).toMatchObject({ secret: secretDigest("siem-hmac-secret-value-123"), kind: "webhook" });
  await api("POST", "/siem-sinks", { name: "spare", kind: "webhook", endpoint: "https://siem.example.com/hec", secret: "another-siem-secret-4567" });
  await w.fresh();
  const reformatted = await step("siem_sink.update", async () => api("PATCH", "/siem-sinks/spare", { format: "ecs" }));
  expect(reformatted.event.admin.before).toMatchObject({ options: {} });
  expect((reformatted.event.admin.before as { options: Record<string, unknown> }).options.format).toBeUndefined();
  expect(reformatted.event.admin.after).toMatchObject({ options: { format: "ecs" }, secret: secretDigest("another-siem-secret-4567") });
  await step("siem_sink.delete", async () => api("DELETE", "/siem-sinks/spare"));

  // Directory sync: its configuration (the client secret as a digest), an admin's run, the
  // scheduler's run (system:directory-sync). Graph is unreachable here: the runs fail, and say so.
  secrets.set("the directory client secret", "entra-client-secret-value");
  const settings = {
    tenant_id: GUID,
    client_id: GUID,
    app_id: GUID,
    client_secret: "entra-client-secret-value",
    dry_run: false,
    create_users: false,
    authority_url: "https://127.0.0.1:9",
    graph_url: "https://127.0.0.1:9",
  };
  const configured = await step("directory_sync.configure", async () => api("PUT", "/directory-sync", settings));
  expect(configured.event.admin.after).toMatchObject({ tenant_id: GUID, client_secret: secretDigest("entra-client-secret-value") });
  const ran = await step("directory_sync.run", async () => api("POST", "/directory-sync/run", {}));
  expect(ran.event.admin.after).toMatchObject({ status: "failed", errors: [expect.any(String)] });
  // Enabling starts a run now: the enable, and the run once it has ended.
  await step(
    "directory_sync.enable",
    async () => {
      await api("POST", "/directory-sync/enable");
      while ((await api("GET", "/directory-sync/report")).json.status === "running") await Bun.sleep(20);
    },
    undefined,
    ["directory_sync.run"],
  );
  w.advance(2 * 3600_000);
  const scheduled = await step(
    "directory_sync.run",
    async () => {
      expect(await startIfDue(cp.deps, (await getConfig(cp.deps.db, cp.orgId))!, actingAsSystem(cp.deps, "directory-sync"))).toBe(true);
      await stopRuns(cp.deps);
      while ((await api("GET", "/directory-sync/report")).json.status === "running") await Bun.sleep(20);
    },
    { id: "system:directory-sync", credential: { kind: "system", id: "directory-sync" }, ip: null },
  );
  expect(scheduled.event.admin.status).toBe(0);
  await step("directory_sync.disable", async () => api("POST", "/directory-sync/disable"));

  await step("installation.delete", async () => expect((await api("DELETE", `/installations/${inst.id}`)).status).toBe(204));

  // Every admin action of the catalogue is driven here or in admin-trail-people.test.ts, but
  // those with tests of their own: escrow recovery and its policy (escrow/routes.test.ts,
  // recovery-policy.test.ts), refusals (admin-refusals.test.ts) and tool servers' OAuth grants
  // (test/integration/mcp-oauth.test.ts: they need a real authorization server) and verification
  // runs (audit-chain/verification-seal.test.ts).
  const elsewhere = new Set<string>([
    ...PEOPLE_ACTIONS,
    "audit:recovery.request",
    "audit:recovery.approve",
    "audit:recovery.decrypt",
    "audit:recovery.policy",
    "access.refused",
    "access.refusals_suppressed",
    "tool_server.token_revoke",
    "tool_server.listing_connect",
    "tool_server.consent_refuse",
    "audit_verification.run",
  ]);
  expect(Object.keys(ADMIN_ACTIONS).filter((a) => !elsewhere.has(a) && !w.covered.has(a as never))).toEqual([]);

  // The SIEM got the admin events with their account; severity is mapped in every format.
  const records = await everyStreamed(cp, false);
  expect(await deliverDue(cp.deps, { owner: "trail", settleMs: 0 })).toBe(records.length);
  const events = received.flatMap((b) => b.split("\n").map((l) => JSON.parse(l)));
  expect(events.filter((e) => e.event.kind === "admin").length).toBe(records.length);
  const esc = events.find((e) => e.event.id === escrow.event.id);
  expect(esc).toMatchObject({
    fields: { severity: "high", action: "settings.update", actor_id: cp.accountId, result: "ok" },
    event: { admin: { actor: { ip: w.owner.ip, user_agent: w.owner.user_agent } } },
  });
  const high = records.find((r) => r.id === escrow.event.id)!;
  const info = records.find((r) => r.id === profile.event.id)!;
  expect([syslogPri(high), otlpSeverity(high).number, syslogPri(info), otlpSeverity(info).number]).toEqual([13 * 8 + 2, 17, 13 * 8 + 6, 9]);
  await scanForSecrets(cp, secrets);
  const delivered = received.join("\n");
  expect([...secrets].filter(([, v]) => delivered.includes(v)).map(([k]) => k)).toEqual([]);
}, 120_000);
