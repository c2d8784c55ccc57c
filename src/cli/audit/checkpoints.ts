// `svc audit checkpoints [create]` and `svc audit signing-key show|pin|rotate`: the signed
// checkpoints `svc audit verify` checks records against, and the key that signs them, pinned
// outside the control plane's store (pins.ts).
import { UsageError, command } from "../../command/index.ts";
import type { Checkpoint, CheckpointList, SigningKey } from "../../contract/admin-api.ts";
import { keyFingerprint } from "../../contract/audit-chain.ts";
import { knownKeysPath, pinKey, pinnedKey } from "./pins.ts";
import { connect } from "../shared/client.ts";
import { readCliEnv } from "../shared/config.ts";
import { jsonFlag, note, out, printJson, renderTable, shortTime } from "../shared/output.ts";

const create = command({
  meta: { name: "create", description: "Sign the chain heads now as the next checkpoint (the control plane signs one each hour by itself)" },
  args: { ...jsonFlag },
  examples: ["svc audit checkpoints create", "svc audit checkpoints create && svc audit verify"],
  async run({ args }) {
    const client = await connect("svc audit checkpoints create");
    const c = await client.json<Checkpoint>("POST", client.org("/audit-checkpoints"));
    if (args.json) return printJson(c);
    const body = JSON.parse(c.body) as { heads: unknown[] };
    out(`Signed checkpoint #${c.number} (${c.at}) over ${body.heads.length} chains.`);
  },
});

async function listCheckpoints(args: { json?: boolean }) {
  const client = await connect("svc audit checkpoints");
  const c = await client.json<CheckpointList>("GET", client.org("/audit-checkpoints"));
  if (args.json) return printJson(c);
  if (c.public_key) out(`Signing key: ${c.public_key} (${keyFingerprint(c.public_key)})`);
  if (c.checkpoints.length === 0)
    return note(`No checkpoints yet: the control plane signs one ${c.next_at ? `at ${c.next_at}` : "each hour"} once records arrive; \`svc audit checkpoints create\` signs one now.`);
  out(
    renderTable(c.checkpoints, [
      { header: "NUMBER", value: (k) => k.number },
      { header: "TIME", value: (k) => shortTime(k.at) },
      { header: "CHAINS", value: (k) => (JSON.parse(k.body) as { heads: unknown[] }).heads.length },
      { header: "HANDS OVER TO", value: (k) => (JSON.parse(k.body) as { next_key?: string }).next_key ?? null },
      { header: "ID", value: (k) => k.id },
    ]),
  );
}

const list = command({
  meta: { name: "list", description: "List the signed audit checkpoints and the organization's signing key (also: svc audit checkpoints)" },
  args: { ...jsonFlag },
  examples: ["svc audit checkpoints list", "svc audit checkpoints list --json > checkpoints.json"],
  run: async ({ args }) => listCheckpoints(args),
});

export const checkpointsCommand = command({
  meta: { name: "checkpoints", description: "The signed audit checkpoints: list them (the default) or sign one now" },
  args: { ...jsonFlag },
  subCommands: { list, create },
  examples: ["svc audit checkpoints", "svc audit checkpoints --json > checkpoints.json", "svc audit checkpoints create"],
  run: async ({ args }) => listCheckpoints(args),
});

const show = command({
  meta: { name: "show", description: "The checkpoint-signing key the control plane names, its fingerprint, and the key pinned here" },
  args: { ...jsonFlag },
  examples: ["svc audit signing-key show"],
  async run({ args }) {
    const client = await connect("svc audit signing-key show");
    const k = await client.json<SigningKey>("GET", client.org("/audit-signing-key"));
    const pinned = pinnedKey(readCliEnv().home, client.baseUrl, client.orgId);
    if (args.json) return printJson({ ...k, pinned_key: pinned });
    out(`Signing key: ${k.public_key}`);
    out(`Fingerprint: ${k.fingerprint}`);
    out(
      `Pinned here: ${pinned === null ? "none (`svc audit signing-key pin` or the first `svc audit verify` pins it)" : pinned === k.public_key ? "this key" : `${pinned} (${keyFingerprint(pinned)}), another key: \`svc audit verify\` will say whether a rotation handed over to this one`}`,
    );
  },
});

const pin = command({
  meta: { name: "pin", description: "Pin the checkpoint-signing key `svc audit verify` trusts for this control plane and organization (default: the one it names now)" },
  args: { key: { type: "positional", required: false, description: "the key to pin (ed25519:…), as bootstrap printed it", valueHint: "key" } },
  examples: ["svc audit signing-key pin ed25519:…", "svc audit signing-key pin"],
  async run({ args }) {
    if (args.key !== undefined && !/^ed25519:[A-Za-z0-9+/]{43}=$/.test(args.key))
      throw new UsageError(`"${args.key.slice(0, 60)}" is not an ed25519 public key; write it as bootstrap printed it, ed25519:<base64>`);
    const client = await connect("svc audit signing-key pin");
    const named = (await client.json<SigningKey>("GET", client.org("/audit-signing-key"))).public_key;
    const key = args.key ?? named;
    const file = pinKey(readCliEnv().home, client.baseUrl, client.orgId, key);
    out(`Pinned ${key} (${keyFingerprint(key)}) for ${client.baseUrl}, organization ${client.orgId}, in ${file}.`);
    if (key !== named)
      note(`The control plane names another key, ${named} (${keyFingerprint(named)}): \`svc audit verify\` accepts it only if a checkpoint signed by the pinned key hands over to it.`);
  },
});

const rotate = command({
  meta: { name: "rotate", description: "Replace the checkpoint-signing key (owners): a checkpoint signed by the old key hands over to the new one, so pinned verifiers follow" },
  args: { ...jsonFlag },
  examples: ["svc audit signing-key rotate", "svc audit signing-key rotate && svc audit verify"],
  async run({ args }) {
    const client = await connect("svc audit signing-key rotate");
    const k = await client.json<SigningKey>("POST", client.org("/audit-signing-key/rotate"));
    if (args.json) return printJson(k);
    out(`New signing key: ${k.public_key}`);
    out(`Fingerprint: ${k.fingerprint}`);
    out(`Checkpoint #${k.handover_checkpoint}, signed by the old key, hands over to it; \`svc audit verify\` follows it and pins the new key (${knownKeysPath(readCliEnv().home)}).`);
  },
});

export const signingKeyCommand = command({
  meta: { name: "signing-key", description: "The audit checkpoint-signing key: show it, pin it, rotate it" },
  subCommands: { show, pin, rotate },
  examples: ["svc audit signing-key show", "svc audit signing-key pin ed25519:…", "svc audit signing-key rotate"],
});
