// `svc audit list|show|export` (issue 15): the audit trail from the command line. list pages
// through a search newest first with an opaque cursor; export streams every matching record
// oldest first to a file or stdout, writing each chunk as it arrives (a million records are
// never held in memory on either side).
import type { AuditRecordPage, AuditRecordView } from "../../contract/admin-api.ts";
import { closeSync, openSync } from "node:fs";
import { CommandFailure, UsageError, command } from "../../command/index.ts";
import { actionFilterProblem } from "../../contract/admin-event.ts";
import { ADMIN_COLUMNS, adminFields } from "./admin.ts";
import { type OrgClient, connect, seg } from "../shared/client.ts";
import { expandHome, readCliEnv } from "../shared/config.ts";
import { jsonFlag, limitFlags, note, out, printJson, readLimit, renderFields, renderTable, shortTime, writeAll } from "../shared/output.ts";

export type { AuditRecordView } from "../../contract/admin-api.ts";

const DECISIONS = ["permit", "deny", "ask"];
const KINDS = ["tool", "model", "outcome", "admin", "runtime"];

/** The filters list and export share, as flags. */
const filterFlags = {
  tool: { type: "string", description: "tool name prefix (crm.) or glob (crm.*.read)", valueHint: "pattern" },
  decision: { type: "string", description: "permit, deny or ask", valueHint: "decision" },
  user: { type: "string", description: "user email or id (usr_…)", valueHint: "user" },
  installation: { type: "string", description: "installation id (inst_…)", valueHint: "id" },
  kind: { type: "string", description: "tool, model, outcome, admin (the admin trail: every change to the admin plane, and refusals) or runtime (all but admin)", valueHint: "kind" },
  actor: { type: "string", description: "admin events of this actor: email, account id (acc_…), system:<component> or anonymous", valueHint: "who" },
  action: { type: "string", description: "admin events of this action (policy.update) or prefix (policy.*); docs/audit.md lists them", valueHint: "action" },
  result: { type: "string", description: "admin events carried out (ok) or refused", valueHint: "ok|refused" },
  background: { type: "string", description: "Open WebUI's background tasks (titles, tags, follow-ups): hide or only", valueHint: "hide|only" },
  "args-digest": { type: "string", description: "calls with the same arguments: this hmac-sha256:… digest (a record's args_digest)", valueHint: "digest" },
  "digest-key": { type: "string", description: "records digested with this digest key (dk_…); a digest groups calls only within its key", valueHint: "id" },
  since: { type: "string", description: "from: 7d, 24h, 30m ago or an ISO 8601 time (inclusive)", valueHint: "when" },
  until: { type: "string", description: "to: 7d, 24h, 30m ago or an ISO 8601 time (exclusive)", valueHint: "when" },
} as const;

type FilterArgs = { [K in keyof typeof filterFlags]?: string | undefined };

/** The API query of the filter flags, checked here so a typo is a usage error (exit 2). */
export function filterQuery(args: FilterArgs): Record<string, string | undefined> {
  if (args.decision !== undefined && !DECISIONS.includes(args.decision)) throw new UsageError(`--decision must be one of ${DECISIONS.join(", ")}, not "${args.decision}"`);
  if (args.kind !== undefined && !KINDS.includes(args.kind)) throw new UsageError(`--kind must be one of ${KINDS.join(", ")}, not "${args.kind}"`);
  if (args.background !== undefined && !["hide", "only"].includes(args.background)) throw new UsageError(`--background must be hide or only, not "${args.background}"`);
  if (args.result !== undefined && !["ok", "refused"].includes(args.result)) throw new UsageError(`--result must be ok or refused, not "${args.result}"`);
  const actionProblem = args.action === undefined ? null : actionFilterProblem(args.action);
  if (actionProblem) throw new UsageError(`--action: ${actionProblem}`);
  const digest = args["args-digest"];
  if (digest !== undefined && !/^hmac-sha256:[0-9a-f]{64}$/.test(digest)) throw new UsageError(`--args-digest must be a record's args_digest (hmac-sha256: and 64 hex digits), not "${digest}"`);
  return {
    tool: args.tool,
    decision: args.decision,
    user: args.user,
    installation: args.installation,
    kind: args.kind,
    actor: args.actor,
    action: args.action,
    result: args.result,
    background: args.background,
    since: args.since,
    until: args.until,
    args_digest: digest,
    digest_key_id: args["digest-key"],
  };
}

/** Whether the query asks for admin events only: they are listed with their own columns. */
function adminOnly(q: Record<string, string | undefined>): boolean {
  return q.kind === "admin" || q.actor !== undefined || q.action !== undefined || q.result !== undefined;
}

const who = (r: AuditRecordView) => r.subject.email ?? r.subject.user_id ?? (r.subject.via_installation ? "(installation)" : r.subject.remote_user_id);
const what = (r: AuditRecordView) => r.tool_name ?? r.model ?? r.action;

/** Records per request: the API's largest page. */
const PAGE_SIZE = 500;
const DEFAULT_LIMIT = 50;

const list = command({
  meta: { name: "list", description: "Search audit records, newest first" },
  args: {
    ...filterFlags,
    ...limitFlags(DEFAULT_LIMIT),
    cursor: { type: "string", description: "continue where a list that printed this cursor stopped", valueHint: "cursor" },
    ...jsonFlag,
  },
  examples: [
    "svc audit list --decision deny --since 24h",
    "svc audit list --tool 'crm.*' --user ada@example.com --limit 1000",
    "svc audit list --kind tool --since 7d --all --json | jq -r '.records[].id'",
    "svc audit list --kind admin --actor ada@example.com --action 'policy.*' --since 7d",
    "svc audit list --kind admin --result refused",
  ],
  async run({ args }) {
    const limit = readLimit(args, DEFAULT_LIMIT);
    const query = filterQuery(args);
    const client = await connect("svc audit list");
    const { items, next_cursor } = await client.collect<AuditRecordView>(client.org("/audit-records"), "records", { query, limit, pageSize: PAGE_SIZE, cursor: args.cursor ?? null });
    const page: AuditRecordPage = { records: items, next_cursor };
    if (args.json) return printJson(page);
    if (page.records.length === 0) return note("No audit records match.");
    if (adminOnly(query)) {
      out(renderTable(page.records, ADMIN_COLUMNS));
      if (page.next_cursor) note(`More records: run it again with --cursor ${page.next_cursor}, or with a larger --limit (--all for every one)`);
      return;
    }
    out(
      renderTable(page.records, [
        { header: "ID", value: (r) => r.id },
        { header: "TIME", value: (r) => shortTime(r.ts) },
        { header: "KIND", value: (r) => (r.task ? `${r.kind} (${r.task})` : r.kind) },
        { header: "TOOL/MODEL", value: what },
        { header: "DECISION", value: (r) => r.decision },
        { header: "REASON", value: (r) => r.reason },
        { header: "USER", value: who },
        { header: "INSTALLATION", value: (r) => r.installation_id },
      ]),
    );
    if (page.next_cursor) note(`More records: run it again with --cursor ${page.next_cursor}, or with a larger --limit (--all for every one)`);
  },
});

const show = command({
  meta: { name: "show", description: "Show one audit record (never its ciphertext)" },
  args: { id: { type: "positional", required: true, description: "audit record id (rec_…)", valueHint: "record_id" }, ...jsonFlag },
  examples: ["svc audit show rec_01J...", "svc audit show rec_01J... --json"],
  async run({ args }) {
    const client = await connect("svc audit show");
    const r = await client.json<AuditRecordView>("GET", client.org(`/audit-records/${seg(args.id)}`));
    if (args.json) return printJson(r);
    if (r.admin) {
      const { fields, change } = adminFields(r);
      out(renderFields(fields));
      if (change.length > 0) out(`change:\n${change.join("\n")}`);
      return;
    }
    out(
      renderFields([
        ["id", r.id],
        ["time", r.ts],
        ["received", r.received_at],
        ["kind", r.kind],
        ["background task", r.task ?? null],
        ["action", r.action],
        ["tool", r.tool_name],
        ...(r.tool_server ? ([["MCP server", r.tool_server]] as const) : []),
        ["model", r.model],
        ["decision", r.decision],
        ["reason", r.reason],
        ["policy", r.policy_id ? `${r.policy_id} (revision ${r.policy_revision})` : `revision ${r.policy_revision}`],
        ["user", who(r)],
        ["user id", r.subject.user_id],
        ["front-end user", r.subject.remote_user_id],
        ["installation", r.installation_id],
        ["agent", r.agent_id],
        ["replica", r.replica_id],
        ["outcome of", r.ref],
        ["outcome", r.outcome ? `${r.outcome}${r.exit_code !== null ? ` (exit ${r.exit_code})` : ""}` : null],
        // Issue 32: who the upstream was told the caller is (never the token).
        ...(r.upstream_identity
          ? ([["upstream identity", `${r.upstream_identity.kind} ${r.upstream_identity.subject}${r.upstream_identity.jti ? ` (jti ${r.upstream_identity.jti})` : ""}`]] as const)
          : []),
        ["arguments", r.encryption.mode === "recipients" ? `encrypted to ${r.encryption.key_ids.join(", ")}` : `digest only (${r.args_digest ?? "none"})`],
        ["digest key", r.digest_key_id],
        ...(typeof r.chain_seq === "number" ? ([["chain", `${r.chain_id} #${r.chain_seq}`]] as const) : []),
      ]),
    );
  },
});

/** Writes a byte stream to a file descriptor as it arrives; returns the bytes and lines written. */
export async function pipeTo(body: ReadableStream<Uint8Array>, fd: number): Promise<{ bytes: number; lines: number }> {
  let bytes = 0;
  let lines = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value: chunk } = await reader.read();
    if (done) break;
    writeAll(fd, chunk);
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) lines++;
  }
  return { bytes, lines };
}

/** The export's formats (the API's `format`): the records as JSON lines, CSV, OCSF events, ECS documents. */
const EXPORT_FORMATS = ["jsonl", "csv", "ocsf", "ecs"] as const;
type ExportFormat = (typeof EXPORT_FORMATS)[number];
const isExportFormat = (f: string): f is ExportFormat => (EXPORT_FORMATS as readonly string[]).includes(f);

/** Opens the export's stream; shared with `svc audit verify`, which reads the live API the same way. */
export async function openExport(client: OrgClient, query: Record<string, string | undefined>, format: ExportFormat): Promise<ReadableStream<Uint8Array>> {
  return client.stream(client.org("/audit-records/export"), { query: { ...query, format } }, format === "csv" ? "text/csv" : "application/x-ndjson");
}

const exportCmd = command({
  meta: { name: "export", description: "Stream every matching audit record, oldest first, as JSON lines, CSV, OCSF or ECS" },
  args: {
    ...filterFlags,
    format: { type: "string", description: "jsonl (default), csv, ocsf (OCSF 1.8.0 events) or ecs (ECS 9.4.0 documents), one per line", valueHint: "jsonl|csv|ocsf|ecs" },
    order: { type: "string", description: "id: oldest first (default); chain: chain by chain, what `svc audit verify --file` reads in constant memory", valueHint: "id|chain" },
    out: { type: "string", description: "write to this new file instead of stdout", valueHint: "file" },
  },
  examples: [
    "svc audit export --since 2026-05-01T00:00:00Z --until 2026-06-01T00:00:00Z --out may.jsonl",
    "svc audit export --since 7d --format csv --out week.csv",
    "svc audit export --decision deny | jq -c 'select(.tool_name != null)'",
    "svc audit export --order chain --out all.jsonl",
    "svc audit export --since 1d --format ocsf --out day.ocsf.jsonl",
  ],
  async run({ args }) {
    const format = args.format ?? "jsonl";
    if (!isExportFormat(format)) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(", ")}, not "${format}"`);
    if (args.order !== undefined && args.order !== "id" && args.order !== "chain") throw new UsageError(`--order must be id or chain, not "${args.order}"`);
    const query = { ...filterQuery(args), order: args.order };
    const client = await connect("svc audit export");
    const outFile = args.out === undefined ? undefined : expandHome(args.out, readCliEnv().home);
    let fd = 1;
    if (outFile) {
      try {
        fd = openSync(outFile, "wx", 0o600);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new CommandFailure(`svc audit export: cannot create ${outFile} (${code === "EEXIST" ? "it already exists" : (code ?? (e as Error).message)}); pass a new file for --out`);
      }
    }
    try {
      const body = await openExport(client, query, format);
      let written: { bytes: number; lines: number };
      try {
        written = await pipeTo(body, fd);
      } catch (e) {
        throw client.fail(
          `the export was cut off (${(e as Error).message})${outFile ? `; ${outFile} is incomplete, delete it and` : "; the output is incomplete,"} run it again`,
          "export_interrupted",
        );
      }
      const records = format === "csv" ? Math.max(0, written.lines - 1) : written.lines;
      if (outFile) note(`Exported ${records} records (${written.bytes} bytes) to ${outFile}.`);
    } finally {
      if (fd !== 1) closeSync(fd);
    }
  },
});

export const recordCommands = { list, show, export: exportCmd };
