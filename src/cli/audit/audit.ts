// `svc audit keys create|list|disable` and `svc audit decrypt` (spec §2 "Audit-encryption key",
// §4 "Audit decryption"). Key pairs are made and used on the admin's machine: the control plane
// receives only public keys and serves only ciphertext.
import { lstatSync, readFileSync, rmSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { dirname, resolve } from "node:path";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import type { AuditKey } from "../../contract/admin-api.ts";
import { recipientProblem } from "../../contract/age-recipient.ts";
import { decryptAgeFile, formatIdentityFile, generateAuditIdentity, isGroupOrWorldReadable, parseIdentityFile, writeNewPrivateFile } from "./identity.ts";
import { digestKeyCommand } from "./digest-key.ts";
import { recordCommands } from "./records.ts";
import { recoverCommand } from "./recover.ts";
import { retentionCommand } from "./retention.ts";
import { checkpointsCommand, signingKeyCommand } from "./checkpoints.ts";
import { verifyCommands } from "./verify.ts";
import { sinksCommand } from "./sinks.ts";
import { ApiError, connect, seg } from "../shared/client.ts";
import { defaultIdentityPath, ensurePrivateDir, expandHome, readCliEnv } from "../shared/config.ts";
import { jsonFlag, note, out, printJson, printList, shortTime, writeAll } from "../shared/output.ts";

function pathTaken(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw e;
  }
}

function defaultKeyName(): string {
  let user = "admin";
  try {
    user = userInfo().username || user;
  } catch {}
  return `${user}@${hostname()}`;
}

const keysCreate = command({
  meta: { name: "create", description: "Make an audit key pair locally (mode 0600) and upload only its public key" },
  args: {
    name: { type: "string", description: "label for the key (default: user@host)", valueHint: "name" },
    "identity-file": { type: "string", description: "where to write the private identity (default ~/.config/svc/audit-identity.txt); never overwritten", valueHint: "path" },
    ...jsonFlag,
  },
  examples: ["svc audit keys create", "svc audit keys create --name security-team --identity-file ~/keys/svc-audit.txt"],
  async run({ args }) {
    const env = readCliEnv();
    const isDefault = args["identity-file"] === undefined;
    const path = isDefault ? defaultIdentityPath(env.home) : resolve(expandHome(args["identity-file"]!, env.home));
    // lstat, not exists: a dangling symlink is also something never written through.
    if (pathTaken(path)) {
      throw new CommandFailure(`svc audit keys create: ${path} already exists and is never overwritten; pass --identity-file <new path>, or move the old identity away if no record needs it`);
    }
    const client = await connect("svc audit keys create");
    const pair = await generateAuditIdentity();
    const problem = recipientProblem(pair.recipient);
    if (problem) throw client.fail(`the key pair made here does not check out (${problem}); run it again, and report it if it repeats`, "invalid_recipient");
    let written: boolean;
    try {
      // The default lives beside the CLI's config: the directory is made (or tightened to) 0700.
      if (isDefault) ensurePrivateDir(dirname(path));
      written = writeNewPrivateFile(path, formatIdentityFile(pair, new Date()));
    } catch (e) {
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw client.fail(`cannot write the identity file ${path} (${why}), so nothing was uploaded; pass --identity-file <path> in a directory you can write`);
    }
    if (!written) throw client.fail(`${path} appeared while the key was being made and was left untouched; run it again with another --identity-file`);
    let key: AuditKey;
    try {
      key = await client.json<AuditKey>("POST", client.org("/audit-encryption-keys"), { body: { name: args.name ?? defaultKeyName(), public_key: pair.recipient } });
    } catch (e) {
      // Only a definite refusal (4xx) proves the key was not stored; after a timeout or a reset
      // the public key may be active, and deleting the identity would lose the only private key.
      if (e instanceof ApiError && e.status >= 400 && e.status < 500) {
        rmSync(path, { force: true });
        throw e;
      }
      // The upload may have been stored: keep the identity and say how to find out.
      const code = e instanceof ApiError ? e.code : undefined;
      const why =
        e instanceof ApiError
          ? e.message
              .replace(/^[^:]+: /, "")
              .replace(/ \([a-z0-9_]+\)$/, "")
              .split("; ")[0]
          : (e as Error).message;
      throw client.fail(
        `the upload of public key ${pair.recipient} did not complete (${why}), so the identity was kept in ${path}; check \`svc audit keys list\` for that public key before making another`,
        code,
      );
    }
    if (args.json) return printJson({ ...key, identity_file: path });
    out(`Created audit key ${key.id} (${key.name}), public key ${key.public_key}.`);
    note(`The private identity is in ${path} (mode 0600) and was not uploaded. Back it up: without it, records encrypted to ${key.id} cannot be read.`);
  },
});

const keysList = command({
  meta: { name: "list", description: "List the organization's audit-encryption keys" },
  args: { ...jsonFlag },
  examples: ["svc audit keys list", "svc audit keys list --json"],
  async run({ args }) {
    const client = await connect("svc audit keys list");
    const { keys } = await client.json<{ keys: AuditKey[] }>("GET", client.org("/audit-encryption-keys"));
    printList(
      keys ?? [],
      [
        { header: "ID", value: (k) => k.id },
        { header: "NAME", value: (k) => k.name },
        { header: "KIND", value: (k) => k.kind ?? "customer" },
        { header: "STATUS", value: (k) => k.status },
        { header: "PUBLIC KEY", value: (k) => k.public_key },
        { header: "CREATED", value: (k) => shortTime(k.created_at) },
        { header: "DISABLED", value: (k) => shortTime(k.disabled_at) },
        { header: "REASON", value: (k) => k.disabled_reason ?? "" },
      ],
      { json: !!args.json, empty: "No audit keys: records are digest-only. Create one with `svc audit keys create`.", jsonValue: { keys: keys ?? [] } },
    );
  },
});

const keysDisable = command({
  meta: { name: "disable", description: "Disable an audit key for good: new records are no longer encrypted to it" },
  args: { id: { type: "positional", required: true, description: "key id (key_…)", valueHint: "key_id" }, ...jsonFlag },
  examples: ["svc audit keys disable key_01J..."],
  async run({ args }) {
    const client = await connect("svc audit keys disable");
    const key = await client.json<AuditKey>("POST", client.org(`/audit-encryption-keys/${seg(args.id)}:disable`));
    if (args.json) return printJson(key);
    out(`Disabled audit key ${key.id} (${key.name}). It stays listed, receives no new records and cannot be re-enabled; past records are unchanged.`);
  },
});

const decrypt = command({
  meta: { name: "decrypt", description: "Decrypt an audit record's arguments locally with your identity file" },
  args: {
    record: { type: "string", required: true, description: "audit record id (rec_…)", valueHint: "id" },
    identity: { type: "string", required: true, description: "age identity file (from `svc audit keys create` or age-keygen)", valueHint: "path" },
    out: { type: "string", description: "write the plaintext to this new file (mode 0600); this or --stdout is required", valueHint: "file" },
    stdout: { type: "boolean", description: "write the plaintext to stdout instead of --out" },
  },
  examples: [
    "svc audit decrypt --record rec_01J... --identity ~/.config/svc/audit-identity.txt --out rec.json",
    "svc audit decrypt --record rec_01J... --identity ~/.config/svc/audit-identity.txt --stdout | jq .",
  ],
  async run({ args }) {
    if (!args.out && !args.stdout) throw new UsageError("say where the plaintext goes: --out <file> or --stdout");
    if (args.out && args.stdout) throw new UsageError("pass either --out or --stdout, not both");
    const label = "svc audit decrypt";
    const home = readCliEnv().home;
    const identity = expandHome(args.identity, home);
    const outFile = args.out === undefined ? undefined : expandHome(args.out, home);
    // Plaintext never replaces an existing file (the identity itself, say).
    if (outFile && pathTaken(outFile)) throw new CommandFailure(`${label}: ${outFile} already exists; pass a new file for --out`);
    let idText: string;
    try {
      idText = readFileSync(identity, "utf8");
    } catch (e) {
      throw new CommandFailure(`${label}: cannot read the identity file ${identity} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass the file \`svc audit keys create\` wrote`);
    }
    const parsed = parseIdentityFile(idText);
    if (!parsed.ok) throw new CommandFailure(`${label}: ${identity} is not an age identity file: ${parsed.error}; pass the file \`svc audit keys create\` (or age-keygen) wrote`);
    if (isGroupOrWorldReadable(identity)) note(`warning: ${identity} is readable by other users; run chmod 600 ${identity}`);
    const client = await connect(label);
    const ciphertext = await client.bytes(client.org(`/audit-records/${seg(args.record)}/ciphertext`));
    let plaintext: Uint8Array;
    try {
      plaintext = await decryptAgeFile(ciphertext, parsed.identities);
    } catch (e) {
      throw client.fail(
        `record ${args.record} cannot be decrypted with ${identity} (${(e as Error).message}); use the identity of one of the record's recipient key ids (see the record in the console)`,
        "decrypt_failed",
      );
    }
    if (args.stdout) {
      writeAll(1, plaintext);
      return;
    }
    if (!writeNewPrivateFile(outFile!, plaintext)) throw new CommandFailure(`${label}: ${outFile} appeared meanwhile and was left untouched; pass a new file for --out`);
    note(`Wrote the decrypted content of ${args.record} to ${outFile} (mode 0600).`);
  },
});

export const auditCommand = command({
  meta: { name: "audit", description: "Search, show and export audit records; audit-encryption keys and local decryption" },
  examples: [
    "svc audit list --decision deny --since 24h",
    "svc audit export --since 7d --out week.jsonl",
    "svc audit keys create --name security-team",
    "svc audit decrypt --record rec_01J... --identity ~/.config/svc/audit-identity.txt --out rec.json",
  ],
  subCommands: {
    keys: command({
      meta: { name: "keys", description: "Audit-encryption keys (customer-held age X25519)" },
      examples: ["svc audit keys create", "svc audit keys list", "svc audit keys disable key_01J..."],
      subCommands: { create: keysCreate, list: keysList, disable: keysDisable },
    }),
    "digest-key": digestKeyCommand,
    ...recordCommands,
    ...verifyCommands,
    checkpoints: checkpointsCommand,
    "signing-key": signingKeyCommand,
    sinks: sinksCommand,
    decrypt,
    recover: recoverCommand,
    retention: retentionCommand,
  },
});
