// What the console says about shadow policies (issue 17): the would-be decision on an audit
// row, and the recent calls a shadow policy would have decided differently. The policies page:
// the registered tools offered, the API's warnings shown, a confirmation before a delete.
import { describe, expect, test } from "bun:test";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { addInstallation } from "../../runtime/fixtures.ts";
import { testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { html } from "../html.ts";
import { browser } from "../test-browser.ts";
import { type AuditRecordView, shadowCell } from "./audit.ts";
import { shadowChanges } from "./policies.ts";

const rec = (over: Partial<AuditRecordView> = {}): AuditRecordView => ({
  id: "rec_01",
  ts: "2026-11-23T10:00:00.000Z",
  received_at: "2026-11-23T10:00:01.000Z",
  harness: "chatui",
  organization_id: "org_1",
  workspace_id: "ws_1",
  replica_id: null,
  model: null,
  policy_revision: 1,
  ref: null,
  outcome: null,
  exit_code: null,
  kind: "tool",
  action: "tool:crm.credit",
  tool_name: "crm.credit",
  decision: "permit",
  reason: "policy",
  policy_id: "pol_P",
  installation_id: "inst_1",
  agent_id: "agt_1",
  subject: { user_id: "usr_1", email: "ada@example.com", remote_user_id: "fe-ada", via_installation: false },
  args_digest: null,
  digest_key_id: null,
  encryption: { mode: "digest-only" },
  ...over,
});

describe("shadow in the console", () => {
  test("an audit row says what the shadow policies would have done, marked when it differs", () => {
    expect(shadowCell(rec())).toBe("");
    const changed = String(shadowCell(rec({ shadow: { decision: "deny", policy_id: "pol_S", reason: 'Refused (svc.denied): policy "big" denies tool:crm.credit' } })));
    expect(changed).toContain("badge-warn");
    expect(changed).toContain("shadow: would deny");
    expect(changed).toContain("pol_S");
    expect(changed).toContain("policy &quot;big&quot; denies");
    const same = String(shadowCell(rec({ shadow: { decision: "permit", policy_id: "pol_P", reason: "policy" } })));
    expect(same).toContain("shadow: same");
    expect(same).not.toContain("badge-warn");
  });

  test("the policies page lists the calls a shadow policy would have changed, by policy name", () => {
    const names = new Map([
      ["pol_P", { name: "sales may credit" }],
      ["pol_S", { name: "no big credits" }],
    ]);
    const table = String(shadowChanges([rec({ shadow: { decision: "deny", policy_id: "pol_S", reason: "x" } })], names));
    expect(table).toContain("sales may credit");
    expect(table).toContain("would deny");
    expect(table).toContain("no big credits");
    expect(table).toContain("ada@example.com");
    expect(String(shadowChanges([], names))).toContain("No recent call would have been decided differently");
  });
});

describe("the policies page and its form", () => {
  async function signedIn() {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp, { name: "helpdesk" });
    await cp.call("PUT", "/api/v1/runtime/tools", {
      token: inst.token,
      body: {
        tools: [
          { name: "crm.lookup_customer", access: "read" },
          { name: "crm.update", access: "write" },
        ],
      },
    });
    const b = browser(cp);
    await b.get("/sign-in");
    await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
    return { cp, b, inst };
  }

  test("the destination offers model:invoke and the registered tools; a policy on a tool no installation registered is marked", async () => {
    const { cp, b } = await signedIn();
    await cp.call("POST", cp.org("/policies"), { body: { name: "typo", src: "*", dst: "tool:crm.lookup_custmer", effect: "permit", workspace: "default" } });
    await cp.call("POST", cp.org("/policies"), { body: { name: "fine", src: "*", dst: "tool:crm.update", effect: "permit", workspace: "default" } });
    const page = await (await b.get("/policies")).text();
    expect(page).toContain('list="dst-options"');
    expect(page).toContain('<option value="model:invoke">');
    expect(page).toContain('<option value="tool:crm.lookup_customer">registered in default by helpdesk</option>');
    expect(page).toContain('<option value="tool:crm.update">registered in default by helpdesk</option>');
    const row = (name: string) => page.slice(page.lastIndexOf("<tr", page.indexOf(`<strong>${name}</strong>`)), page.indexOf("</tr>", page.indexOf(`<strong>${name}</strong>`)));
    expect(row("typo")).toContain("tool not registered");
    expect(row("fine")).not.toContain("tool not registered");
  });

  test("creating a policy on an unregistered tool shows the API's warning on the page (it was dropped before)", async () => {
    const { cp, b } = await signedIn();
    const res = await b.post("/policies", { name: "typo", src: "*", dst: "tool:crm.lookup_custmer", effect: "permit", workspace: cp.workspaceId, mode: "enforce", _csrf: await b.csrf() });
    expect(res.status).toBe(200);
    const page = await res.text();
    const api = (await cp.call("POST", cp.org("/policies"), { body: { name: "typo-2", src: "*", dst: "tool:crm.lookup_custmer", effect: "permit", workspace: "default" } })).json.warnings as string[];
    expect(api.length).toBe(1);
    expect(page).toContain("Policy created.");
    expect(page).toContain("data-warnings");
    expect(page).toContain(String(html`${api[0]!}`));
    // without a warning: the usual redirect
    const clean = await b.post("/policies", { name: "ok", src: "*", dst: "tool:crm.update", effect: "permit", workspace: cp.workspaceId, mode: "enforce", _csrf: await b.csrf() });
    expect([clean.status, clean.headers.get("location")]).toEqual([303, "/policies?done=created"]);
  });

  test("deleting asks first: the list links to a confirmation that holds the only delete form", async () => {
    const { cp, b } = await signedIn();
    const p = (await cp.call("POST", cp.org("/policies"), { body: { name: "chat", src: "*", dst: "model:invoke", effect: "permit", workspace: "default" } })).json;
    const list = await (await b.get("/policies")).text();
    expect(list).toContain(`href="/policies/${p.id}/delete"`);
    expect(list).not.toContain(`action="/policies/${p.id}/delete"`);
    const confirm = await (await b.get(`/policies/${p.id}/delete`)).text();
    expect(confirm).toContain("Delete policy &quot;chat&quot;?");
    expect(confirm).toContain("Calls it permits are denied from then on");
    expect(confirm).toContain(`action="/policies/${p.id}/delete"`);
    expect((await cp.call("GET", cp.org("/policies"))).json.policies).toHaveLength(1);
    const done = await b.post(`/policies/${p.id}/delete`, { _csrf: await b.csrf() });
    expect(done.headers.get("location")).toBe("/policies?done=deleted");
    expect((await cp.call("GET", cp.org("/policies"))).json.policies).toHaveLength(0);
    expect((await b.get("/policies/pol_NOPE/delete")).status).toBe(404);
  });
});
