// `svc tool-servers assertion-keys list|rotate` (issue 32): the organization's identity-assertion
// signing keys. list shows ids, status and how long a retired key stays in the JWKS, never key
// material; rotate makes a new current key (admin-trailed), the previous one published until
// what it signed has expired, or withdrawn at once with --withdraw-previous.
import { command } from "../../command/index.ts";
import { jwksPath } from "../../contract/identity-assertion.ts";
import { connect } from "../shared/client.ts";
import { type RotatingKey, rotatingKeyColumns } from "../shared/key-columns.ts";
import { jsonFlag, note, out, printJson, printList, shortTime } from "../shared/output.ts";

type KeyView = RotatingKey & { published_until: string | null };

const list = command({
  meta: { name: "list", description: "List the identity-assertion keys: id (the JWK kid), status, and until when a retired key is published" },
  args: { ...jsonFlag },
  examples: ["svc tool-servers assertion-keys list", "svc tool-servers assertion-keys list --json"],
  async run({ args }) {
    const client = await connect("svc tool-servers assertion-keys list");
    const { keys } = await client.json<{ keys: KeyView[] }>("GET", client.org("/assertion-keys"));
    printList(keys, [...rotatingKeyColumns<KeyView>(), { header: "PUBLISHED UNTIL", value: (k) => shortTime(k.published_until) }], {
      json: !!args.json,
      empty: "No identity-assertion keys: none is made until a tool server asks for assertions (--assertion-header).",
      jsonValue: { keys },
    });
    if (!args.json && keys.length) note(`Verifiers fetch the public keys from ${client.baseUrl}${jwksPath(client.orgId)}`);
  },
});

const rotate = command({
  meta: { name: "rotate", description: "Make a new current identity-assertion key; runtimes sign with it from their next bundle poll" },
  args: { "withdraw-previous": { type: "boolean", description: "take the previous key out of the JWKS at once (it may be exposed): what it signed is refused from then on" }, ...jsonFlag },
  examples: ["svc tool-servers assertion-keys rotate", "svc tool-servers assertion-keys rotate --withdraw-previous"],
  async run({ args }) {
    const client = await connect("svc tool-servers assertion-keys rotate");
    const r = await client.json<{ key: KeyView; retired: KeyView | null }>("POST", client.org("/assertion-keys"), { body: { withdraw_previous: !!args["withdraw-previous"] } });
    if (args.json) return printJson(r);
    out(`Rotated the identity-assertion key: ${r.key.id} is current${r.retired ? `, ${r.retired.id} is ${r.retired.status}` : ""}.`);
    if (r.retired?.status === "withdrawn")
      note("The previous key left the JWKS now: calls signed with it before the runtimes' next poll are refused by servers that fetch the JWKS again (within its max-age).");
    else if (r.retired) note(`The previous key stays in the JWKS until ${r.retired.published_until} so that assertions it signed verify until they expire.`);
  },
});

export const assertionKeysCommand = command({
  meta: { name: "assertion-keys", description: "The organization's identity-assertion signing keys (JWKS): list, rotate" },
  examples: ["svc tool-servers assertion-keys list", "svc tool-servers assertion-keys rotate"],
  subCommands: { list, rotate },
});
