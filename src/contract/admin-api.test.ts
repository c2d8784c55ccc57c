// The admin answers are declared once (admin-api.ts and its resource modules): the control
// plane's routes declare them as their response schemas (so the OpenAPI document carries the
// real bodies, and an answer that breaks one is a 500 in every route test), and the CLI and the
// console import the Static types, keeping no hand-written copy under the same name.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { Value } from "@sinclair/typebox/value";
import * as contract from "./admin-api.ts";
import { OPENAPI_PATH } from "../controlplane/app.ts";
import { testControlPlane } from "../controlplane/testing.ts";
import { addInstallation } from "../controlplane/runtime/fixtures.ts";
import { signInSession } from "../controlplane/auth/test-fixtures.ts";
import { DOCUMENTED } from "./documented-operations.ts";

const src = resolve(import.meta.dir, "..");
type Name = keyof typeof contract;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

describe("admin answers, one contract", () => {
  test("the CLI and the console declare none of the contract's types as their own object type", () => {
    const names = Object.keys(contract).filter((n) => /^[A-Z]/.test(n));
    expect(names).toEqual(
      expect.arrayContaining([
        "Agent",
        "ApiToken",
        "AuditKey",
        "Group",
        "Installation",
        "InstallationStatus",
        "LoginRequest",
        "Me",
        "Member",
        "Policy",
        "RemoteIdentity",
        "Replica",
        "User",
        "Workspace",
        "AuditRecordView",
        "UsageRow",
        "Budget",
        "ModelProfile",
        "Readiness",
        "Settings",
        "Sink",
        "ToolServer",
        "DirectorySyncReport",
        "RecoveryRequest",
        "Activity",
        "RetentionReport",
        "RetentionRun",
        "RuntimeRecipient",
        "InstalledTool",
      ]),
    );
    const copies: string[] = [];
    for (const file of [...sources(join(src, "cli")), ...sources(join(src, "controlplane/console"))]) {
      const text = readFileSync(file, "utf8");
      for (const name of names) if (new RegExp(`\\btype\\s+${name}\\s*=\\s*\\{|\\binterface\\s+${name}\\b`).test(text)) copies.push(`${file.slice(src.length + 1)}: ${name}`);
    }
    expect(copies).toEqual([]);
  });

  test("the OpenAPI document declares each contract schema as its operation's success body", async () => {
    const cp = await testControlPlane();
    const doc = (await cp.call("GET", OPENAPI_PATH, { token: null })).json;
    const wrong: string[] = [];
    for (const [method, path, status, name] of DOCUMENTED) {
      const schema = doc.paths?.[path]?.[method]?.responses?.[status]?.content?.["application/json"]?.schema;
      const want = Object.keys((contract[name] as { properties?: object }).properties ?? {}).sort();
      if (
        !schema ||
        Object.keys(schema.properties ?? {})
          .sort()
          .join() !== want.join()
      )
        wrong.push(`${method} ${path} ${status}: ${JSON.stringify(schema)?.slice(0, 80)}`);
    }
    expect(wrong).toEqual([]);
    // Every operation documents its success answer: none falls back to the generic 2XX.
    const generic = Object.entries(doc.paths as Record<string, Record<string, { responses: object }>>).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => "2XX" in op.responses)
        .map(([method]) => `${method} ${path}`),
    );
    expect(generic).toEqual([]);
    // Elysia's document turns number literals (`version: 1 | 2`) into a string enum the answer
    // then breaks (schemathesis found one): no schema may say so.
    const stringEnums: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== "object") return;
      const n = node as { type?: unknown; enum?: unknown };
      if (n.type === "string" && Array.isArray(n.enum) && n.enum.some((v) => typeof v !== "string")) stringEnums.push(at);
      for (const [k, v] of Object.entries(node)) walk(v, `${at}/${k}`);
    };
    walk(doc.paths, "");
    expect(stringEnums).toEqual([]);
    const fetch = doc.paths["/api/v1/organizations/{org}/audit-recovery-requests/{id}/fetch"].post.responses["200"].content;
    expect(Object.keys(fetch)).toEqual(["application/octet-stream"]);
  });

  test("the control plane's answers match the contract", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const policy = await cp.call("POST", cp.org("/policies"), { body: { workspace: "default", name: "p1", src: "*", dst: "tool:crm.lookup", effect: "permit" } });
    const checks: Array<[Name, unknown]> = [
      ["Me", (await cp.call("GET", "/api/v1/me")).json],
      ["WorkspaceList", (await cp.call("GET", cp.org("/workspaces"))).json],
      ["AuditKeyList", (await cp.call("GET", cp.org("/audit-encryption-keys"))).json],
      ["InstallationList", (await cp.call("GET", cp.org("/installations"))).json],
      ["InstallationStatus", (await cp.call("GET", cp.org(`/installations/${inst.installationId}`))).json],
      ["AgentList", (await cp.call("GET", cp.org(`/installations/${inst.installationId}/agents`))).json],
      ["Agent", (await cp.call("POST", cp.org("/agents"), { body: { workspace: "default", name: "second" } })).json],
      ["PolicyWritten", policy.json],
      ["PolicyList", (await cp.call("GET", cp.org("/policies"))).json],
      ["PolicyApplyResult", (await cp.call("POST", cp.org("/policies/apply"), { body: { workspace: "default", policies: [], dry_run: true } })).json],
    ];
    const user = await cp.call("POST", cp.org("/users"), { body: { email: "ana@example.com", display_name: "Ana" } });
    const login = await cp.call("POST", "/api/v1/auth/login-requests", { token: null, body: {} });
    checks.push(
      ["User", user.json],
      ["UserList", (await cp.call("GET", cp.org("/users"))).json],
      ["User", (await cp.call("POST", cp.org(`/users/${user.json.id}/disable`))).json],
      ["RemoteIdentity", (await cp.call("POST", cp.org(`/users/${user.json.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "owui-1" } })).json],
      ["RemoteIdentityList", (await cp.call("GET", cp.org("/remote-identities"))).json],
      ["Group", (await cp.call("POST", cp.org("/groups"), { body: { name: "sales" } })).json],
      ["GroupList", (await cp.call("GET", cp.org("/groups"))).json],
      ["Member", (await cp.call("POST", cp.org("/members"), { body: { email: "bo@example.com", role: "admin" } })).json],
      ["MemberList", (await cp.call("GET", cp.org("/members"))).json],
      ["IssuedApiToken", (await cp.call("POST", cp.org("/api-tokens"), { body: { name: "ci" } })).json],
      ["ApiTokenList", (await cp.call("GET", cp.org("/api-tokens"))).json],
      ["Invite", (await cp.call("POST", cp.org("/invites"), { body: { email: "chat@example.com" } })).json],
      ["LoginRequest", login.json],
      ["LoginRequestView", (await cp.call("GET", `/api/v1/auth/login-requests/${login.json.id}`)).json],
      ["Settings", (await cp.call("GET", cp.org("/settings"))).json],
      ["Settings", (await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 30 } })).json],
      ["Budget", (await cp.call("POST", cp.org("/budgets"), { body: { name: "b1", scope: "agent", target: inst.agentId, period: "month", unit: "tokens", limit: 1000 } })).json],
      ["BudgetList", (await cp.call("GET", cp.org("/budgets"))).json],
      ["UsageReport", (await cp.call("GET", cp.org("/usage?by=user"))).json],
      ["UsageSeries", (await cp.call("GET", cp.org("/usage/series?by=model"))).json],
      ["AuditRecordPage", (await cp.call("GET", cp.org("/audit-records"))).json],
      ["ModelProfileList", (await cp.call("GET", cp.org("/model-profiles"))).json],
      ["SinkList", (await cp.call("GET", cp.org("/siem-sinks"))).json],
      ["ToolServerList", (await cp.call("GET", cp.org("/tool-servers"))).json],
      ["RecoveryRequestList", (await cp.call("GET", cp.org("/audit-recovery-requests"))).json],
      ["RecoveryPolicy", (await cp.call("GET", cp.org("/audit-recovery-policy"))).json],
      ["RecoveryPolicy", (await cp.call("PUT", cp.org("/audit-recovery-policy"), { body: { approver_min_age_hours: 12 } })).json],
      ["NoticeList", (await cp.call("GET", cp.org("/notices"))).json],
      ["Activity", (await cp.call("GET", cp.org("/audit-activity"))).json],
      ["RetentionRun", (await cp.call("POST", cp.org("/audit-retention/run"))).json],
      ["RetentionRun", (await cp.call("GET", cp.org("/audit-retention/run"))).json],
      ["RuntimeRecipientList", (await cp.call("GET", cp.org("/runtime-recipients?workspace=default"))).json],
      ["InstalledToolList", (await cp.call("GET", cp.org(`/installations/${inst.installationId}/tools`))).json],
      ["Session", (await signInSession(cp)).body],
      ["RuntimeCredential", (await cp.call("POST", cp.org(`/installations/${inst.installationId}/credential`), { body: { rotate: true } })).json],
      ["PolicyBundle", (await cp.call("GET", cp.org(`/installations/${inst.installationId}/policy-bundle`))).json],
      ["Checkpoint", (await cp.call("POST", cp.org("/audit-checkpoints"))).json],
      ["CheckpointList", (await cp.call("GET", cp.org("/audit-checkpoints"))).json],
      ["ChainFlagList", (await cp.call("GET", cp.org("/audit-chain-flags"))).json],
    );
    for (const [name, body] of checks) expect({ name, errors: [...Value.Errors(contract[name] as never, body)].map((e) => `${e.path} ${e.message}`) }).toEqual({ name, errors: [] });
    expect((checks[3]![1] as { installations: unknown[] }).installations.length).toBe(1);
    expect((checks[8]![1] as { policies: unknown[] }).policies.length).toBe(1);
    expect(checks.filter(([name]) => name.endsWith("List")).map(([name, body]) => [name, Object.values(body as object)[0].length > 0])).toEqual(
      expect.arrayContaining([
        ["UserList", true],
        ["RemoteIdentityList", true],
        ["GroupList", true],
        ["MemberList", true],
        ["ApiTokenList", true],
        ["BudgetList", true],
      ]),
    );
  });
});
