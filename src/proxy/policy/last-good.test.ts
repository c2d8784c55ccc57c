import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUNDLE_FILE, loadLastGood, saveLastGood } from "./last-good.ts";
import { loadBootstrap, loadOrCreateReplicaId, readSealed, saveBootstrap, tokenFingerprint, writeSealed } from "../state-dir.ts";
import { bundleTool, fakeBundle } from "../testing/bundle.ts";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "svc-lg-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const bundle = fakeBundle({ revision: 3, tools: [bundleTool("a")] });

describe("last good bundle", () => {
  const t1 = new Date("2026-01-01T00:00:01.000Z");
  const t2 = new Date("2026-01-01T00:20:00.000Z");

  test("round-trips with its etag and times; file is 0600; no temp file left", () => {
    const d = tmp();
    saveLastGood(d, "tok", { bundle, etag: '"r3"', fetchedAt: t1, confirmedAt: t2 });
    expect(loadLastGood(d, "tok", 1)).toEqual({ bundle, etag: '"r3"', fetchedAt: t1, confirmedAt: t2 });
    expect(statSync(join(d, BUNDLE_FILE)).mode & 0o777).toBe(0o600);
    expect(readdirSync(d)).toEqual([BUNDLE_FILE]);
  });
  test("another token, another version, or a corrupt file gives nothing", () => {
    const d = tmp();
    saveLastGood(d, "tok", { bundle, etag: null, fetchedAt: t1, confirmedAt: t1 });
    expect(loadLastGood(d, "other", 1)).toBeNull();
    expect(loadLastGood(d, "tok", 2)).toBeNull();
    writeFileSync(join(d, BUNDLE_FILE), "{not json");
    expect(loadLastGood(d, "tok", 1)).toBeNull();
    writeFileSync(join(d, BUNDLE_FILE), "null");
    expect(loadLastGood(d, "tok", 1)).toBeNull();
  });
  test("the older content (fetched_at only): its fetched_at stands for the last confirmation", () => {
    const d = tmp();
    saveLastGood(d, "tok", { bundle, etag: '"r3"', fetchedAt: t1, confirmedAt: t1 });
    const stored = readSealed(d, BUNDLE_FILE, "tok") as Record<string, unknown>;
    delete stored.confirmed_at;
    writeSealed(d, BUNDLE_FILE, "tok", stored);
    expect(loadLastGood(d, "tok", 1)).toEqual({ bundle, etag: '"r3"', fetchedAt: t1, confirmedAt: t1 });
  });
  test("missing or unreadable times still give the bundle, with no time", () => {
    const d = tmp();
    saveLastGood(d, "tok", { bundle, etag: null, fetchedAt: null, confirmedAt: null });
    expect(loadLastGood(d, "tok", 1)).toEqual({ bundle, etag: null, fetchedAt: null, confirmedAt: null });
    const stored = readSealed(d, BUNDLE_FILE, "tok") as Record<string, unknown>;
    writeSealed(d, BUNDLE_FILE, "tok", { ...stored, fetched_at: "x", confirmed_at: 7 });
    expect(loadLastGood(d, "tok", 1)).toEqual({ bundle, etag: null, fetchedAt: null, confirmedAt: null });
  });
  test("a bundle planted by another process of the same UID is not used (issue 27): unsealed, altered, or sealed as another file", () => {
    const d = tmp();
    const permissive = fakeBundle({ revision: 3, tools: [bundleTool("a")], policies: [{ id: "pol_x", name: "all", src: "*", dst: "*", effect: "permit" } as never] });
    // the format before sealing, with the right token fingerprint and the ETag the control plane would 304
    writeFileSync(join(d, BUNDLE_FILE), JSON.stringify({ token_fingerprint: tokenFingerprint("tok"), etag: '"r3"', fetched_at: t1.toISOString(), confirmed_at: t1.toISOString(), bundle: permissive }));
    expect(loadLastGood(d, "tok", 1)).toBeNull();
    // a sealed file with one bit changed
    saveLastGood(d, "tok", { bundle, etag: '"r3"', fetchedAt: t1, confirmedAt: t1 });
    const stored = JSON.parse(readFileSync(join(d, BUNDLE_FILE), "utf8"));
    const raw = Buffer.from(stored.sealed, "base64");
    raw[30]! ^= 1;
    writeFileSync(join(d, BUNDLE_FILE), JSON.stringify({ ...stored, sealed: raw.toString("base64") }));
    expect(loadLastGood(d, "tok", 1)).toBeNull();
    // another sealed file of the directory copied over it
    saveBootstrap(
      d,
      "tok",
      {
        installation: { id: "inst_1", name: "x", platform: "chatui" },
        organization_id: "org_1",
        workspace_id: "ws_1",
        agent_id: "agt_1",
        digest_key: { id: "dk_1", key: "AAAA" },
        poll_interval_seconds: 60,
        heartbeat_interval_seconds: 60,
      },
      t1,
    );
    writeFileSync(join(d, BUNDLE_FILE), readFileSync(join(d, "bootstrap.json")));
    expect(loadLastGood(d, "tok", 1)).toBeNull();
  });
});

describe("state dir", () => {
  test("replica id is generated once and kept", () => {
    const d = tmp();
    const id = loadOrCreateReplicaId(d);
    expect(id).toMatch(/^rep_[0-9A-Z]{26}$/);
    expect(loadOrCreateReplicaId(d)).toBe(id);
  });
  test("bootstrap answer is bound to the token", () => {
    const d = tmp();
    const resp = {
      installation: { id: "inst_1", name: "x", platform: "chatui" as const },
      organization_id: "org_1",
      workspace_id: "ws_1",
      agent_id: "agt_1",
      digest_key: { id: "dk_1", key: "AAAA" },
      poll_interval_seconds: 60,
      heartbeat_interval_seconds: 60,
    };
    saveBootstrap(d, "tok", resp, new Date());
    expect(loadBootstrap(d, "tok")).toEqual(resp);
    expect(loadBootstrap(d, "tok2")).toBeNull();
  });
});
