// Where `svc audit verify` keeps what it trusts, outside the control plane's store, as ssh keeps
// known_hosts: the checkpoint-signing key pinned per control plane and organization
// (~/.config/svc/audit-known-keys, one `<url> <organization> <key>` line each), and the last
// checkpoint it verified per control plane and organization (~/.config/svc/audit-checkpoints/),
// so a checkpoint later removed or replaced in the store is noticed. Both mode 0600 in a 0700
// directory. The key is pinned on first use (or with `svc audit signing-key pin`), and replaced
// only when a checkpoint signed by the pinned key hands over to a new one (a rotation).
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CommandFailure } from "../../command/index.ts";
import type { SavedCheckpoint } from "../../contract/verify/checkpoint-trust.ts";
import { CONFIG_FILE_MODE, configDir, ensurePrivateDir } from "../shared/config.ts";

export function knownKeysPath(home: string): string {
  return join(configDir(home), "audit-known-keys");
}

/** A file name for a control plane and organization: the id as the server gave it is never a path. */
export function trustFileName(url: string, orgId: string): string {
  return `${orgId.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64)}-${Bun.SHA256.hash(`${url} ${orgId}`, "hex").slice(0, 16)}`;
}

function savedPath(home: string, url: string, orgId: string): string {
  return join(configDir(home), "audit-checkpoints", `${trustFileName(url, orgId)}.json`);
}

function writePrivate(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: CONFIG_FILE_MODE });
  chmodSync(tmp, CONFIG_FILE_MODE);
  renameSync(tmp, file);
}

type Pin = { url: string; orgId: string; key: string };

function readPins(home: string): Pin[] {
  const file = knownKeysPath(home);
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .flatMap((l) => {
      const [url, orgId, key] = l.split(/\s+/);
      return url && orgId && key ? [{ url, orgId, key }] : [];
    });
}

/** The key pinned for this control plane and organization, or null. */
export function pinnedKey(home: string, url: string, orgId: string): string | null {
  return readPins(home).find((p) => p.url === url && p.orgId === orgId)?.key ?? null;
}

/** With no control plane at hand (an export file checked offline): the one key pinned for the organization, if one. */
export function pinnedKeyOfOrganization(home: string, orgId: string): string | null {
  const keys = new Set(
    readPins(home)
      .filter((p) => p.orgId === orgId)
      .map((p) => p.key),
  );
  return keys.size === 1 ? [...keys][0]! : null;
}

/** Pins `key` for this control plane and organization (replacing the line there was). */
export function pinKey(home: string, url: string, orgId: string, key: string): string {
  // One line per pin, split on whitespace: what a server names must not add lines of its own.
  if (!/^[A-Za-z0-9_-]+$/.test(orgId) || !/^ed25519:[A-Za-z0-9+/]{43}=$/.test(key) || /\s/.test(url)) {
    throw new CommandFailure(`cannot pin ${key.slice(0, 60)} for organization ${orgId.slice(0, 40)}: not an ed25519 key and an organization id; check the control plane's URL`);
  }
  const file = knownKeysPath(home);
  ensurePrivateDir(configDir(home));
  const kept = readPins(home).filter((p) => !(p.url === url && p.orgId === orgId));
  const lines = [
    "# svc audit verify: checkpoint-signing keys pinned per control plane and organization (like ssh's known_hosts)",
    ...[...kept, { url, orgId, key }].map((p) => `${p.url} ${p.orgId} ${p.key}`),
  ];
  writePrivate(file, `${lines.join("\n")}\n`);
  return file;
}

export function savedCheckpoint(home: string, url: string, orgId: string): SavedCheckpoint | null {
  const file = savedPath(home, url, orgId);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as SavedCheckpoint;
  } catch {
    return null;
  }
}

export function saveCheckpoint(home: string, url: string, orgId: string, cp: SavedCheckpoint): void {
  ensurePrivateDir(configDir(home));
  ensurePrivateDir(join(configDir(home), "audit-checkpoints"));
  writePrivate(savedPath(home, url, orgId), `${JSON.stringify(cp)}\n`);
}
