// Shared by the console's browser tests: real Chromium (Debian's /usr/bin/chromium through
// playwright-core) against a real control-plane process. Every request a page makes is
// recorded; anything not on a loopback test server is aborted and reported, so a test can
// assert that the console loads nothing from the internet.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page, chromium } from "playwright-core";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { newId } from "../../src/contract/ids.ts";
import { type ControlPlaneProcess, REPO, callApi } from "../support/controlplane-process.ts";

export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
export const SCREENSHOTS = join(REPO, "test-artifacts/screenshots");

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.SVC_CHROMIUM ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

export type TestPage = { page: Page; context: BrowserContext; offsite: string[] };

/** Each page's latest requests: method, path, and the status or failure, for a failed wait's message. */
const traffic = new WeakMap<Page, string[]>();
const TRAFFIC_KEPT = 12;

function recordTraffic(page: Page): void {
  const seen: string[] = [];
  traffic.set(page, seen);
  const started = new Map<object, number>();
  const push = (line: string) => {
    seen.push(line);
    if (seen.length > TRAFFIC_KEPT) seen.shift();
  };
  const path = (url: string) => (url.startsWith("data:") ? "data:…" : new URL(url).pathname);
  page.on("request", (r) => {
    started.set(r, Date.now());
    push(`${new Date().toISOString().slice(11, 23)} → ${r.method()} ${path(r.url())}`);
  });
  page.on("response", (r) =>
    push(`${new Date().toISOString().slice(11, 23)} ← ${r.status()} ${r.request().method()} ${path(r.url())} after ${Date.now() - (started.get(r.request()) ?? Date.now())} ms`),
  );
  page.on("requestfailed", (r) => push(`${new Date().toISOString().slice(11, 23)} ✗ ${r.method()} ${path(r.url())}: ${r.failure()?.errorText ?? "failed"}`));
}

/**
 * The page's refusal banner (role "alert") text. When none appears within Playwright's 30 s, the
 * error says what the page showed instead, its form fields, its latest requests with their
 * answers, and the control plane's last log lines: a slow answer, a request never sent and a
 * page without a banner fail differently.
 */
export async function alertText(page: Page, cp: ControlPlaneProcess): Promise<string> {
  try {
    return (await page.getByRole("alert").textContent()) ?? "";
  } catch (e) {
    const fields = await page
      .locator("input, select, textarea")
      .evaluateAll((els) => els.map((el) => `${(el as HTMLInputElement).name}=${JSON.stringify((el as HTMLInputElement).value)} valid=${(el as HTMLInputElement).validity?.valid}`))
      .catch(() => []);
    const content = await page.content().catch((err: unknown) => `(unreadable: ${String(err)})`);
    throw new Error(
      [
        `no refusal banner at ${page.url()} (now ${new Date().toISOString().slice(11, 23)})`,
        `requests: ${(traffic.get(page) ?? []).join("; ")}`,
        `fields: ${fields.join(", ")}`,
        `page: ${content.replace(/\s+/g, " ").slice(0, 2000)}`,
        `control plane: ${cp.logs().slice(-2000)}`,
      ].join("\n"),
      { cause: e },
    );
  }
}

/** A fresh browser context (own cookies); requests off the loopback test servers are blocked and listed. */
export async function openPage(browser: Browser, opts: { javaScript?: boolean; allowHosts?: string[] } = {}): Promise<TestPage> {
  const context = await browser.newContext({ javaScriptEnabled: opts.javaScript ?? true, viewport: { width: 1360, height: 900 }, colorScheme: "light" });
  const offsite: string[] = [];
  const allowed = new Set(["127.0.0.1", "localhost", ...(opts.allowHosts ?? [])]);
  await context.route("**/*", async (route) => {
    const u = new URL(route.request().url());
    if (u.protocol === "data:" || allowed.has(u.hostname)) return route.continue();
    offsite.push(u.toString());
    return route.abort();
  });
  const page = await context.newPage();
  recordTraffic(page);
  return { page, context, offsite };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export function ownerPassword(cp: ControlPlaneProcess): string {
  return readFileSync(join(cp.dataDir, "initial-owner-password"), "utf8").trim();
}

export async function signIn(page: Page, cp: ControlPlaneProcess, email: string, password: string, path = "/sign-in"): Promise<void> {
  await page.goto(cp.url + path);
  await page.getByLabel("Email", { exact: true }).fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((u) => u.pathname !== "/sign-in");
}

/** Calls the JSON API with the owner's API token (or another bearer token). */
export async function api(cp: ControlPlaneProcess, method: string, path: string, body?: unknown, token: string | null = cp.token): Promise<{ status: number; json: any }> {
  return callApi(cp.url, method, path, body, token);
}

export const org = (cp: ControlPlaneProcess, path: string) => `/api/v1/organizations/${cp.orgId}${path}`;

export async function ageRecipient(): Promise<string> {
  return identityToRecipient(await generateX25519Identity());
}

export type SeededRuntime = { agentId: string; installationId: string; runtimeToken: string; replicaId: string; workspaceId: string };

/** An agent, an installation with a runtime token, one bootstrapped replica and a heartbeat. */
export async function seedRuntime(cp: ControlPlaneProcess, name = "helpdesk"): Promise<SeededRuntime> {
  const agent = await api(cp, "POST", org(cp, "/agents"), { name: `${name} agent`, workspace: "default" });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
  const inst = await api(cp, "POST", org(cp, "/installations"), { platform: "chatui", name, agent_id: agent.json.id, workspace: "default" });
  if (inst.status !== 201) throw new Error(`installation: ${inst.status} ${JSON.stringify(inst.json)}`);
  const cred = await api(cp, "POST", org(cp, `/installations/${inst.json.id}/credential`), { rotate: false });
  if (cred.status !== 200 && cred.status !== 201) throw new Error(`credential: ${cred.status} ${JSON.stringify(cred.json)}`);
  const runtimeToken: string = cred.json.token;
  const replicaId = newId("replica");
  const boot = await api(cp, "POST", "/api/v1/runtime/bootstrap", { replica_id: replicaId, credential_sync_recipient: await ageRecipient(), version: "0.1.30", hostname: "chat-1" }, runtimeToken);
  if (boot.status !== 200) throw new Error(`bootstrap: ${boot.status} ${JSON.stringify(boot.json)}`);
  const hb = await fetch(`${cp.url}/api/v1/runtime/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${runtimeToken}`, "content-type": "application/json", "x-svc-replica": replicaId },
    body: JSON.stringify({ replica_id: replicaId, state: "ready", policy_revision: 7, tool_count: 3, version: "0.1.30", spool_depth: 0, last_success: new Date().toISOString() }),
  });
  if (!hb.ok) throw new Error(`heartbeat: ${hb.status} ${await hb.text()}`);
  return { agentId: agent.json.id, installationId: inst.json.id, runtimeToken, replicaId, workspaceId: boot.json.workspace_id };
}

export function auditRecord(
  rt: SeededRuntime,
  cp: ControlPlaneProcess,
  o: { tool: string; decision: "permit" | "deny" | "ask"; keyIds?: string[]; userId?: string | null; remoteUserId?: string | null; ts?: string },
) {
  const encrypted = (o.keyIds ?? []).length > 0;
  // the id made at the record's time, as the proxy makes it (the control plane refuses one made far from it)
  const ts = o.ts ?? new Date().toISOString();
  return {
    id: newId("auditRecord", Date.parse(ts)),
    ts,
    kind: "tool",
    harness: "chatui",
    organization_id: cp.orgId,
    workspace_id: rt.workspaceId,
    installation_id: rt.installationId,
    agent_id: rt.agentId,
    replica_id: rt.replicaId,
    action: `tool:${o.tool}`,
    tool_name: o.tool,
    decision: o.decision,
    reason: o.decision === "permit" ? "policy" : "svc.denied",
    policy_revision: 7,
    subject: { user_id: o.userId ?? null, remote_user_id: o.remoteUserId ?? "chat-user-1", via_installation: !o.userId },
    args_digest: `hmac-sha256:${"ab".repeat(32)}`,
    digest_key_id: "dk_TEST",
    recipient_key_ids: o.keyIds ?? [],
    ciphertext: encrypted ? Buffer.from("age-encryption.org/v1\n-> X25519 SECRETCIPHERTEXTMARKER\n").toString("base64") : null,
  };
}

export async function shipRecords(cp: ControlPlaneProcess, rt: SeededRuntime, records: unknown[]): Promise<void> {
  const res = await fetch(`${cp.url}/api/v1/runtime/audit-records`, {
    method: "POST",
    headers: { authorization: `Bearer ${rt.runtimeToken}`, "content-type": "application/json", "x-svc-replica": rt.replicaId },
    body: JSON.stringify({ records }),
  });
  if (!res.ok) throw new Error(`audit-records: ${res.status} ${await res.text()}`);
}

export async function claimLink(cp: ControlPlaneProcess, rt: SeededRuntime, remoteUserId: string, email?: string): Promise<string> {
  const res = await fetch(`${cp.url}/api/v1/runtime/claims`, {
    method: "POST",
    headers: { authorization: `Bearer ${rt.runtimeToken}`, "content-type": "application/json", "x-svc-replica": rt.replicaId },
    body: JSON.stringify({ remote_user_id: remoteUserId, ...(email ? { email, name: "Chat Person" } : {}) }),
  });
  if (!res.ok) throw new Error(`claims: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { url: string }).url;
}

/** Cookie header for raw requests made outside the browser with the context's cookies. */
export async function cookieHeader(context: BrowserContext): Promise<string> {
  return (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
}
