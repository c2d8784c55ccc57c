// bootstrap-admin never overwrites an earlier owner (issue 20): not their account, not the
// generated password file, not a token file; it refuses before creating anything.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TEST_POSTGRES_URL, freshPostgresDatabase } from "../../src/controlplane/db/test-store.ts";
import { cleanup, svcCommand } from "../support/controlplane-process.ts";

test("a second bootstrap-admin refuses to overwrite the first owner's password, account or token file", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-boot-"));
  try {
    const database = TEST_POSTGRES_URL ? { SVC_CP_DATABASE: await freshPostgresDatabase() } : {};
    const env = { ...process.env, XDG_CONFIG_HOME: join(dataDir, "config"), SVC_CP_DATA_DIR: dataDir, ...database } as Record<string, string>;
    const run = (...args: string[]) => Bun.spawnSync([...svcCommand(), "controlplane", "bootstrap-admin", ...args], { env, stdout: "pipe", stderr: "pipe" });
    const first = run("--email", "owner@example.com");
    expect(first.exitCode).toBe(0);
    const passwordFile = join(dataDir, "initial-owner-password");
    const password = readFileSync(passwordFile, "utf8");

    const second = run("--email", "second@example.com", "--org-name", "Other");
    expect(second.exitCode).not.toBe(0);
    expect(second.stderr.toString()).toContain("initial-owner-password already exists");
    expect(readFileSync(passwordFile, "utf8")).toBe(password);

    const tokenFile = join(dataDir, "token");
    writeFileSync(tokenFile, "svc_at_earlier\n");
    const third = run("--email", "third@example.com", "--password-stdin", "--token-out", tokenFile);
    expect(third.exitCode).not.toBe(0);
    expect(readFileSync(tokenFile, "utf8")).toBe("svc_at_earlier\n");

    const same = Bun.spawnSync([...svcCommand(), "controlplane", "bootstrap-admin", "--email", "OWNER@example.com", "--password-stdin"], {
      env,
      stdin: Buffer.from("another long password\n"),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(same.exitCode).not.toBe(0);
    expect(same.stderr.toString()).toContain("already exists");
  } finally {
    cleanup(dataDir);
  }
}, 120_000);
