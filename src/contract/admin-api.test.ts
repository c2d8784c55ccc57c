// The admin answers are declared once (admin-api.ts): the CLI and the console import them and
// keep no hand-written copy under the same name; the control plane answers match them.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { Value } from "@sinclair/typebox/value";
import * as contract from "./admin-api.ts";
import { testControlPlane } from "../controlplane/testing.ts";
import { addInstallation } from "../controlplane/runtime/fixtures.ts";

const src = resolve(import.meta.dir, "..");

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
    expect(names).toEqual(expect.arrayContaining(["AuditKey", "Installation", "InstallationStatus", "Me", "Replica", "Workspace"]));
    const copies: string[] = [];
    for (const file of [...sources(join(src, "cli")), ...sources(join(src, "controlplane/console"))]) {
      const text = readFileSync(file, "utf8");
      for (const name of names) if (new RegExp(`\\btype\\s+${name}\\s*=\\s*\\{|\\binterface\\s+${name}\\b`).test(text)) copies.push(`${file.slice(src.length + 1)}: ${name}`);
    }
    expect(copies).toEqual([]);
  });

  test("the control plane's answers match the contract", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const checks: Array<[keyof typeof contract, unknown]> = [
      ["Me", (await cp.call("GET", "/api/v1/me")).json],
      ["WorkspaceList", (await cp.call("GET", cp.org("/workspaces"))).json],
      ["AuditKeyList", (await cp.call("GET", cp.org("/audit-encryption-keys"))).json],
      ["InstallationList", (await cp.call("GET", cp.org("/installations"))).json],
      ["InstallationStatus", (await cp.call("GET", cp.org(`/installations/${inst.installationId}`))).json],
    ];
    for (const [name, body] of checks) expect({ name, errors: [...Value.Errors(contract[name] as never, body)].map((e) => e.path) }).toEqual({ name, errors: [] });
    expect((checks[3]![1] as { installations: unknown[] }).installations.length).toBe(1);
  });
});
