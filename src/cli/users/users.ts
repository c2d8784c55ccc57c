// `svc users resolve|invite|remote-identities list` (spec §2 "Users, groups, identities"): which
// service user an email is, which front-end user ids are linked to it, and an invitation for a
// chat user without a console account (a one-time link to set a chat password, issue 19).
import { UsageError, command } from "../../command/index.ts";
import type { Invite, RemoteIdentity, User } from "../../contract/admin-api.ts";
import { connect, seg } from "../shared/client.ts";
import { jsonFlag, out, printJson, printList, renderFields, shortTime } from "../shared/output.ts";

const EMAIL_RE = /^[^@\s]+@[^@\s]+$/;

const resolve = command({
  meta: { name: "resolve", description: "Find the service user with an email" },
  args: { email: { type: "string", required: true, description: "the user's email", valueHint: "EMAIL" }, ...jsonFlag },
  examples: ["svc users resolve --email alice@example.com", "svc users resolve --email alice@example.com --json"],
  async run({ args }) {
    if (!EMAIL_RE.test(args.email)) throw new UsageError(`--email "${args.email}" is not an email address; pass the user's email, e.g. alice@example.com`);
    const client = await connect("svc users resolve");
    const { users } = await client.json<{ users: User[] }>("GET", client.org("/users"), { query: { email: args.email } });
    const wanted = args.email.toLowerCase();
    const user = (users ?? []).find((u) => u.email.toLowerCase() === wanted);
    if (!user) {
      throw client.fail(
        `no service user has the email ${args.email}; check the email, or create the user with directory sync (\`svc directory-sync run\`) or by having them open the claim link the front end shows`,
        "not_found",
      );
    }
    if (args.json) return printJson(user);
    out(
      renderFields([
        ["user", user.id],
        ["email", user.email],
        ["name", user.display_name],
        ["source", user.source],
        ["disabled", user.disabled ? "yes" : "no"],
        ["groups", (user.groups ?? []).map((g) => `group:${g}`).join(", ")],
      ]),
    );
  },
});

const invite = command({
  meta: { name: "invite", description: "A one-time link for a chat user without a console account to set a chat password (opens no console access)" },
  args: { email: { type: "positional", required: true, description: "the chat user's email", valueHint: "email" }, ...jsonFlag },
  examples: ["svc users invite bob@example.com", "svc users invite bob@example.com --json"],
  async run({ args }) {
    if (!EMAIL_RE.test(args.email)) throw new UsageError(`"${args.email}" is not an email address; pass the chat user's email, e.g. bob@example.com`);
    const client = await connect("svc users invite");
    const inv = await client.json<Invite>("POST", client.org("/invites"), { body: { email: args.email } });
    if (args.json) return printJson(inv);
    out(
      renderFields([
        ["user", `${inv.user_id}${inv.user_created ? " (created)" : ""}`],
        ["email", inv.email],
        ["link", inv.url],
        ["expires", inv.expires_at],
      ]),
    );
    out(
      `Send the link to ${inv.email} yourself (svc sends no email). It works once: they set a chat password, which gives no console access; ` +
        'on the claim link the assistant sends them in the chat they choose "Link with your chat password".',
    );
  },
});

const remoteList = command({
  meta: { name: "list", description: "List the front-end identities linked to a service user" },
  args: { user: { type: "positional", required: true, description: "user id (usr_…) or email", valueHint: "user" }, ...jsonFlag },
  examples: ["svc users remote-identities list usr_01J...", "svc users remote-identities list alice@example.com --json"],
  async run({ args }) {
    const client = await connect("svc users remote-identities list");
    const { remote_identities } = await client.json<{ remote_identities: RemoteIdentity[] }>("GET", client.org(`/users/${seg(args.user)}/remote-identities`));
    printList(
      remote_identities ?? [],
      [
        { header: "ID", value: (r) => r.id },
        { header: "PLATFORM", value: (r) => r.platform },
        { header: "REMOTE USER", value: (r) => r.remote_user_id },
        { header: "INSTALLATION", value: (r) => r.installation_id },
        { header: "LINKED", value: (r) => shortTime(r.linked_at) },
      ],
      {
        json: !!args.json,
        empty: `${args.user} has no linked front-end identity; the user links one by opening the claim link the front end shows.`,
        jsonValue: { remote_identities: remote_identities ?? [] },
      },
    );
  },
});

export const usersCommand = command({
  meta: { name: "users", description: "Service users and their linked front-end identities" },
  examples: ["svc users resolve --email alice@example.com", "svc users invite bob@example.com", "svc users remote-identities list usr_01J..."],
  subCommands: {
    resolve,
    invite,
    "remote-identities": command({
      meta: { name: "remote-identities", description: "Front-end identities linked to a user" },
      examples: ["svc users remote-identities list alice@example.com"],
      subCommands: { list: remoteList },
    }),
  },
});
