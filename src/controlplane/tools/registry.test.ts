import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { eq } from "drizzle-orm";
import { ToolConflictProblem } from "../../contract/runtime-api.ts";
import { tables } from "../db/index.ts";
import { getOrganization } from "../organizations/service.ts";
import { testControlPlane } from "../testing.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { toolsOfInstallation } from "./lookup.ts";
import { diffTools, duplicateNames, normalizeCapabilities } from "./registry.ts";

const tool = (name: string, access: "read" | "write" = "read", required_capabilities: string[] = [], toolkit_id?: string) => ({
  name,
  access,
  required_capabilities,
  ...(toolkit_id ? { toolkit_id } : {}),
});

describe("tool sync, pure parts", () => {
  test("diffTools sorts names into added, updated, removed and unchanged", () => {
    const r = (name: string, access: "read" | "write" = "read", caps: string[] = [], toolkitId: string | null = null) => ({ name, access, requiredCapabilities: caps, toolkitId });
    const d = diffTools([r("a"), r("b"), r("c"), r("d", "read", ["x"]), r("e", "read", [], "k1")], [r("a"), r("b", "write"), r("d", "read", ["x", "y"]), r("e", "read", [], "k2"), r("f")]);
    expect(d.added.map((t) => t.name)).toEqual(["f"]);
    expect(d.updated.map((t) => t.name)).toEqual(["b", "d", "e"]);
    expect(d.removed).toEqual(["c"]);
    expect(d.unchanged).toBe(1);
  });

  test("duplicate names and capability normalization", () => {
    expect(duplicateNames([tool("a"), tool("b"), tool("a"), tool("c"), tool("b")])).toEqual(["a", "b"]);
    expect(normalizeCapabilities(["net", " fs ", "net", ""])).toEqual(["fs", "net"]);
  });
});

describe("PUT /runtime/tools", () => {
  test("counts added, updated, removed and unchanged across syncs, and bumps the revision only on change", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const put = async (tools: unknown[]) => cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools, image_version: "0.1.3" } });
    const rev = async () => (await getOrganization(cp.deps.db, cp.orgId)).revision;

    const r0 = await rev();
    const first = await put([tool("crm.lookup"), tool("crm.update", "write", ["crm"]), tool("mail.send", "write")]);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ added: 3, removed: 0, unchanged: 0, updated: 0, tool_count: 3 });
    const r1 = await rev();
    expect(r1).toBeGreaterThan(r0);

    const same = await put([tool("mail.send", "write"), tool("crm.update", "write", ["crm"]), tool("crm.lookup")]);
    expect(same.json).toEqual({ added: 0, removed: 0, unchanged: 3, updated: 0, tool_count: 3 });
    expect(await rev()).toBe(r1);

    const changed = await put([tool("crm.lookup", "read", [], "crm-kit"), tool("crm.update", "read", ["crm"]), tool("files.read")]);
    expect(changed.json).toEqual({ added: 1, removed: 1, unchanged: 0, updated: 2, tool_count: 3 });
    expect(await rev()).toBeGreaterThan(r1);
    expect(await toolsOfInstallation(cp.deps.db, inst.installationId)).toEqual([
      { name: "crm.lookup", access: "read", required_capabilities: [] },
      { name: "crm.update", access: "read", required_capabilities: ["crm"] },
      { name: "files.read", access: "read", required_capabilities: [] },
    ]);

    const cleared = await put([]);
    expect(cleared.json).toEqual({ added: 0, removed: 3, unchanged: 0, updated: 0, tool_count: 0 });
    expect(await toolsOfInstallation(cp.deps.db, inst.installationId)).toEqual([]);
  });

  test("409 tool_conflict names the other installation and changes nothing", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp, { name: "helpdesk" });
    const b = await addInstallation(cp, { name: "sales" });
    await cp.call("PUT", "/api/v1/runtime/tools", { token: a.token, body: { tools: [tool("crm.update", "write")] } });
    await cp.call("PUT", "/api/v1/runtime/tools", { token: b.token, body: { tools: [tool("mail.send")] } });
    const rev = (await getOrganization(cp.deps.db, cp.orgId)).revision;

    const res = await cp.call("PUT", "/api/v1/runtime/tools", { token: b.token, body: { tools: [tool("files.read"), tool("crm.update", "write")] } });
    expect(res.status).toBe(409);
    expect(res.json.code).toBe("tool_conflict");
    expect(res.json.detail).toContain('"crm.update"');
    expect(res.json.detail).toContain(a.installationId);
    expect(res.json.detail).toContain("helpdesk");
    // The contract's 409 body, which the boot tool sync checks before naming tool and holder.
    expect(Value.Check(ToolConflictProblem, res.json)).toBe(true);
    expect(res.json).toMatchObject({ tool: "crm.update", holder: { installation_id: a.installationId, installation_name: "helpdesk" } });
    expect((await toolsOfInstallation(cp.deps.db, b.installationId)).map((t) => t.name)).toEqual(["mail.send"]);
    expect((await toolsOfInstallation(cp.deps.db, a.installationId)).map((t) => t.name)).toEqual(["crm.update"]);
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBe(rev);
  });

  test("409 names an admin when the tool was registered by an admin", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    await cp.deps.db.insert(tables(cp.deps.db).tools).values({ workspaceId: cp.workspaceId, name: "db.query", installationId: null, access: "read", requiredCapabilities: [], updatedAt: 1 });
    const res = await cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools: [tool("db.query")] } });
    expect(res.status).toBe(409);
    expect(res.json.detail).toContain("by an admin");
    expect(Value.Check(ToolConflictProblem, res.json)).toBe(true);
    expect(res.json).toMatchObject({ tool: "db.query", holder: { admin: true } });
    expect(await toolsOfInstallation(cp.deps.db, inst.installationId)).toEqual([]);
  });

  test("the same name in another workspace, or left by a deleted installation, is not a conflict", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    await cp.call("PUT", "/api/v1/runtime/tools", { token: a.token, body: { tools: [tool("crm.update")] } });
    await cp.deps.db
      .update(tables(cp.deps.db).installations)
      .set({ deletedAt: 1 })
      .where(eq(tables(cp.deps.db).installations.id, a.installationId));
    const b = await addInstallation(cp);
    const res = await cp.call("PUT", "/api/v1/runtime/tools", { token: b.token, body: { tools: [tool("crm.update")] } });
    expect(res.status).toBe(200);
    expect((await toolsOfInstallation(cp.deps.db, b.installationId)).map((t) => t.name)).toEqual(["crm.update"]);

    const ws2 = "ws_OTHER00000000000000000000000";
    await cp.deps.db.insert(tables(cp.deps.db).workspaces).values({ id: ws2, orgId: cp.orgId, name: "second" });
    const c = await addInstallation(cp, { workspaceId: ws2 });
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token: c.token, body: { tools: [tool("crm.update")] } })).status).toBe(200);
  });

  test("required_capabilities may be left out of an entry (optional in a pack's declaration)", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const res = await cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools: [{ name: "crm.lookup", access: "read" }] } });
    expect(res.status).toBe(200);
    expect(await toolsOfInstallation(cp.deps.db, inst.installationId)).toEqual([{ name: "crm.lookup", access: "read", required_capabilities: [] }]);
  });

  test("422 for duplicate names in one manifest and for malformed entries; nothing changes", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const dup = await cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools: [tool("a.b"), tool("c"), tool("a.b", "write")] } });
    expect(dup.status).toBe(422);
    expect(dup.json.detail).toContain('"a.b"');
    const bad = await cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools: [{ name: "x", access: "delete" }] } });
    expect(bad.status).toBe(422);
    expect(bad.json.code).toBe("validation_failed");
    expect(await toolsOfInstallation(cp.deps.db, inst.installationId)).toEqual([]);
  });
});
