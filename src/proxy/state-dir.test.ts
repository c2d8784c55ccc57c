// The bootstrap answer in the state directory: sealed under the runtime token, so the front end
// (same UID, it can read the file) finds neither the digest key nor anything to test guesses with.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BootstrapResponse } from "../contract/runtime-api.ts";
import { BOOTSTRAP_FILE, loadBootstrap, saveBootstrap, tokenFingerprint } from "./state-dir.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const KEY = Buffer.from("k".repeat(32)).toString("base64");
const boot: BootstrapResponse = {
  installation: { id: "inst_1", name: "x", platform: "chatui" },
  organization_id: "org_1",
  workspace_id: "ws_1",
  agent_id: "agt_1",
  digest_key: { id: "dk_1", key: KEY },
  poll_interval_seconds: 60,
  heartbeat_interval_seconds: 60,
};
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), "svc-state-"));
  dirs.push(d);
  return d;
};

test("the saved answer holds no digest key material and reads back only with the same token", () => {
  const d = dir();
  saveBootstrap(d, "svc_rt_one", boot, new Date());
  const text = readFileSync(join(d, BOOTSTRAP_FILE), "utf8");
  expect(text).not.toContain(KEY);
  expect(text).not.toContain("dk_1");
  expect(loadBootstrap(d, "svc_rt_one")).toEqual(boot);
  expect(loadBootstrap(d, "svc_rt_two")).toBeNull();
});

test("a sealed answer that was altered is not used", () => {
  const d = dir();
  saveBootstrap(d, "svc_rt_one", boot, new Date());
  const stored = JSON.parse(readFileSync(join(d, BOOTSTRAP_FILE), "utf8")) as { sealed: string };
  const raw = Buffer.from(stored.sealed, "base64");
  raw[20]! ^= 1;
  writeFileSync(join(d, BOOTSTRAP_FILE), JSON.stringify({ ...stored, sealed: raw.toString("base64") }));
  expect(loadBootstrap(d, "svc_rt_one")).toBeNull();
});

test("a plain-text answer (the format before sealing, or one planted with the token's fingerprint) is not used", () => {
  const d = dir();
  writeFileSync(join(d, BOOTSTRAP_FILE), JSON.stringify({ token_fingerprint: tokenFingerprint("svc_rt_one"), saved_at: new Date().toISOString(), response: boot }));
  expect(loadBootstrap(d, "svc_rt_one")).toBeNull();
});
