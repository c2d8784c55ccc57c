// Escrow recovery (break-glass, issues 15 and 27) with the real svc binary against a real control
// plane: the escrow key is listed as kind escrow; the second owner requests; their own approval
// is refused; the sockpuppet path (an owner adds an admin with a password of their choosing,
// signs in as it, approves) is refused with the provenance code; the first owner's stale token
// is refused saying to run `svc login` again; after `svc login` (browser approval from a fresh
// session) the first owner, a member for more than 24 hours, approves; the requester fetches the
// plaintext once and a second fetch is refused. Every step, the refusals included, is an admin
// audit event that `svc audit list --kind admin` shows and `svc audit verify` covers; the
// control plane's log never holds the plaintext. Ages are set by moving rows back (recovery-support.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane, svcCommand, waitFor } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, cliEnv, createAgent, createInstallation, org, runtimeRecord, svc, tempHome } from "./cli-support.ts";
import { ageMemberships, ageSignIns, apiSignIn, tokenFrom } from "./recovery-support.ts";

let cp: ControlPlaneProcess;
let runtime: Awaited<ReturnType<typeof bootstrapRuntime>>;
let secondToken: string;
let puppetToken: string;
const home = tempHome();
const SECRET = "ACME-4711-confidential-arguments";
const SECOND = { email: "second.owner@example.com", password: "a long enough password for the second owner" };
const PUPPET = { email: "ops.helper@example.com", password: "a password the second owner chose" };

beforeAll(async () => {
  cp = await startControlPlane();
  const agent = await createAgent(cp);
  runtime = await bootstrapRuntime(cp, (await createInstallation(cp, agent)).id);
  // The first owner adds a second owner; the second owner adds an admin with a password of their choosing.
  expect((await api(cp, "POST", org(cp, "/members"), { email: SECOND.email, role: "owner", password: SECOND.password })).status).toBe(201);
  secondToken = await tokenFrom(cp, await apiSignIn(cp, SECOND.email, SECOND.password), "second");
  expect((await api(cp, "POST", org(cp, "/members"), { email: PUPPET.email, role: "admin", password: PUPPET.password }, secondToken)).status).toBe(201);
  puppetToken = await tokenFrom(cp, await apiSignIn(cp, PUPPET.email, PUPPET.password), "puppet");
  // A day and more later: age is not what refuses anyone below.
  await ageMemberships(cp, ["owner@example.com", SECOND.email, PUPPET.email], 25);
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  cleanup(home);
});

async function sealed(recipients: string[]): Promise<string> {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return Buffer.from(await e.encrypt(JSON.stringify({ arguments: { account: SECRET }, payload: null }))).toString("base64");
}

/** `svc login` in `home`, approved in the browser by a console session of the first owner signed in just now. */
async function svcLogin(): Promise<void> {
  const proc = Bun.spawn([...svcCommand(), "login", "--url", cp.url], { env: cliEnv(null, home), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let err = "";
  void (async () => {
    const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      err += new TextDecoder().decode(value);
    }
  })();
  await waitFor(() => /login\/approve\?request=(\S+)/.test(err), "the approve URL");
  const requestId = decodeURIComponent(/login\/approve\?request=(\S+)/.exec(err)![1]!);
  const session = await apiSignIn(cp, "owner@example.com", readFileSync(join(cp.dataDir, "initial-owner-password"), "utf8").trim());
  const approved = await fetch(`${cp.url}/api/v1/auth/login-requests/${requestId}/approve`, {
    method: "POST",
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
    body: "{}",
  });
  expect(approved.status).toBe(200);
  expect(await proc.exited).toBe(0);
}

test("self-approval, the sockpuppet and a stale sign-in are refused with their codes; the other owner approves after svc login; the requester fetches once; every step is recorded and verified", async () => {
  const customer = await identityToRecipient(await generateX25519Identity());
  const key = (await api(cp, "POST", org(cp, "/audit-encryption-keys"), { name: "security", public_key: customer })).json;
  const settings = (await api(cp, "PATCH", org(cp, "/settings"), { escrow_enabled: true })).json;
  expect(settings.escrow_active).toBe(true);

  // The escrow key is listed, marked as escrow.
  const listed = await svc(cp, ["audit", "keys", "list", "--json"], { home });
  expect(listed.code).toBe(0);
  const escrowKey = (JSON.parse(listed.stdout).keys as Array<{ id: string; kind: string; public_key: string; status: string }>).find((k) => k.kind === "escrow")!;
  expect(escrowKey).toMatchObject({ public_key: settings.escrow_recipient, status: "active" });
  expect((await svc(cp, ["audit", "keys", "list"], { home })).stdout).toMatch(new RegExp(`${escrowKey.id}\\s+escrow \\(service-held, break-glass\\)\\s+escrow\\s+active`));

  const escrowed = runtimeRecord(runtime, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id, escrowKey.id], ciphertext: await sealed([customer, escrowKey.public_key]) });
  const customerOnly = runtimeRecord(runtime, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id], ciphertext: await sealed([customer]) });
  expect((await api(cp, "POST", "/runtime/audit-records", { records: [escrowed, customerOnly] }, runtime.token)).json.inserted).toBe(2);
  const asSecond = { home, env: { SVC_TOKEN: secondToken } };

  // A record not encrypted to escrow is refused, naming why.
  const refused = await svc(cp, ["audit", "recover", "request", customerOnly.id, "--reason", "incident 4711"], asSecond);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("is not encrypted to the escrow key");
  expect(refused.stderr).toContain("record_not_escrowed");

  const requested = await svc(cp, ["audit", "recover", "request", escrowed.id, "--reason", "incident 4711: customer lost its identity", "--json"], asSecond);
  expect(requested.stderr).toBe("");
  expect(requested.code).toBe(0);
  const id = JSON.parse(requested.stdout).id as string;
  expect(id).toMatch(/^rrq_/);

  // The requester alone: approval refused, nothing to fetch.
  const self = await svc(cp, ["audit", "recover", "approve", id], asSecond);
  expect(self.code).toBe(1);
  expect(self.stderr).toContain("so you cannot approve it; another person must");
  expect(self.stderr).toContain("(recovery_self_approval)");
  const early = await svc(cp, ["audit", "recover", "fetch", id, "--stdout"], asSecond);
  expect(early.code).toBe(1);
  expect(early.stderr).toContain("recovery_not_approved");
  expect(early.stdout).toBe("");

  // The requester's own admin, signed in just now with the password the requester chose.
  const puppet = await svc(cp, ["audit", "recover", "approve", id], { home, env: { SVC_TOKEN: puppetToken } });
  expect(puppet.code).toBe(1);
  expect(puppet.stderr).toStartWith(`svc audit recover approve: ${PUPPET.email} cannot approve ${id}: ${PUPPET.email} was created as admin by ${SECOND.email} at `);
  expect(puppet.stderr.trim()).toEndWith(`an owner or admin whose membership ${SECOND.email} never granted must approve (recovery_approver_provenance)`);

  // The first owner's bootstrap token comes from a sign-in more than 5 minutes ago.
  await ageSignIns(cp, "owner@example.com", 10);
  const stale = await svc(cp, ["audit", "recover", "approve", id], { home });
  expect(stale.code).toBe(1);
  expect(stale.stderr.trim()).toEndWith(`; run \`svc login\` again (sign in afresh on the page it opens), then approve within 5 minutes: \`svc audit recover approve ${id}\` (recovery_stale_sign_in)`);
  expect(stale.stderr).toContain("your API token comes from a sign-in 10 minutes ago");

  // svc login, approved from a console session signed in just now: the approval goes through.
  await svcLogin();
  const approved = await svc(cp, ["audit", "recover", "approve", id], { home, auth: false });
  expect(approved.stderr).toBe("");
  expect(approved.code).toBe(0);
  expect(approved.stdout).toContain(`Approved ${id}: ${SECOND.email} may now fetch the plaintext of ${escrowed.id}, once.`);
  // The approver cannot fetch: only the requester.
  expect((await svc(cp, ["audit", "recover", "fetch", id, "--stdout"], { home, auth: false })).code).toBe(1);

  const outFile = join(home, "recovered.json");
  const fetched = await svc(cp, ["audit", "recover", "fetch", id, "--out", outFile], asSecond);
  expect(fetched.code).toBe(0);
  expect(JSON.parse(readFileSync(outFile, "utf8"))).toEqual({ arguments: { account: SECRET }, payload: null });
  expect(statSync(outFile).mode & 0o777).toBe(0o600);
  expect(fetched.stdout + fetched.stderr).not.toContain(SECRET);

  const again = await svc(cp, ["audit", "recover", "fetch", id, "--out", join(home, "again.json")], asSecond);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("recovery_consumed");
  expect(existsSync(join(home, "again.json"))).toBe(false);

  // Every step, the refusals included, is in the audit trail under kind admin (with the trail's other events).
  const events = await svc(cp, ["audit", "list", "--kind", "admin", "--action", "audit:recovery.*", "--json"], { home, auth: false });
  expect(events.code).toBe(0);
  const records = JSON.parse(events.stdout).records as Array<{ action: string; ref: string; kind: string; reason: string; admin: { result: string; code?: string; severity: string } }>;
  expect(records.map((r) => [r.action, r.admin.result, r.admin.code ?? null])).toEqual([
    ["audit:recovery.decrypt", "ok", null],
    ["audit:recovery.approve", "ok", null],
    ["audit:recovery.approve", "refused", "recovery_stale_sign_in"],
    ["audit:recovery.approve", "refused", "recovery_approver_provenance"],
    ["audit:recovery.approve", "refused", "recovery_self_approval"],
    ["audit:recovery.request", "ok", null],
  ]);
  for (const r of records) expect(r).toMatchObject({ kind: "admin", ref: escrowed.id, admin: { severity: "high" } });
  expect(records[1]!.reason).toContain("owner@example.com approved");
  expect(events.stdout).not.toContain(SECRET);
  const all = await svc(cp, ["audit", "list", "--kind", "admin", "--limit", "500", "--json"], { home, auth: false });
  expect(all.stdout).not.toContain(SECRET);
  const listedRequests = await svc(cp, ["audit", "recover", "list"], { home, auth: false });
  expect(listedRequests.stdout).toMatch(new RegExp(`${id}\\s+${escrowed.id}\\s+consumed\\s+${SECOND.email}\\s+owner@example.com`));

  // The events are chained: a checkpoint covers them and verify passes.
  expect((await api(cp, "POST", org(cp, "/audit-checkpoints"))).status).toBe(201);
  const signingKey = /^ {2}(ed25519:\S+)$/m.exec(cp.bootstrapOutput)![1]!;
  expect((await svc(cp, ["audit", "signing-key", "pin", signingKey], { home, auth: false })).code).toBe(0);
  const verified = await svc(cp, ["audit", "verify", "--json"], { home, auth: false });
  expect(verified.code).toBe(0);
  const report = JSON.parse(verified.stdout);
  expect(report).toMatchObject({ ok: true, state: "verified", uncovered: 0 });
  expect(report.covered).toBe(report.records);
  expect(report.records).toBeGreaterThanOrEqual(6);
  expect(cp.logs()).not.toContain(SECRET);
});

test("svc audit recover policy shows the rule; an owner lowers it and it says when that holds", async () => {
  const shown = await svc(cp, ["audit", "recover", "policy"], { home, auth: false });
  expect(shown.code).toBe(0);
  expect(shown.stdout).toContain("Approvers must have been members for at least 24 hours when a request is made, and signed in within the last 5 minutes.");
  const lowered = await svc(cp, ["audit", "recover", "policy", "--approver-min-age-hours", "2"], { home, auth: false });
  expect(lowered.code).toBe(0);
  expect(lowered.stdout).toContain("at least 24 hours");
  expect(lowered.stderr).toMatch(/Set to 2 hours: that holds for requests made from \d{4}-\d\d-\d\dT/);
  const bad = await svc(cp, ["audit", "recover", "policy", "--approver-min-age-hours", "soon"], { home, auth: false });
  expect(bad.code).toBe(2);
  const byAdmin = await svc(cp, ["audit", "recover", "policy", "--approver-min-age-hours", "0"], { home, env: { SVC_TOKEN: puppetToken } });
  expect(byAdmin.code).toBe(1);
  expect(byAdmin.stderr).toContain("(forbidden)");
});
