// `GET …/audit-records/export`: every record matching the filters, oldest id first, as JSON
// lines or CSV, streamed. The body is a pull stream: each pull reads the next page of
// EXPORT_PAGE rows after the last id sent (keyset on the (org, id) index), so a million
// records are never held in memory and a slow reader slows the reads down instead of
// buffering. A failure mid-way errors the stream: the chunked body never ends cleanly, so
// the client sees a transfer error, never a short file that looks whole.
// Each line carries `ciphertext_sha256` (the stored ciphertext's digest, never the ciphertext)
// and the hash-chain fields, which is what `svc audit verify` recomputes record hashes from.
import { createHash } from "node:crypto";
import { and, asc, gt } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";
import { type AuditFilters, type AuditRecordView, filterConditions, recordView, viewColumns } from "./query.ts";

export const EXPORT_PAGE = 1000;
export const EXPORT_FORMATS = ["jsonl", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export type ExportLine = AuditRecordView & { ciphertext_sha256: string | null };

/** The CSV columns, in order; nested and list fields flattened. */
export const CSV_COLUMNS: [string, (r: ExportLine) => string | number | boolean | null | undefined][] = [
  ["id", (r) => r.id],
  ["ts", (r) => r.ts],
  ["received_at", (r) => r.received_at],
  ["kind", (r) => r.kind],
  ["action", (r) => r.action],
  ["tool_name", (r) => r.tool_name],
  ["model", (r) => r.model],
  ["decision", (r) => r.decision],
  ["reason", (r) => r.reason],
  ["policy_id", (r) => r.policy_id],
  ["policy_revision", (r) => r.policy_revision],
  ["user_id", (r) => r.subject.user_id],
  ["email", (r) => r.subject.email],
  ["remote_user_id", (r) => r.subject.remote_user_id],
  ["via_installation", (r) => r.subject.via_installation],
  ["organization_id", (r) => r.organization_id],
  ["workspace_id", (r) => r.workspace_id],
  ["installation_id", (r) => r.installation_id],
  ["agent_id", (r) => r.agent_id],
  ["replica_id", (r) => r.replica_id],
  ["ref", (r) => r.ref],
  ["outcome", (r) => r.outcome],
  ["exit_code", (r) => r.exit_code],
  ["prompt_tokens", (r) => r.prompt_tokens],
  ["completion_tokens", (r) => r.completion_tokens],
  ["cost", (r) => r.cost],
  ["duration_ms", (r) => r.duration_ms],
  ["args_digest", (r) => r.args_digest],
  ["digest_key_id", (r) => r.digest_key_id],
  ["recipient_key_ids", (r) => (r.encryption.mode === "recipients" ? r.encryption.key_ids.join(" ") : "")],
  ["ciphertext_sha256", (r) => r.ciphertext_sha256],
  // Columns added later go last, so a consumer reading columns by position keeps working.
  ["tool_server", (r) => r.tool_server],
  ["task", (r) => r.task],
  // Admin events (issue 27): who acted, on what, and the whole event (actor, before/after, result) as JSON.
  ["actor_id", (r) => r.actor_id],
  ["target", (r) => r.target],
  ["admin", (r) => (r.admin ? JSON.stringify(r.admin) : null)],
];

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break. Text that a
 * spreadsheet would run as a formula (=, +, -, @ first) is prefixed with ' (OWASP CSV
 * injection); numbers and booleans are written as they are. Pure.
 */
export function csvCell(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "";
  if (typeof v !== "string") return String(v);
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvHeader(): string {
  return `${CSV_COLUMNS.map(([name]) => name).join(",")}\r\n`;
}

export function csvLine(r: ExportLine): string {
  return `${CSV_COLUMNS.map(([, value]) => csvCell(value(r))).join(",")}\r\n`;
}

/**
 * The export as a byte stream, one page read per pull. The filters are checked first: a bad one
 * is a 4xx before any byte is sent (inside the stream it cut the connection after a 200).
 */
export async function exportStream(db: Db, orgId: string, filters: Omit<AuditFilters, "cursor" | "limit">, format: ExportFormat, now: number): Promise<ReadableStream<Uint8Array>> {
  const a = tables(db).auditRecords;
  const encoder = new TextEncoder();
  let after: string | null = null;
  let started = false;
  const base = await filterConditions(db, orgId, filters, now);
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let text = "";
        if (!started) {
          started = true;
          if (format === "csv") text += csvHeader();
        }
        if (base === null) {
          if (text) controller.enqueue(encoder.encode(text));
          controller.close();
          return;
        }
        const rows = await db
          .select({ ...viewColumns(a), ciphertext: a.ciphertext })
          .from(a)
          .where(and(...base, ...(after ? [gt(a.id, after)] : [])))
          .orderBy(asc(a.id))
          .limit(EXPORT_PAGE);
        const emails = await emailsOfUsers(db, orgId, rows.flatMap((r) => (r.userId ? [r.userId] : [])));
        for (const { ciphertext, ...row } of rows) {
          const line: ExportLine = {
            ...recordView(row, row.userId ? (emails.get(row.userId) ?? null) : null),
            ciphertext_sha256: ciphertext && ciphertext.length > 0 ? createHash("sha256").update(ciphertext).digest("hex") : null,
          };
          text += format === "csv" ? csvLine(line) : `${JSON.stringify(line)}\n`;
        }
        if (text) controller.enqueue(encoder.encode(text));
        if (rows.length < EXPORT_PAGE) controller.close();
        else after = rows[rows.length - 1]!.id;
      },
    },
    { highWaterMark: 0 },
  );
}
