// `svc audit digest-key list|show|rotate` (issue 27): the organization's audit digest keys, by
// id and time, never material. A rotation makes a new current key; the runtimes switch to it
// within about one bundle poll, and old records keep their key id (docs/digest-key.md).
import type { DigestKey, DigestKeyList, DigestKeyRotation } from "../../contract/admin-api.ts";
import { command } from "../../command/index.ts";
import { connect, seg } from "../shared/client.ts";
import { rotatingKeyColumns } from "../shared/key-columns.ts";
import { jsonFlag, note, out, printJson, printList, renderFields, shortTime } from "../shared/output.ts";

const list = command({
  meta: { name: "list", description: "List the audit digest keys, oldest first (ids and times, never material)" },
  args: { ...jsonFlag },
  examples: ["svc audit digest-key list", "svc audit digest-key list --json"],
  async run({ args }) {
    const client = await connect("svc audit digest-key list");
    const { keys } = await client.json<DigestKeyList>("GET", client.org("/audit-digest-keys"));
    printList(keys, rotatingKeyColumns(), { json: !!args.json, empty: "No digest keys.", jsonValue: { keys } });
  },
});

const show = command({
  meta: { name: "show", description: "Show one audit digest key (never its material)" },
  args: { id: { type: "positional", required: true, description: "digest key id (dk_…)", valueHint: "key_id" }, ...jsonFlag },
  examples: ["svc audit digest-key show dk_01J..."],
  async run({ args }) {
    const client = await connect("svc audit digest-key show");
    const k = await client.json<DigestKey>("GET", client.org(`/audit-digest-keys/${seg(args.id)}`));
    if (args.json) return printJson(k);
    out(
      renderFields([
        ["id", k.id],
        ["status", k.status],
        ["created", shortTime(k.created_at)],
        ["retired", shortTime(k.retired_at)],
      ]),
    );
  },
});

const rotate = command({
  meta: { name: "rotate", description: "Make a new current digest key; runtimes switch to it within about one bundle poll" },
  args: { ...jsonFlag },
  examples: ["svc audit digest-key rotate", "svc bot credential --installation inst_… --workspace default --rotate | <secret manager>; svc audit digest-key rotate"],
  async run({ args }) {
    const client = await connect("svc audit digest-key rotate");
    const r = await client.json<DigestKeyRotation>("POST", client.org("/audit-digest-keys"));
    if (args.json) return printJson(r);
    out(`Rotated the audit digest key: ${r.key.id} is current, ${r.retired.id} is retired.`);
    note(
      `Runtimes fetch the new key at their next bundle poll (about a minute). Records keep the key id they were made with: the same arguments get another digest under ${r.key.id}, so search calls with the same arguments by digest and key id (svc audit list --args-digest … --digest-key …). If a runtime token leaked, rotate it first (svc bot credential --rotate): its holder could fetch the new key too.`,
    );
  },
});

export const digestKeyCommand = command({
  meta: { name: "digest-key", description: "The audit digest keys (HMAC keys of digest-only records): list, show, rotate" },
  examples: ["svc audit digest-key list", "svc audit digest-key rotate"],
  subCommands: { list, show, rotate },
});
