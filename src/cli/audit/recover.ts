// `svc audit recover request|approve|fetch|list|policy` (issue 15, escrow recovery / break-glass).
// An owner requests the decryption of one record with a reason; another person approves (an
// owner or admin the requester never granted a membership or role, a member long enough when
// the request was made, signed in within 5 minutes: issue 27); the requester fetches the
// plaintext once. `policy` shows or sets the approvers' minimum membership age. The --out file is created (0600, never
// over an existing file) before the fetch: the control plane hands the plaintext out only
// once, so there must be somewhere to put it before it is asked for.
import type { RecoveryPolicy, RecoveryRequest } from "../../contract/admin-api.ts";
export type { RecoveryRequest } from "../../contract/admin-api.ts";
type Who = RecoveryRequest["requested_by"];
import { closeSync, fchmodSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { connect, seg } from "../shared/client.ts";
import { expandHome, readCliEnv } from "../shared/config.ts";
import { jsonFlag, note, out, printJson, printList, shortTime, writeAll } from "../shared/output.ts";

const who = (w: Who | null) => (w ? (w.email ?? w.account_id) : "");

const request = command({
  meta: { name: "request", description: "Ask to decrypt one audit record with the escrow key (owners only); another owner or admin must approve" },
  args: {
    record: { type: "positional", required: true, description: "audit record id (rec_…)", valueHint: "record_id" },
    reason: { type: "string", required: true, description: "why the record must be read; kept in the audit trail", valueHint: "text" },
    ...jsonFlag,
  },
  examples: ['svc audit recover request rec_01J... --reason "incident 4711: customer lost its audit identity"'],
  async run({ args }) {
    if (!args.reason.trim()) throw new UsageError("--reason must say why the record must be read");
    const client = await connect("svc audit recover request");
    const r = await client.json<RecoveryRequest>("POST", client.org("/audit-recovery-requests"), { body: { record_id: args.record, reason: args.reason } });
    if (args.json) return printJson(r);
    out(`Requested escrow recovery ${r.id} of record ${r.record_id}.`);
    note(
      `Another person must approve it (an owner or admin whose membership you never granted): svc audit recover approve ${r.id}\nThen fetch the plaintext, once: svc audit recover fetch ${r.id} --out <file>`,
    );
  },
});

const approve = command({
  meta: { name: "approve", description: "Approve another person's recovery request; needs a sign-in within 5 minutes (`svc login` first)" },
  args: { id: { type: "positional", required: true, description: "request id (rrq_…)", valueHint: "request_id" }, ...jsonFlag },
  examples: ["svc audit recover approve rrq_01J..."],
  async run({ args }) {
    const client = await connect("svc audit recover approve");
    const r = await client.json<RecoveryRequest>("POST", client.org(`/audit-recovery-requests/${seg(args.id)}/approve`));
    if (args.json) return printJson(r);
    out(`Approved ${r.id}: ${who(r.requested_by)} may now fetch the plaintext of ${r.record_id}, once.`);
  },
});

/** Creates `path` (0600, never over an existing file) and returns its descriptor. */
function createOutFile(label: string, path: string): number {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const fd = openSync(path, "wx", 0o600);
    fchmodSync(fd, 0o600);
    return fd;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new CommandFailure(`${label}: ${path} already exists; pass a new file for --out (nothing was fetched)`);
    throw new CommandFailure(`${label}: cannot create ${path} (${code ?? (e as Error).message}); pass a file in a directory you can write (nothing was fetched)`);
  }
}

const fetchCmd = command({
  meta: { name: "fetch", description: "Fetch the decrypted arguments of your approved request, once" },
  args: {
    id: { type: "positional", required: true, description: "request id (rrq_…)", valueHint: "request_id" },
    out: { type: "string", description: "write the plaintext to this new file (mode 0600); this or --stdout is required", valueHint: "file" },
    stdout: { type: "boolean", description: "write the plaintext to stdout instead of --out" },
  },
  examples: ["svc audit recover fetch rrq_01J... --out rec.json", "svc audit recover fetch rrq_01J... --stdout | jq ."],
  async run({ args }) {
    if (!args.out && !args.stdout) throw new UsageError("say where the plaintext goes: --out <file> or --stdout (it is handed out only once)");
    if (args.out && args.stdout) throw new UsageError("pass either --out or --stdout, not both");
    const label = "svc audit recover fetch";
    const path = args.out === undefined ? undefined : expandHome(args.out, readCliEnv().home);
    const client = await connect(label);
    const fd = path ? createOutFile(label, path) : null;
    let plaintext: Uint8Array;
    try {
      plaintext = await client.bytes(client.org(`/audit-recovery-requests/${seg(args.id)}/fetch`), {}, "POST");
    } catch (e) {
      if (fd !== null) {
        closeSync(fd);
        rmSync(path!, { force: true });
      }
      throw e;
    }
    if (fd === null) return writeAll(1, plaintext);
    try {
      let off = 0;
      while (off < plaintext.length) off += writeSync(fd, plaintext, off);
    } finally {
      closeSync(fd);
    }
    note(`Wrote the decrypted arguments to ${path} (mode 0600). The control plane hands them out only once.`);
  },
});

const list = command({
  meta: { name: "list", description: "List escrow recovery requests, newest first" },
  args: { status: { type: "string", description: "pending, approved or consumed", valueHint: "status" }, ...jsonFlag },
  examples: ["svc audit recover list", "svc audit recover list --status pending"],
  async run({ args }) {
    if (args.status !== undefined && !["pending", "approved", "consumed"].includes(args.status)) throw new UsageError(`--status must be pending, approved or consumed, not "${args.status}"`);
    const client = await connect("svc audit recover list");
    const q = args.status ? `?status=${encodeURIComponent(args.status)}` : "";
    const { requests } = await client.json<{ requests: RecoveryRequest[] }>("GET", client.org(`/audit-recovery-requests${q}`));
    printList(
      requests,
      [
        { header: "ID", value: (r) => r.id },
        { header: "RECORD", value: (r) => r.record_id },
        { header: "STATUS", value: (r) => r.status },
        { header: "REQUESTED BY", value: (r) => who(r.requested_by) },
        { header: "APPROVED BY", value: (r) => who(r.approved_by) },
        { header: "CREATED", value: (r) => shortTime(r.created_at) },
        { header: "REASON", value: (r) => r.reason },
      ],
      { json: !!args.json, empty: "No recovery requests.", jsonValue: { requests } },
    );
  },
});

const policy = command({
  meta: { name: "policy", description: "Show or set how long an approver must have been a member when a request is made (owners set it)" },
  args: {
    "approver-min-age-hours": { type: "string", description: "set it: whole hours from 0 to 8760; a lowering holds only for requests made once the current age has passed", valueHint: "hours" },
    ...jsonFlag,
  },
  examples: ["svc audit recover policy", "svc audit recover policy --approver-min-age-hours 72"],
  async run({ args }) {
    const raw = args["approver-min-age-hours"];
    if (raw !== undefined && !/^\d{1,4}$/.test(raw)) throw new UsageError(`--approver-min-age-hours must be a whole number of hours from 0 to 8760, not "${raw}"`);
    const client = await connect("svc audit recover policy");
    const p = await client.json<RecoveryPolicy>(raw === undefined ? "GET" : "PUT", client.org("/audit-recovery-policy"), raw === undefined ? {} : { body: { approver_min_age_hours: Number(raw) } });
    if (args.json) return printJson(p);
    out(`Approvers must have been members for at least ${p.effective_min_age_hours} hours when a request is made, and signed in within the last ${p.fresh_sign_in_minutes} minutes.`);
    if (p.lowering_effective_at) note(`Set to ${p.approver_min_age_hours} hours: that holds for requests made from ${p.lowering_effective_at}.`);
    if (p.changed_by) note(`Last changed by ${who(p.changed_by)} at ${p.changed_at}.`);
  },
});

export const recoverCommand = command({
  meta: { name: "recover", description: "Escrow recovery (break-glass): decrypt one record with the service-held escrow key, with a second approver" },
  examples: ['svc audit recover request rec_01J... --reason "incident 4711"', "svc audit recover approve rrq_01J...", "svc audit recover fetch rrq_01J... --out rec.json"],
  subCommands: { request, approve, fetch: fetchCmd, list, policy },
});
