// `svc audit verify [--file export.jsonl] [--checkpoints file] [--public-key k]` (issue 15,
// issue 27). verify trusts only a key pinned outside the control plane's store
// (pins.ts): the checkpoints must be signed by it or by a key it handed over to
// (contract/verify/checkpoint-trust.ts), and then every record is checked against the latest
// trusted checkpoint as a stream, chain by chain (contract/verify/verifier.ts), from the live
// API (the export in chain order: one record per chain held) or from an export file. On the
// live path it also compares each record with what it saw there before (memory.ts).
// States and exit codes: verify-report.ts.
import { createReadStream, readFileSync } from "node:fs";
import { CommandFailure, command } from "../../command/index.ts";
import type { CheckpointList } from "../../contract/admin-api.ts";
import { keyFingerprint } from "../../contract/audit-chain.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { type Trust, trustCheckpoints } from "../../contract/verify/checkpoint-trust.ts";
import { AuditVerifier } from "../../contract/verify/verifier.ts";
import { AuditMemory } from "./memory.ts";
import { openExport } from "./records.ts";
import { pinKey, pinnedKey, pinnedKeyOfOrganization, saveCheckpoint, savedCheckpoint } from "./pins.ts";
import { type OrgClient, connect } from "../shared/client.ts";
import { expandHome, readCliEnv } from "../shared/config.ts";
import { jsonFlag, note, printJson } from "../shared/output.ts";
import { EXIT_CANNOT_VERIFY, EXIT_KEY_CHANGED, EXIT_TAMPERED, type FullReport, printReport } from "./verify-report.ts";

const LABEL = "svc audit verify";
const cannot = (why: string) => new CommandFailure(`${LABEL}: cannot verify: ${why} (cannot_verify)`, EXIT_CANNOT_VERIFY);

/** Feeds each line of a byte stream to `line`, decoding across chunk boundaries. */
export async function eachLine(chunks: AsyncIterable<Uint8Array | string>, line: (text: string, n: number) => void): Promise<number> {
  const decoder = new TextDecoder();
  let rest = "";
  let n = 0;
  for await (const chunk of chunks) {
    rest += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let i: number;
    let start = 0;
    while ((i = rest.indexOf("\n", start)) >= 0) {
      const text = rest.slice(start, i);
      start = i + 1;
      if (text.trim()) line(text, ++n);
    }
    rest = rest.slice(start);
  }
  rest += decoder.decode();
  if (rest.trim()) line(rest, ++n);
  return n;
}

async function* readerChunks(body: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

/** Where the checkpoints come from, and what they are checked against. */
type Source = { client: OrgClient | null; url: string | null; orgId: string | null; list: CheckpointList };

async function source(args: { file?: string; checkpoints?: string }, home: string): Promise<Source> {
  let client: OrgClient | null = null;
  if (!args.file || !args.checkpoints) {
    try {
      client = await connect(LABEL);
    } catch (e) {
      throw cannot((e as Error).message.replace(`${LABEL}: `, ""));
    }
  }
  if (args.checkpoints) {
    const path = expandHome(args.checkpoints, home);
    try {
      const list = JSON.parse(readFileSync(path, "utf8")) as CheckpointList;
      const first = list.checkpoints[0] ? (JSON.parse(list.checkpoints[0].body) as { organization_id?: string }) : null;
      return { client, url: client?.baseUrl ?? null, orgId: client?.orgId ?? first?.organization_id ?? null, list };
    } catch (e) {
      throw cannot(`the checkpoints in ${path} cannot be read (${(e as Error).message}); save them with \`svc audit checkpoints --json > ${args.checkpoints}\``);
    }
  }
  try {
    return { client, url: client!.baseUrl, orgId: client!.orgId, list: await client!.json<CheckpointList>("GET", client!.org("/audit-checkpoints")) };
  } catch (e) {
    throw cannot((e as Error).message.replace(`${LABEL}: `, ""));
  }
}

/** The key to trust: --public-key, the pinned one, or (asked on a terminal) the one named now. */
async function anchor(s: Source, given: string | undefined, home: string): Promise<{ key: string; pinnedNow: boolean }> {
  if (given) {
    if (!/^ed25519:[A-Za-z0-9+/]{43}=$/.test(given)) throw cannot(`--public-key ${given.slice(0, 60)} is not an ed25519 public key (ed25519:<base64>)`);
    return { key: given, pinnedNow: false };
  }
  const pinned = s.url && s.orgId ? pinnedKey(home, s.url, s.orgId) : s.orgId ? pinnedKeyOfOrganization(home, s.orgId) : null;
  if (pinned) return { key: pinned, pinnedNow: false };
  const named = s.list.public_key;
  const where = s.url ? `${s.url} (organization ${s.orgId})` : `organization ${s.orgId ?? "(unknown)"}`;
  const pinHint = named
    ? `compare its fingerprint ${keyFingerprint(named)} with the one \`svc controlplane bootstrap-admin\` printed, then run \`svc audit signing-key pin ${named}\`, or pass --public-key`
    : "pass --public-key";
  if (!process.stdin.isTTY || !process.stderr.isTTY || !named || !s.url || !s.orgId) throw cannot(`no signing key is pinned for ${where}, and this run cannot ask; ${pinHint}`);
  process.stderr.write(
    `No audit signing key is pinned for ${where}.\nThe control plane names ${named}\n  fingerprint ${keyFingerprint(named)}\nCompare it with the one bootstrap printed. Pin it and go on? [yes/no] `,
  );
  const answer = (await new Promise<string>((done) => process.stdin.once("data", (d) => done(String(d))))).trim().toLowerCase();
  process.stdin.pause();
  if (answer !== "yes" && answer !== "y") throw cannot("the key was not pinned");
  pinKey(home, s.url, s.orgId, named);
  return { key: named, pinnedNow: true };
}

function keyChanged(s: Source, t: NonNullable<Trust["keyChange"]>): CommandFailure {
  const where = s.url ? `${s.url} (organization ${s.orgId})` : `organization ${s.orgId}`;
  return new CommandFailure(
    `${LABEL}: the control plane names the signing key ${t.named} (${keyFingerprint(t.named)}), but the key pinned for ${where} is ${t.pinned} (${keyFingerprint(t.pinned)}) and no checkpoint signed by it hands over to the new one: the key may have been replaced in the database, or the control plane reinstalled; ask whoever runs it which key it should have, and only if the change is expected run \`svc audit signing-key pin ${t.named}\` (key_changed)`,
    EXIT_KEY_CHANGED,
  );
}

async function verifyRecords(s: Source, file: string | undefined, home: string, verifier: AuditVerifier): Promise<void> {
  const take = (text: string, n: number) => {
    let line: ExportLine;
    try {
      line = JSON.parse(text) as ExportLine;
    } catch {
      throw cannot(`line ${n} of ${file ?? "the export"} is not JSON; pass a file \`svc audit export\` (JSON lines) wrote`);
    }
    verifier.add(line);
  };
  if (file) {
    const path = expandHome(file, home);
    try {
      await eachLine(createReadStream(path), take);
    } catch (e) {
      if (e instanceof CommandFailure) throw e;
      throw cannot(`${path} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass a file \`svc audit export\` wrote`);
    }
    return;
  }
  let body: ReadableStream<Uint8Array>;
  try {
    body = await openExport(s.client!, { order: "chain" }, "jsonl");
  } catch (e) {
    throw cannot((e as Error).message.replace(`${LABEL}: `, ""));
  }
  try {
    await eachLine(readerChunks(body), take);
  } catch (e) {
    if (e instanceof CommandFailure) throw e;
    throw cannot(`the export was cut off (${(e as Error).message}); run it again`);
  }
}

const verify = command({
  meta: {
    name: "verify",
    description: "Check audit records against the signed checkpoints with a pinned key: exit 0 verified or not yet signed, 1 tampered (naming the record), 3 cannot verify, 4 key changed",
  },
  args: {
    file: { type: "string", description: "a `svc audit export` JSONL file (default: every record, read from the API)", valueHint: "export.jsonl" },
    checkpoints: { type: "string", description: "the checkpoints as `svc audit checkpoints --json` saved them (default: read from the API)", valueHint: "file" },
    "public-key": { type: "string", description: "trust this signing key (ed25519:…) instead of the pinned one; pinned when none is", valueHint: "key" },
    ...jsonFlag,
  },
  examples: [
    "svc audit verify",
    "svc audit export --order chain --out all.jsonl && svc audit checkpoints --json > checkpoints.json",
    "svc audit verify --file all.jsonl --checkpoints checkpoints.json --public-key ed25519:…",
  ],
  async run({ args }) {
    const home = readCliEnv().home;
    const s = await source(args, home);
    const { key } = await anchor(s, args["public-key"], home);
    const saved = s.url && s.orgId ? savedCheckpoint(home, s.url, s.orgId) : null;
    const trust = trustCheckpoints(s.list.checkpoints, { pinned: key, named: s.list.public_key, orgId: s.orgId, saved });
    if (trust.keyChange) throw keyChanged(s, trust.keyChange);
    // What this verifier saw of each record before (live API only: the export comes in chain order).
    const memory = s.url && s.orgId && !args.file ? AuditMemory.at(home, s.url, s.orgId) : null;
    const verifier = new AuditVerifier(trust.trusted, memory ? (chain, seq, hash) => memory.recall(chain, seq, hash) : undefined);
    try {
      await verifyRecords(s, args.file, home, verifier);
    } catch (e) {
      memory?.discard();
      throw e;
    }
    const r = verifier.finish();
    const problems = [...trust.problems, ...r.problems];
    const report: FullReport = {
      ...r,
      state: problems.length > 0 ? "tampered" : trust.trusted ? r.state : "unsigned",
      ok: problems.length === 0,
      problems_total: trust.problems.length + r.problems_total,
      problems,
      pinned_key: key,
      pinned_fingerprint: keyFingerprint(key),
      next_checkpoint_at: s.list.next_at ?? null,
      // told once: when the key the lineage ends with is not the one trusted before
      rotations: trust.key !== key ? trust.rotations : [],
    };
    if (args.json) printJson(report);
    else printReport(report);
    if (report.state === "tampered") {
      memory?.discard();
      throw new CommandFailure(`${LABEL}: ${problems[0]!.detail}; ${report.problems_total === 1 ? "it is the only problem" : `${report.problems_total} problems in all`} (tampered)`, EXIT_TAMPERED);
    }
    memory?.commit(new Date().toISOString());
    // Trusted now: remember the key (first use, or the one a rotation handed over to) and the checkpoint.
    if (s.url && s.orgId) {
      const current = pinnedKey(home, s.url, s.orgId);
      const trusted = trust.key ?? key;
      if (!current || (!args["public-key"] && trusted !== current)) {
        const file = pinKey(home, s.url, s.orgId, trusted);
        if (!current) note(`Pinned ${trusted} (${keyFingerprint(trusted)}) for ${s.url}, organization ${s.orgId}, in ${file}.`);
      }
      const cp = trust.trusted ? s.list.checkpoints[trust.trusted.number - 1] : undefined;
      if (cp && (!current || !args["public-key"])) saveCheckpoint(home, s.url, s.orgId, { number: cp.number, body: cp.body, signature: cp.signature, verified_at: new Date().toISOString() });
    }
  },
});

export const verifyCommands = { verify };
