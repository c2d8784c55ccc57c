// Where the control plane keeps its KMS master key (issue 27): apart from the database by
// default, an existing installation's key beside the database still used (never lost), and a
// warning, with the move to make, whenever the key sits in the SQLite database's folder.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandFailure } from "../command/index.ts";
import { defaultMasterKeyFile, loadKms } from "./config.ts";
import { EmbeddedKms } from "./kms/index.ts";

const root = mkdtempSync(join(tmpdir(), "svc-kms-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function dirs() {
  const base = join(root, String(++n));
  const data = join(base, "data");
  mkdirSync(data, { recursive: true });
  return { data, env: { HOME: join(base, "home"), XDG_CONFIG_HOME: join(base, "config") } as NodeJS.ProcessEnv };
}

describe("the master key's file", () => {
  test("a first start makes it under the configuration folder, not beside the database; no warning", () => {
    const { data, env } = dirs();
    const k = loadKms(data, env);
    expect(k.created).toBe(join(env.XDG_CONFIG_HOME!, "svc-controlplane", "master.key"));
    expect(k.warnings).toEqual([]);
    expect(statSync(k.created!).mode & 0o777).toBe(0o600);
    expect(statSync(join(env.XDG_CONFIG_HOME!, "svc-controlplane")).mode & 0o777).toBe(0o700);
    expect(existsSync(join(data, "master.key"))).toBe(false);
    // the next start finds the same key
    expect(loadKms(data, env).kms.keyId).toBe(k.kms.keyId);
    expect(defaultMasterKeyFile({ HOME: "/home/x" })).toBe("/home/x/.config/svc-controlplane/master.key");
  });

  test("an installation whose key is beside the database keeps it, with a warning saying how to move it", () => {
    const { data, env } = dirs();
    const legacy = EmbeddedKms.generateKey();
    writeFileSync(join(data, "master.key"), `${legacy}\n`, { mode: 0o600 });
    const k = loadKms(data, env);
    expect(k.kms.keyId).toBe(EmbeddedKms.fromBase64(legacy).keyId);
    expect(k.created).toBeNull();
    expect(k.warnings).toHaveLength(1);
    expect(k.warnings[0]).toContain(`the master key ${join(data, "master.key")} is in the same folder as the database ${join(data, "controlplane.db")}`);
    expect(k.warnings[0]).toContain(`mv ${join(data, "master.key")} ${join(env.XDG_CONFIG_HOME!, "svc-controlplane", "master.key")}`);
    // nothing is made elsewhere meanwhile
    expect(existsSync(join(env.XDG_CONFIG_HOME!, "svc-controlplane", "master.key"))).toBe(false);
  });

  test("SVC_CP_MASTER_KEY_FILE in the database's folder is warned about; with PostgreSQL there is no such folder", () => {
    const { data, env } = dirs();
    const file = join(data, "key.b64");
    writeFileSync(file, EmbeddedKms.generateKey());
    expect(loadKms(data, { ...env, SVC_CP_MASTER_KEY_FILE: file }).warnings[0]).toContain("set SVC_CP_MASTER_KEY_FILE to it");
    expect(loadKms(data, { ...env, SVC_CP_MASTER_KEY_FILE: file, SVC_CP_DATABASE: "postgres://cp@db/svc" }).warnings).toEqual([]);
    expect(loadKms(data, { ...env, SVC_CP_MASTER_KEY: EmbeddedKms.generateKey() }).warnings).toEqual([]);
  });

  test("SVC_CP_MASTER_KEY_FILE naming no file is refused (exit 2), never replaced by a new key", () => {
    const { data, env } = dirs();
    try {
      loadKms(data, { ...env, SVC_CP_MASTER_KEY_FILE: join(data, "missing.key") });
      throw new Error("not refused");
    } catch (e) {
      expect(e).toBeInstanceOf(CommandFailure);
      expect((e as CommandFailure).exitCode).toBe(2);
    }
    expect(existsSync(join(data, "missing.key"))).toBe(false);
  });
});
